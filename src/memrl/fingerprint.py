"""The code a job executes, and its fingerprint.

A job's key (:attr:`memrl.jobs.JobSpec.key`) hashes its function, its arguments and the
fingerprint of the code that function runs, so a stored result is reused exactly while
rerunning it would compute the same thing. The fingerprint follows **symbols**, not files:
starting from the job function, it takes every top-level function, class and constant of a
``memrl`` module that the code it has taken so far names (through module-level imports,
function-level imports and ``module.attribute`` chains), plus the statements each module
it touches runs at import time (e.g. registering gymnasium ids). So

- editing an analysis module (claims, tables, report, site, plots, the loader's messages)
  moves no job key: no job names its code;
- editing one agent moves only the keys of the jobs that call it;
- comments, docstrings, type annotations and formatting move nothing: each symbol is
  hashed as its syntax tree (``ast.dump``) without them.

:func:`module_closure` gives the *files* a module may import (whole modules, transitively):
what DVC's stage dependencies list.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parent  # .../src/memrl
ROOT = SRC.parents[1]  # the checkout holding src/

Symbol = tuple[str, str]  # (module, top-level name); name "" = its import-time statements


def read_source(path: Path) -> str:
    """A module's source (a seam for the tests, which edit modules in memory)."""
    return path.read_text()


def module_file(name: str) -> Path | None:
    """The source file of ``memrl`` module ``name`` (None for other packages)."""
    parts = name.split(".")
    if parts[0] != "memrl":
        return None
    base = SRC.joinpath(*parts[1:])
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


# =========================================================================== one module
@dataclass
class _Module:
    name: str
    path: Path
    defs: dict[str, ast.stmt] = field(default_factory=dict)  # top-level name -> its statement
    bindings: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # alias -> target
    import_time: list[ast.stmt] = field(default_factory=list)  # statements run on import
    imports: set[str] = field(default_factory=set)  # memrl modules imported at module level

    @property
    def package(self) -> str:
        return self.name if self.path.name == "__init__.py" else self.name.rpartition(".")[0]


def _bind(node: ast.Import | ast.ImportFrom, package: str) -> dict[str, tuple[str, str | None]]:
    """What an import statement binds: alias -> (module, None) or (module, symbol)."""
    out: dict[str, tuple[str, str | None]] = {}
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.asname:
                out[a.asname] = (a.name, None)
            else:
                out[a.name.split(".")[0]] = (a.name.split(".")[0], None)
        return out
    mod = _absolute(node, package)
    for a in node.names:
        sub = f"{mod}.{a.name}"
        out[a.asname or a.name] = (sub, None) if module_file(sub) else (mod, a.name)
    return out


@cache
def _module(name: str) -> _Module | None:
    path = module_file(name)
    if path is None:
        return None
    m = _Module(name, path)
    for node in ast.parse(read_source(path)).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            m.defs[node.name] = node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            bound = _bind(node, m.package)
            m.bindings.update(bound)
            m.imports.update(t[0] for t in bound.values() if module_file(t[0]))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        m.defs[n.id] = node
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            m.import_time.append(node)  # e.g. `if ...: register()`, `try: import x ...`
    return m


