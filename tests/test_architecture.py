"""Imports point down only (docs/architecture.md): read from the package's own source, counting
imports at module level, inside functions, and module names written as strings (what
importlib is given, or a ``(module, symbol)`` pair a fingerprint follows)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
_NAME = re.compile(r"memrl(\.\w+)+")


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted((SRC / "memrl").rglob("*.py")):
        name = ".".join(p.relative_to(SRC).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


MODULES = _modules()


def _known(name: str) -> str | None:
    """The module ``name`` lies in (``memrl.a.b.symbol`` -> ``memrl.a.b``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> set[str]:
    """Every ``memrl`` module ``module`` names: ``import``, ``from ... import`` (relative
    too), and strings or f-strings that spell a module (up to their first placeholder)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {_known(a.name) for a in node.names if a.name.startswith("memrl")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            if base.startswith("memrl"):
                for a in node.names:
                    full = f"{base}.{a.name}"
                    found.add(full if full in MODULES else _known(base))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _NAME.fullmatch(node.value):
                found.add(_known(node.value))
        elif isinstance(node, ast.JoinedStr):
            head = node.values[0] if node.values else None
            if isinstance(head, ast.Constant) and str(head.value).startswith("memrl."):
                found.add(_known(str(head.value).rstrip(".")))
    return {m for m in found if m and m != module}


GRAPH = {m: imports(m) for m in MODULES}


def _reach(module: str) -> set[str]:
    seen, todo = set(), [module]
    while todo:
        for m in GRAPH[todo.pop()]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def _under(names: set[str], *prefixes: str) -> list[str]:
    return sorted(n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes))


def test_the_scan_sees_function_level_and_string_imports():
    """The scan is worth something: it finds what a plain module-level scan misses."""
    assert "memrl.pipeline" in GRAPH["memrl.dvcfile"]  # a (module, symbol) pair
    assert "memrl.llm.server" in GRAPH["memrl.pipeline"]  # inside repro()
    assert "memrl.families" in GRAPH["memrl.cli"]


def test_no_cycles():
    cyclic = sorted(m for m in GRAPH if m in _reach(m))
    assert cyclic == [], f"modules on an import cycle: {cyclic}"


@pytest.mark.parametrize("module", ["memrl.config", "memrl.schema"])
def test_config_knows_no_family(module):
    assert _under(GRAPH[module], "memrl.families") == []


def test_the_store_knows_no_family_and_no_orchestration():
    bad = ("memrl.families", "memrl.estimate", "memrl.pipeline", "memrl.cli")
    assert _under(GRAPH["memrl.runs"], *bad) == []


def test_the_registry_only_registers():
    """``families/__init__.py`` says which families exist and where their parts are; running
    a family's jobs into a store and reading them back is the pipeline's, in one place."""
    assert _under(GRAPH["memrl.families"], "memrl.executors", "memrl.runs") == []


@pytest.mark.parametrize("module", ["memrl.report", "memrl.site"])
def test_readers_render_data_and_import_no_family(module):
    assert _under(GRAPH[module], "memrl.families") == []


@pytest.mark.parametrize("layer", ["memrl.stats", "memrl.memory", "memrl.envs", "memrl.llm"])
def test_lower_layers_import_nothing_above_them(layer):
    above = (
        "memrl.agents",
        "memrl.families",
        "memrl.runs",
        "memrl.executors",
        "memrl.pipeline",
        "memrl.cli",
    )
    for module in _under(set(GRAPH), layer):
        assert _under(GRAPH[module], *above) == [], module


# where a profile is read from params.yaml: the CLI, the pipeline's stages and what they call
# at the top (the registry's loader, the data recipes, verify, the runner's runtime)
READERS = ("load_family", "load_profile", "load_runtime", "read_params")


@pytest.mark.parametrize(
    "module", [m for m in MODULES if m.rsplit(".", 1)[-1] in ("claims", "tables", "statements")]
)
def test_analysis_is_given_its_parameters_and_reads_no_profile(module):
    """A family's claims and tables are handed the sections they judge by (the notebook
    resolves them, once, with its overrides); none loads a profile behind its caller's back
    (RO-1 to RO-3 read the ``paper`` profile themselves until the sixteenth session)."""
    called = {
        n.func.id if isinstance(n.func, ast.Name) else n.func.attr
        for n in ast.walk(ast.parse(MODULES[module].read_text()))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute)
    }
    assert called.isdisjoint(READERS), (module, called & set(READERS))
