"""A LoCoMo-like synthetic multi-session dialogue set, for memory managers (Memory-R1).

LoCoMo (Maharana et al. 2024) is a set of long two-speaker conversations over many dated
sessions, each turn annotated with the *observation* (the fact) it carries, and questions
about them: single-hop, multi-hop and temporal (adversarial ones are excluded by
Memory-R1).  It is downloaded from the web, so this module generates a set of the same
shape from a seed, with what makes memory *management* matter: facts that are introduced,
**changed** (a stale memory must be updated), **retracted** (it must be deleted), restated
(nothing to do) and small talk.

Every turn carries its observation as the fact a memory manager receives, e.g.
``"On 8 May 2023: Alice moved to Rome."``, with the ideal operation for the record
(``kind``: intro -> ADD, change -> UPDATE, retract -> DELETE, repeat / smalltalk -> NOOP),
which no manager sees.  Questions are asked after the last session, about the final state:

- single-hop: "Where does Alice live?" (the current value; "none" after a retraction);
- multi-hop: "Where does the person who works as a chef live?" (job -> person -> city);
- temporal: "When did Alice move to Rome?" (the date of the session of the change).

Each question lists its candidate answers: the values of its kind mentioned anywhere in the
conversation, plus "none" (the dates of the sessions, for temporal questions).  Every fact
also has a *probe*: the single-hop question about the fact's subject asked right after the
turn, with the answer at that time (Memory-R1 pairs each training operation with a
question whose evidence is that turn).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from memrl.runtime import atomic_write_text

NAMES = [
    "Alice",
    "Bruno",
    "Chen",
    "Dana",
    "Elif",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kemal",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
]
NONE = "none"

# per attribute: values; (fact, utterance) templates for intro / change / retract;
# the single-hop question; the temporal question about the latest change
ATTRIBUTES: dict[str, dict] = {
    "city": {
        "values": [
            "Paris",
            "Rome",
            "Oslo",
            "Lisbon",
            "Vienna",
            "Dublin",
            "Prague",
            "Madrid",
            "Athens",
            "Warsaw",
        ],
        "intro": [
            ("{p} lives in {v}.", "I live in {v}."),
            ("{p} is based in {v}.", "I'm based in {v} these days."),
        ],
        "change": [
            ("{p} moved to {v}.", "Big news: I moved to {v}!"),
            ("{p} now lives in {v}.", "I live in {v} now."),
            ("{p} relocated to {v} for a fresh start.", "I relocated to {v}."),
        ],
        "retract": [],
        "question": "Where does {p} live?",
        "temporal": "When did {p} move to {v}?",
    },
    "job": {
        "values": [
            "nurse",
            "chef",
            "teacher",
            "engineer",
            "pilot",
            "lawyer",
            "baker",
            "architect",
            "dentist",
            "journalist",
        ],
        "intro": [
            ("{p} works as a {v}.", "I work as a {v}."),
            ("{p} has a job as a {v}.", "My job? I'm a {v}."),
        ],
        "change": [
            ("{p} started a new job as a {v}.", "I started a new job as a {v}!"),
            ("{p} changed careers and is now a {v}.", "I changed careers, I'm a {v} now."),
        ],
        "retract": [
            ("{p} quit the job as a {v} and is not working now.", "I quit being a {v}."),
            ("{p} is no longer a {v}.", "I'm not a {v} anymore."),
        ],
        "question": "What is {p}'s job?",
        "temporal": "When did {p} start working as a {v}?",
    },
    "hobby": {
        "values": [
            "chess",
            "painting",
            "hiking",
            "swimming",
            "pottery",
            "guitar",
            "yoga",
            "cycling",
            "baking",
            "photography",
        ],
        "intro": [
            ("{p} enjoys {v} as a hobby.", "In my free time I enjoy {v}."),
            ("{p}'s favourite hobby is {v}.", "My favourite hobby is {v}."),
        ],
        "change": [
            ("{p} took up {v} as a new hobby instead.", "I took up {v} instead!"),
            ("{p} switched hobbies to {v}.", "These days my hobby is {v}."),
        ],
        "retract": [
            ("{p} gave up {v} and has no hobby now.", "I gave up {v}."),
            ("{p} stopped doing {v}.", "I stopped {v}."),
        ],
        "question": "What hobby does {p} have?",
        "temporal": "When did {p} take up {v}?",
    },
}
SMALLTALK = [
    ("{p} had a busy week.", "What a busy week!"),
    ("{p} watched a film on Sunday.", "I watched a film on Sunday."),
    ("{p} tried a new café downtown.", "I tried a new café downtown."),
    ("{p} is looking forward to the weekend.", "Can't wait for the weekend."),
]
MULTI_HOP = "Where does the person who works as a {v} live?"
IDEAL_OP = {
    "intro": "ADD",
    "change": "UPDATE",
    "retract": "DELETE",
    "repeat": "NOOP",
    "smalltalk": "NOOP",
}


@dataclass(frozen=True)
class Question:
    category: str  # single-hop | multi-hop | temporal
    question: str
    answer: str
    candidates: tuple[str, ...]


@dataclass(frozen=True)
class Turn:
    session: int
    date: str
    speaker: str
    utterance: str
    fact: str  # the observation a memory manager receives ("On <date>: <fact>")
    kind: str  # intro | change | retract | repeat | smalltalk (never shown to a manager)
    key: str  # "<speaker>|<attribute>" ("" for small talk)
    probe: Question  # the subject's single-hop question right after this turn


@dataclass(frozen=True)
class Conversation:
    cid: str
    speakers: tuple[str, str]
    dates: tuple[str, ...]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def _an(text: str) -> str:
    return _ARTICLE.sub(r"an \1", text)


_ARTICLE = re.compile(r"\ba ([aeiou])")


def _date(d: dt.date) -> str:
    return f"{d.day} {d.strftime('%B')} {d.year}"


def generate_conversation(rng: np.random.Generator, cid: str, sessions: int = 4) -> Conversation:
    """One two-speaker conversation over ``sessions`` dated sessions (see the module doc)."""
    speakers = tuple(str(s) for s in rng.choice(NAMES, 2, replace=False))
    day = dt.date(2023, 1, 1) + dt.timedelta(days=int(rng.integers(0, 200)))
    dates = []
    for _ in range(sessions):
        dates.append(_date(day))
        day += dt.timedelta(days=int(rng.integers(5, 40)))
    state: dict[str, str] = {}  # key -> current value (NONE after a retraction)
    since: dict[str, str] = {}  # key -> date its current value was set by a change
    seen: dict[str, set[str]] = {a: set() for a in ATTRIBUTES}
    turns: list[Turn] = []

    def pick(attr: str, exclude: Sequence[str]) -> str:
        vals = [v for v in ATTRIBUTES[attr]["values"] if v not in exclude]
        return str(rng.choice(vals))

    def others(key: str) -> list[str]:  # the other speaker's value: values stay unique
        p, a = key.split("|")
        return [v for k, v in state.items() if k.endswith(f"|{a}") and k != key]

    def say(s: int, p: str, templates, v: str, kind: str, key: str) -> None:
        fact, utt = templates[int(rng.integers(len(templates)))]
        a = key.split("|")[1] if key else ""
        if key:
            probe = single_hop(p, a, state[key], seen)
        else:  # small talk probes one of the speaker's attributes: it must not disturb it
            a = str(rng.choice(list(ATTRIBUTES)))
            probe = single_hop(p, a, state[f"{p}|{a}"], seen)
        turns.append(
            Turn(
                s + 1,
                dates[s],
                p,
                _an(f"{p}: " + utt.format(v=v)),
                _an(f"On {dates[s]}: " + fact.format(p=p, v=v)),
                kind,
                key,
                probe,
            )
        )

    # session 1: everyone introduces everything, in a shuffled order, plus some small talk
    intro = [(p, a) for p in speakers for a in ATTRIBUTES]
    for i in rng.permutation(len(intro)):
        p, a = intro[i]
        key = f"{p}|{a}"
        state[key] = pick(a, others(key))
        seen[a].add(state[key])
        say(0, p, ATTRIBUTES[a]["intro"], state[key], "intro", key)
    say(0, str(rng.choice(speakers)), SMALLTALK, "", "smalltalk", "")
    # later sessions: two changes, one retraction or restatement, one small talk
    for s in range(1, sessions):
        events = ["change", "change", "retract" if rng.random() < 0.5 else "repeat", "smalltalk"]
        for kind in (events[i] for i in rng.permutation(len(events))):
            p = str(rng.choice(speakers))
            if kind == "smalltalk":
                say(s, p, SMALLTALK, "", kind, "")
                continue
            attrs = [a for a in ATTRIBUTES if kind != "retract" or ATTRIBUTES[a]["retract"]]
            if kind in ("retract", "repeat"):
                attrs = [a for a in attrs if state[f"{p}|{a}"] != NONE]
            if not attrs:
                continue
            a = str(rng.choice(attrs))
            key = f"{p}|{a}"
            if kind == "change":
                was = state[key]
                state[key] = pick(a, [state[key], *others(key)])
                seen[a].add(state[key])
                since[key] = dates[s]
                # a change of a retracted value is a new fact: its ideal operation is ADD
                kind = "change" if was != NONE else "intro"
                say(s, p, ATTRIBUTES[a]["change"], state[key], kind, key)
            elif kind == "retract":
                old = state[key]
                state[key] = NONE
                since.pop(key, None)
                say(s, p, ATTRIBUTES[a]["retract"], old, kind, key)
            else:
                say(s, p, ATTRIBUTES[a]["intro"], state[key], kind, key)

    questions = [single_hop(p, a, state[f"{p}|{a}"], seen) for p in speakers for a in ATTRIBUTES]
    for key, date in since.items():
        p, a = key.split("|")
        q = _an(ATTRIBUTES[a]["temporal"].format(p=p, v=state[key]))
        questions.append(Question("temporal", q, date, tuple(dates)))
    cities = tuple(sorted(seen["city"])) + (NONE,)
    for p in speakers:
        job = state[f"{p}|job"]
        if job != NONE:
            questions.append(
                Question("multi-hop", _an(MULTI_HOP.format(v=job)), state[f"{p}|city"], cities)
            )
    return Conversation(cid, speakers, tuple(dates), tuple(turns), tuple(questions))


def single_hop(p: str, a: str, value: str, seen: dict[str, set[str]]) -> Question:
    cands = tuple(sorted(seen[a])) + (NONE,)
    return Question("single-hop", ATTRIBUTES[a]["question"].format(p=p), value, cands)


def generate_dialogues(
    seed: int, n_conversations: int, sessions: int, train_questions: int, val_questions: int
) -> dict[str, list[Conversation]]:
    """Conversations split like Memory-R1's LoCoMo split (152 / 81 / rest questions).

    Whole conversations go to a split, in order, until it holds at least the split's number
    of questions: ``train``, then ``val``, the rest ``test``.
    """
    rng = np.random.default_rng(seed)
    convs = [generate_conversation(rng, f"C{i:03d}", sessions) for i in range(n_conversations)]
    splits: dict[str, list[Conversation]] = {"train": [], "val": [], "test": []}
    targets = {"train": train_questions, "val": val_questions}
    it = iter(convs)
    for name, target in targets.items():
        while sum(len(c.questions) for c in splits[name]) < target:
            c = next(it, None)
            if c is None:
                raise ValueError(
                    f"{n_conversations} conversations are too few for {train_questions} train "
                    f"and {val_questions} validation questions"
                )
            splits[name].append(c)
    splits["test"] = list(it)
    if not splits["test"]:
        raise ValueError(f"{n_conversations} conversations leave no test conversation")
    return splits


# --------------------------------------------------------------------------- scoring
def normalize_answer(s: str) -> list[str]:
    """SQuAD / LoCoMo answer normalisation: lower case, no punctuation or articles."""
    s = s.lower().translate(str.maketrans("", "", string.punctuation))
    return [w for w in s.split() if w not in ("a", "an", "the")]


def exact_match(prediction: str, answer: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(answer))


def f1_score(prediction: str, answer: str) -> float:
    """Token-level F1 between a prediction and the answer (LoCoMo's / Memory-R1's F1)."""
    p, a = normalize_answer(prediction), normalize_answer(answer)
    common = sum((Counter(p) & Counter(a)).values())
    if common == 0:
        return float(p == a)
    prec, rec = common / len(p), common / len(a)
    return 2 * prec * rec / (prec + rec)


# --------------------------------------------------------------------------- files
def save_dialogues(path: str | Path, splits: dict[str, list[Conversation]]) -> None:
    """Write ``dialogues.json`` into ``path`` atomically."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    data = {k: [asdict(c) for c in v] for k, v in splits.items()}
    atomic_write_text(path / "dialogues.json", json.dumps(data, indent=1))


def load_dialogues(path: str | Path) -> dict[str, list[Conversation]]:
    """Read the splits written by :func:`save_dialogues` (a clear error if missing)."""
    f = Path(path) / "dialogues.json"
    if not f.is_file():
        raise FileNotFoundError(f"{f} is missing: run `make data` to build data/")

    def q(d: dict) -> Question:
        return Question(**{**d, "candidates": tuple(d["candidates"])})

    def conv(d: dict) -> Conversation:
        turns = tuple(Turn(**{**t, "probe": q(t["probe"])}) for t in d["turns"])
        return Conversation(
            d["cid"],
            tuple(d["speakers"]),
            tuple(d["dates"]),
            turns,
            tuple(q(x) for x in d["questions"]),
        )

    return {k: [conv(c) for c in v] for k, v in json.loads(f.read_text()).items()}
