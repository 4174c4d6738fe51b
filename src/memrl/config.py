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


def _format_errors(family: str, profile: str, err: ValidationError, model: Any = None) -> str:
    """One line per wrong value: the alternatives of a union merged ("a valid integer, or
    'auto'"), an unknown key with the known one it most resembles."""
    import difflib

    lines = [f"invalid parameters for family '{family}' (profile '{profile}'):"]
    merged: dict[tuple, list[dict]] = {}
    for e in err.errors():
        merged.setdefault(_field_loc(e["loc"]), []).append(e)
    known = _field_names(model) if model is not None else set()
    for floc, errs in merged.items():
        loc = ".".join(str(p) for p in floc)
        msgs = [errs[0]["msg"]] + [e["msg"].removeprefix("Input should be ") for e in errs[1:]]
        msg = ", or ".join(dict.fromkeys(msgs))
        if errs[0]["type"] == "extra_forbidden" and floc:
            close = difflib.get_close_matches(str(floc[-1]), sorted(known), n=1)
            msg += f"; did you mean '{close[0]}'?" if close else ""
        got = f" (got {errs[0].get('input')!r})" if loc else ""  # whole-model checks: no dump
        lines.append(f"  {family}{'.' + loc if loc else ''}: {msg}{got}")
    return "\n".join(lines)


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
        raise ConfigError(_format_errors(name, where, err, schema)) from None


def load_runtime(path: str | Path | None = None) -> RuntimeParams:
    raw = read_params(path)
    try:
        return RuntimeParams.model_validate(raw.get("runtime") or {})
    except ValidationError as err:
        raise ConfigError(_format_errors("runtime", "-", err, RuntimeParams)) from None


def resolved(runtime: RuntimeParams, cfgs: Mapping[str, BaseModel]) -> dict[str, Any]:
    """Validated parameters as plain data: the ``runtime`` block and one section per family."""
    return {
        "runtime": runtime.model_dump(mode="json"),
        **{family: cfg.model_dump(mode="json") for family, cfg in cfgs.items()},
    }
