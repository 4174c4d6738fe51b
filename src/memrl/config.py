"""Load ``params.yaml``, select a profile and validate it before any training starts.

``params.yaml`` is the single source of truth for hyperparameters.  Its layout::

    runtime: {...}              # workers, torch threads
    <family>:
      default: {...}            # the full CPU reproduction; every key lives here
      smoke:   {...}            # overrides, deep-merged onto ``default``
      paper:   {...}            # overrides, deep-merged onto ``default``

The file names no profile: the caller chooses one (``PROFILE=smoke make repro``,
``--profile``, a notebook's ``profile`` parameter), so switching profiles never rewrites it.
One run may also change any value (``overrides``: the CLI's ``--set``, a notebook's
``overrides`` parameter), validated the same way. Each family declares a pydantic model of
its parameters in ``memrl/families/<family>/params.py`` (shared blocks and types:
:mod:`memrl.schema`); the families' registry (:mod:`memrl.families`) loads its sections
through :func:`load_section`, so nothing here knows which families exist. A wrong type, a
non-positive budget or an unknown key fails here with one clear message that names the
offending key, never halfway through a run.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from memrl.profiles import PROFILES, unknown
from memrl.runtime import repo_root
from memrl.schema import RuntimeParams


class ConfigError(ValueError):
    """Raised for any invalid parameter file, profile or value."""


# --------------------------------------------------------------------------- loading
def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` with ``override`` merged in (dicts recursively, all else replaced)."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@functools.lru_cache(maxsize=8)
def _parse(path: str, mtime_ns: int, size: int) -> Any:
    """``path``'s YAML (cached by its modification time and size: every layer that asks for
    the parameters in one process reads the file once); a syntax error as one line."""
    with open(path) as fh:
        try:
            return yaml.safe_load(fh)
        except yaml.YAMLError as err:  # one line: where, and what YAML expected
            mark = getattr(err, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
            what = getattr(err, "problem", None) or str(err).splitlines()[0]
            # YAML notices an unclosed bracket or quote where it next stumbles: name the line
            # that opened what it was parsing too
            start = getattr(err, "context_mark", None)
            if start is not None and mark is not None and start.line != mark.line:
                what += f", in what {err.context.removeprefix('while ')} opened at line {start.line + 1}"
                fix = f"fix line {start.line + 1} or {mark.line + 1}"
            else:
                fix = "fix that line"
            raise ConfigError(f"{where}: not valid YAML ({what}); {fix}") from None


class Params(dict):
    """A params file's top level as read (:func:`read_params`), knowing its ``path``: an
    error in a value names the line it was written on (:func:`key_lines`)."""

    path: Path | None = None


@functools.lru_cache(maxsize=8)
def _lines(path: str, mtime_ns: int, size: int) -> dict[tuple, int]:
    """Every key's line in ``path`` (1-based), by its path of keys and list indices."""
    with open(path) as fh:
        root = yaml.compose(fh)
    out: dict[tuple, int] = {}
    todo = [((), root)]
    while todo:
        where, node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                here = (*where, key.value)
                out[here] = key.start_mark.line + 1
                todo.append((here, value))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                out[(*where, i)] = item.start_mark.line + 1
                todo.append(((*where, i), item))
    return out


def key_lines(path: str | Path) -> dict[tuple, int]:
    """:func:`_lines` of ``path`` (cached while the file stays as it was); ``{}`` when it
    cannot be read (the message then names the key alone)."""
    try:
        stat = Path(path).stat()
        return _lines(str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)
    except (OSError, yaml.YAMLError):
        return {}


def read_params(
    path: str | Path | None = None, sections: Sequence[str] | None = None
) -> dict[str, Any]:
    """Read the raw params file (``params.yaml`` at the repo root by default); its top level
    holds ``runtime`` and the ``sections`` named (the families), nothing else (unchecked
    when ``sections`` is None)."""
    path = Path(path) if path is not None else repo_root() / "params.yaml"
    if not path.is_file():
        raise ConfigError(f"parameter file not found: {path}")
    stat = path.stat()  # parsed once per process while the file stays as it was
    raw = copy.deepcopy(_parse(str(path.resolve()), stat.st_mtime_ns, stat.st_size))
    if not isinstance(raw, dict):
        raise ConfigError(f"{path} must hold a mapping at the top level")
    raw = Params(raw)
    raw.path = path
    if "profile" in raw:
        raise ConfigError(
            f"{path} names a profile ('profile: {raw['profile']}'), which it no longer does: "
            "delete that line and choose the profile per run (PROFILE=smoke make repro, "
            "--profile smoke, or a notebook's `profile` parameter)"
        )
    extra = set(raw) - {"runtime", *sections} if sections is not None else set()
    if extra:
        raise ConfigError(
            f"{path}: unknown top-level keys {sorted(extra)}; "
            f"expected runtime and the families {', '.join(sections or ())}"
        )
    return raw


