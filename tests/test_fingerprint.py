"""A job's key moves exactly when the code its function runs changes: an edit to an
analysis module (claims, tables, report, site, plots, the loader's messages) moves no key,
an edit to one agent moves only its own jobs' keys, and formatting or comments move none."""

from __future__ import annotations

from pathlib import Path

import pytest

from memrl import families, fingerprint
from memrl.families import load_family

SRC = fingerprint.SRC


def keys(profile: str = "default") -> dict[str, str]:
    """Every job of every family (runs and floors): label -> key."""
    out = {}
    for fam in families.FAMILIES:
        for spec in fam.grid(load_family(fam.name, profile)):
            out[f"{fam.name}: {spec.name}"] = spec.key
    return out


@pytest.fixture
def edit(monkeypatch):
    """Edit modules in memory: ``edit(path, old, new)``; the fingerprint reads the edits."""
    edits: dict[Path, tuple[str, str]] = {}
    real = fingerprint.read_source

    def read(path: Path) -> str:
        text = real(path)
        if path in edits:
            old, new = edits[path]
            assert old in text, f"{old!r} not in {path}"
            text = text.replace(old, new, 1)
        return text

    monkeypatch.setattr(fingerprint, "read_source", read)

    def apply(rel: str, old: str, new: str) -> None:
        edits[SRC / rel] = (old, new)
        fingerprint.clear()

    yield apply
    fingerprint.clear()


@pytest.fixture(scope="module")
def before() -> dict[str, str]:
    fingerprint.clear()
    return keys()


# modules no job runs: a new function in any of them, or a changed message, moves nothing
ANALYSIS = [
    "stats/claims.py",
    "stats/compare.py",
    "stats/trend.py",
    "stats/floors.py",
    "stats/points.py",
    "report.py",
    "site.py",
    "plots.py",
    "results.py",
    "estimate.py",
    "dvcfile.py",
    "pipeline.py",
    "runs.py",
    *(f"families/{f}/{m}.py" for f in families.NAMES for m in ("claims", "tables")),
]


@pytest.mark.parametrize("rel", ANALYSIS)
def test_an_analysis_edit_moves_no_job_key(rel, edit, before):
    text = (SRC / rel).read_text()
    first = next(line for line in text.splitlines() if line.startswith(("def ", "class ")))
    edit(rel, first, f"def added_by_a_test():\n    return 42\n\n\n{first}")
    assert keys() == before


def test_the_loaders_messages_move_no_job_key(edit, before):
    edit("config.py", "unknown top-level keys", "keys this file does not know")
    assert keys() == before


def test_formatting_comments_and_docstrings_move_no_job_key(edit, before):
    rel = "agents/recurrent_sac.py"
    text = (SRC / rel).read_text()
    doc = text.split('"""')[1]  # the module docstring
    edit(rel, doc, doc + " Edited by a test.")
    assert keys() == before
    edit(
        "families/recurrent_off_policy/jobs.py",
        "    seed_everything(seed)\n",
        "    seed_everything(  seed )  # a comment\n",
    )
    assert keys() == before


@pytest.mark.parametrize(
    ("rel", "old", "new", "moved"),
    [
        # one agent: only its own jobs move
        (
            "agents/recurrent_td3.py",
            "class RecurrentTD3:",
            "def _unused():\n    pass\n\n\nclass RecurrentTD3:",
            set(),
        ),
        (
            "agents/recurrent_td3.py",
            "        cls, env: gym.Env,",
            "        cls, env: gym.Env, *_extra: int,",
            {"RTD3-"},
        ),
        ("agents/mfec.py", "def train(", "def train(*_extra: int, ", {"MFEC"}),
    ],
)
def test_editing_one_agent_moves_only_its_jobs(rel, old, new, moved, edit, before):
    edit(rel, old, new)
    after = keys()
    changed = {label for label in before if after[label] != before[label]}
    assert all(any(m in label for m in moved) for label in changed), sorted(changed)[:5]
    if moved:
        assert changed, f"editing {rel} moved no key"


def test_editing_prioritized_replay_moves_no_recurrent_job(edit, before):
    """PER lives beside SB3's DQN; the recurrent family's baselines never run it."""
    rel = "memory/prioritized.py"
    text = (SRC / rel).read_text()
    first = next(line for line in text.splitlines() if line.startswith("    def "))
    edit(
        rel,
        first,
        first.replace("def ", "def _unused_by_a_test(self):\n        pass\n\n    def ", 1),
    )
    after = keys()
    changed = {label for label in before if after[label] != before[label]}
    assert changed and not any(label.startswith("recurrent_off_policy") for label in changed)
    assert all(label.startswith("experience_replay") for label in changed)


def test_a_misspelt_job_function_is_an_error_not_its_whole_module():
    from memrl.fingerprint import job_code

    assert job_code("memrl.agents.mfec:train")  # a real one
    with pytest.raises(LookupError, match="has no 'trian'"):
        job_code("memrl.agents.mfec:trian")