class _Strip(ast.NodeTransformer):
    """Docstrings and annotations out: neither changes what the code computes."""

    def _body(self, node):
        body = getattr(node, "body", None)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
        return node

    def visit_FunctionDef(self, node):
        node.returns = None
        self.generic_visit(node)
        return self._body(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.generic_visit(node)
        return self._body(node)

    def visit_arg(self, node):
        node.annotation = None
        return node

    def visit_AnnAssign(self, node):
        self.generic_visit(node)
        if node.value is None:  # a bare annotation (a dataclass field) is a declaration
            return node
        node.annotation = ast.Constant(None)
        return node


def _dump(node: ast.AST) -> str:
    return ast.dump(_Strip().visit(copy.deepcopy(node)))


# =========================================================================== the closure
def _references(node: ast.AST, m: _Module) -> set[Symbol]:
    """The symbols that ``node``'s code names: through the module's imports and its own
    (function-level) ones; ``module.attr`` takes the symbol ``attr``, a module used bare
    takes the whole module (``(module, "*")``)."""
    out: set[Symbol] = set()
    bindings = dict(m.bindings)
    for n in ast.walk(node):  # function-level imports bind names too (and run the module)
        if isinstance(n, ast.Import | ast.ImportFrom):
            if isinstance(n, ast.ImportFrom) and n.module == "__future__":
                continue
            bound = _bind(n, m.package)
            bindings.update(bound)
            for mod, sym in bound.values():
                if module_file(mod):
                    out.add((mod, sym if sym is not None else ""))
    seen: set[int] = set()  # Name nodes already resolved as the base of an attribute chain
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and id(n) not in seen:
            chain, base = [], n
            while isinstance(base, ast.Attribute):
                seen.add(id(base))
                chain.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in bindings:
                mod, sym = bindings[base.id]
                if sym is None and module_file(mod):
                    seen.add(id(base))
                    out.add(_resolve(mod, list(reversed(chain))))
        elif isinstance(n, ast.Name) and id(n) not in seen:
            if n.id in m.defs:
                out.add((m.name, n.id))
            elif n.id in bindings:
                mod, sym = bindings[n.id]
                if module_file(mod):
                    out.add((mod, sym or "*"))
    return out


def _resolve(module: str, attrs: list[str]) -> Symbol:
    """``module.a.b...``: the deepest module the chain names, then the symbol in it."""
    for attr in attrs:
        sub = f"{module}.{attr}"
        if module_file(sub):
            module = sub
            continue
        m = _module(module)
        return (module, attr) if m is not None and attr in m.defs else (module, "*")
    return (module, "*")


def _packages(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@cache
def closure(module: str, name: str) -> dict[Symbol, str]:
    """Every symbol the code of ``module.name`` runs, each as its stripped syntax tree.

    ``name`` ``"*"`` takes the whole module. Importing a module runs its packages' and its
    own import-time statements (and those of the modules it imports at top level): they
    are in."""
    out: dict[Symbol, str] = {}
    todo: list[Symbol] = [(module, name)]
    while todo:
        mod, sym = todo.pop()
        if (mod, sym) in out:
            continue
        m = _module(mod)
        if m is None:
            continue
        if sym == "*":
            out[(mod, sym)] = ""
            todo += [(mod, d) for d in m.defs]
            todo += [(p, "") for p in _packages(mod)]
            continue
        if sym == "":
            out[(mod, sym)] = "\n".join(_dump(s) for s in m.import_time)
            todo += [(p, "") for p in _packages(mod)[:-1]]
            todo += [(i, "") for i in m.imports]
            for s in m.import_time:
                todo += _references(s, m)
            continue
        node = m.defs.get(sym)
        if node is None:  # e.g. a name a module gets from elsewhere: take the module
            todo.append((mod, "*"))
            continue
        out[(mod, sym)] = _dump(node)
        todo.append((mod, ""))
        todo += _references(node, m)
    return out


@cache
def job_code(fn: str) -> str:
    """The fingerprint of job function ``fn`` (``"module:function"``): a hash of every
    symbol it runs (see :func:`closure`). A name the module does not hold is an error (a
    misspelt job function would otherwise hash its whole module)."""
    module, _, name = fn.partition(":")
    m = _module(module)
    if m is None or (name not in m.defs and not hasattr(importlib.import_module(module), name)):
        raise LookupError(f"job function {fn!r}: {module} has no {name!r}")
    h = hashlib.sha256()
    for (mod, sym), dump in sorted(closure(module, name).items()):
        h.update(f"{mod}:{sym}\0{dump}\0".encode())
    return h.hexdigest()[:16]


def job_files(fn: str) -> list[str]:
    """Repo-relative source files job function ``fn`` runs code from."""
    module, _, name = fn.partition(":")
    return symbol_files({(module, name)})


def symbol_files(symbols: Iterable[Symbol]) -> list[str]:
    """Repo-relative source files the code of ``symbols`` (``(module, name)``; name ``"*"``:
    the whole module) runs."""
    mods = {mod for sym in symbols for (mod, _), dump in closure(*sym).items() if dump}
    files = {module_file(mod) for mod in mods}  # modules with code that runs, not just names
    return sorted(str(f.relative_to(ROOT)) for f in files if f is not None)


def imported_symbols(path: Path) -> set[Symbol]:
    """The ``memrl`` symbols a script (a notebook's jupytext twin) imports: ``from m import
    a`` names ``(m, a)``, or the whole module ``(m.a, "*")`` when ``a`` is one."""
    out: set[Symbol] = set()
    for node in ast.walk(ast.parse(read_source(path))):
        bound = _bind(node, "") if isinstance(node, ast.Import | ast.ImportFrom) else {}
        for mod, sym in bound.values():
            if module_file(mod):
                out.add((mod, sym or "*"))
    return out


# =========================================================================== whole files
def imports(path: Path, package: str) -> set[str]:
    """Names of the ``memrl`` modules ``path`` imports anywhere (``from x import y``: both x
    and x.y, since y may be a module)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(read_source(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = _absolute(node, package)
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return {m for m in out if m == "memrl" or m.startswith("memrl.")}


@cache
def module_closure(module: str) -> list[str]:
    """Repo-relative source files of ``module`` and every ``memrl`` module it imports,
    transitively (with the packages' ``__init__.py`` that importing them runs)."""
    seen: set[Path] = set()
    todo = [module]
    while todo:
        parts = todo.pop().split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__, a/b/__init__
            f = module_file(".".join(parts[:i]))
            if f is None or f in seen:
                continue
            seen.add(f)
            pkg = ".".join(parts[:i]) if f.name == "__init__.py" else ".".join(parts[: i - 1])
            todo.extend(imports(f, pkg))
    return sorted(str(p.relative_to(ROOT)) for p in seen)


def module_fingerprint(path: Path) -> str:
    """A hash of what a module computes: its syntax tree without docstrings, comments or
    annotations (the routed kernels' share of every job key: :data:`memrl.isa.KEY`)."""
    tree = _Strip().visit(ast.parse(read_source(path)))
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        tree.body = body[1:]  # the module's docstring
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()[:16]


def file_fingerprint(paths: Iterable[str | Path], root: str | Path) -> str:
    """A hash of the files' contents (sorted by path)."""
    h = hashlib.sha256()
    for rel in sorted(str(p) for p in paths):
        h.update(rel.encode() + b"\0" + (Path(root) / rel).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def clear() -> None:
    """Forget every parsed module (after an edit, in tests)."""
    for f in (_module, closure, job_code, module_closure):
        f.cache_clear()