_TYPE_TAGS = {"int", "float", "str", "bool", "list", "dict", "none", "tuple"}


def _field_loc(loc: tuple) -> tuple:
    """``loc`` without pydantic's union-branch tags (``constrained-int``, ``literal['auto']``)."""
    return tuple(
        p for p in loc if not (isinstance(p, str) and (not p.isidentifier() or p in _TYPE_TAGS))
    )


def _field_names(model: Any) -> set[str]:
    """Every field name in ``model`` and the models inside it (for "did you mean")."""
    import typing

    from pydantic import BaseModel

    names: set[str] = set()
    todo, seen = [model], set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for name, f in m.model_fields.items():
            names.add(name)
            stack = [f.annotation]
            while stack:
                t = stack.pop()
                if isinstance(t, type) and issubclass(t, BaseModel):
                    todo.append(t)
                stack += list(typing.get_args(t))
    return names


def _format_errors(
    family: str, profile: str, err: ValidationError, model: Any = None, where: Any = None
) -> str:
    """One line per wrong value: the alternatives of a union merged ("a valid integer, or
    'auto'"), an unknown key with the known one it most resembles (a renamed key: one line,
    not also its old name's "Field required"), and, where ``where`` (a field's path -> its
    place, e.g. ``params.yaml:22``) knows it, the line the value was written on."""
    import difflib

    lines = [f"invalid parameters for family '{family}' (profile '{profile}'):"]
    merged: dict[tuple, list[dict]] = {}
    for e in err.errors():
        merged.setdefault(_field_loc(e["loc"]), []).append(e)
    known = _field_names(model) if model is not None else set()
    kind = {floc: errs[0]["type"] for floc, errs in merged.items()}
    hints = {}  # an unknown key -> the known one it most resembles
    for floc in (f for f, k in kind.items() if k == "extra_forbidden" and f):
        others = sorted(known - {str(floc[-1])})  # a key known elsewhere is unknown here
        close = difflib.get_close_matches(str(floc[-1]), others, n=1)
        hints.update({floc: close[0]} if close else {})
    renamed = {}  # a missing key -> the unknown key beside it most like it (its old name)
    for floc in (f for f, k in kind.items() if k == "missing" and f):
        extra = [str(f[-1]) for f in hints if f[:-1] == floc[:-1]]
        if close := difflib.get_close_matches(str(floc[-1]), extra, n=1):
            renamed[floc] = (*floc[:-1], close[0])
            hints[renamed[floc]] = str(floc[-1])
    for floc, errs in merged.items():
        if floc in renamed:
            continue
        loc = ".".join(str(p) for p in floc)
        msgs = [errs[0]["msg"]] + [e["msg"].removeprefix("Input should be ") for e in errs[1:]]
        msg = ", or ".join(dict.fromkeys(msgs))
        if floc in hints:
            new = hints[floc]
            msg += f"; did you mean '{new}'?"
            was = renamed.get((*floc[:-1], new)) == floc
            msg += f" ('{new}' is required and missing)" if was else ""
        # whole-model checks and missing keys: no dump of the section they were checked in
        shown = loc and errs[0]["type"] != "missing"
        got = f" (got {errs[0].get('input')!r})" if shown else ""
        place = where(floc) if where is not None else None
        lines.append(
            f"  {family}{'.' + loc if loc else ''}{f' ({place})' if place else ''}: {msg}{got}"
        )
    return "\n".join(lines)


def _places(raw: Any, section: tuple, profile: str, overrides: Mapping[str, Any]) -> Any:
    """A field's path -> where its value was written (``params.yaml:LINE``), for
    :func:`_format_errors`: the profile's block, else ``default``'s (a missing key: the
    line of the block it is missing from); ``None`` for a value an override set."""
    path = getattr(raw, "path", None)
    lines = key_lines(path) if path is not None else {}
    name = Path(path).name if path is not None else ""
    changed = set()
    for key, _ in _flat(overrides):
        changed.add(tuple(int(p) if p.isdigit() else p for p in key.split(".")))

    def where(floc: tuple) -> str | None:
        if any(floc[: len(c)] == c for c in changed) or not lines:
            return None
        blocks = [profile, "default"] if profile != "default" else ["default"]
        for block in blocks:
            if (*section, block, *floc) in lines:
                return f"{name}:{lines[(*section, block, *floc)]}"
        for n in range(len(floc) - 1, -1, -1):  # a missing key: its enclosing block
            for block in blocks:
                if (key := (*section, block, *floc[:n])) in lines:
                    return f"{name}:{lines[key]}"
        return None

    return where


def _flat(tree: Mapping[str, Any], prefix: str = ""):
    """``(dotted key, value)`` of every leaf override (nested mappings flattened)."""
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            yield from _flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def check_profile(profile: Any) -> str:
    if profile not in PROFILES:
        raise ConfigError(unknown(profile))
    return profile


def apply_overrides(base: Any, overrides: Mapping[str, Any], where: str = "") -> Any:
    """``base`` (a family's parameters as plain data) with ``overrides`` put in.

    Keys may be dotted paths (``{"per_dqn.total_timesteps": 20000}``) or nested mappings
    (``{"per_dqn": {"total_timesteps": 20000}}``); a digit indexes a list
    (``{"envs.0.total_timesteps": 18000}``). A mapping merges into a section; any other
    value replaces. Unknown keys are left for the schema to refuse, by name.
    """
    if not isinstance(overrides, Mapping):
        raise ConfigError(f"overrides must be a mapping of keys to values, got {overrides!r}")
    out: Any = list(base) if isinstance(base, list) else dict(base)
    for dotted, value in overrides.items():
        if not isinstance(dotted, str) or not dotted:
            raise ConfigError(f"override keys are dotted names, got {dotted!r}")
        head, _, rest = dotted.partition(".")
        change = {rest: value} if rest else value
        name = f"{where}{head}"
        if isinstance(out, list):
            if not (head.isdigit() and int(head) < len(out)):
                raise ConfigError(f"override {name}: {where[:-1]} has {len(out)} items")
            key: Any = int(head)
            current = out[key]
        else:
            key, current = head, out.get(head)
        if isinstance(change, Mapping) and isinstance(current, Mapping | list):
            out[key] = apply_overrides(current, change, f"{name}.")
        elif isinstance(change, Mapping) and rest and current is not None:
            raise ConfigError(f"override {name} is a value, not a section")
        else:
            out[key] = copy.deepcopy(change)
    return out


def parse_overrides(overrides: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Overrides as a mapping: given as one, or as YAML/JSON text (papermill's ``-p``)."""
    if overrides is None or overrides == "":
        return {}
    if isinstance(overrides, str):
        try:
            overrides = yaml.safe_load(overrides)
        except yaml.YAMLError as err:
            raise ConfigError(f"overrides are not YAML: {err}") from None
    if not isinstance(overrides, Mapping):
        raise ConfigError(f"overrides must be a mapping of keys to values, got {overrides!r}")
    return dict(overrides)


def load_section(
    raw: Mapping[str, Any],
    name: str,
    schema: type[BaseModel],
    profile: str = "default",
    overrides: Mapping[str, Any] | str | None = None,
) -> Any:
    """Merge and validate section ``name`` of a params file (``raw``, from :func:`read_params`)
    for ``profile``, with ``overrides`` (a mapping or YAML text, see :func:`apply_overrides`)
    put in before validation against ``schema``."""
    check_profile(profile)
    overrides = parse_overrides(overrides)
    section = raw.get(name)
    if not isinstance(section, dict) or "default" not in section:
        raise ConfigError(f"params file has no '{name}.default' section")
    extra = set(section) - set(PROFILES)
    if extra:
        raise ConfigError(f"'{name}' has unknown profile keys: {sorted(extra)}")
    merged = section["default"]
    if profile != "default":
        merged = deep_merge(merged, section.get(profile) or {})
    where = profile
    if overrides:
        merged, where = apply_overrides(merged, overrides), f"{profile} + overrides"
    try:
        return schema.model_validate(merged)
    except ValidationError as err:
        places = _places(raw, (name,), profile, overrides)
        raise ConfigError(_format_errors(name, where, err, schema, places)) from None


def load_runtime(path: str | Path | None = None) -> RuntimeParams:
    raw = read_params(path)
    try:
        return RuntimeParams.model_validate(raw.get("runtime") or {})
    except ValidationError as err:
        places = _runtime_places(raw)
        raise ConfigError(_format_errors("runtime", "-", err, RuntimeParams, places)) from None


def _runtime_places(raw: Any) -> Any:
    """:func:`_places` for the ``runtime`` block (it has no profiles)."""
    path = getattr(raw, "path", None)
    lines = key_lines(path) if path is not None else {}

    def where(floc: tuple) -> str | None:
        for n in range(len(floc), -1, -1):
            if (key := ("runtime", *floc[:n])) in lines:
                return f"{Path(path).name}:{lines[key]}"
        return None

    return where


def resolved(runtime: RuntimeParams, cfgs: Mapping[str, BaseModel]) -> dict[str, Any]:
    """Validated parameters as plain data: the ``runtime`` block and one section per family."""
    return {
        "runtime": runtime.model_dump(mode="json"),
        **{family: cfg.model_dump(mode="json") for family, cfg in cfgs.items()},
    }
