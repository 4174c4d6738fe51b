"""Memory-R1: the generated dialogues (facts, questions, split, files), answer scoring
(EM / F1), the memory bank's operations, the managers, and GRPO actually learning."""

import json

import numpy as np
import pytest
import torch as th

from memrl.agents import memory_r1 as mr1
from memrl.envs.dialogue import (
    IDEAL_OP,
    NONE,
    Question,
    exact_match,
    f1_score,
    generate_dialogues,
    load_dialogues,
    save_dialogues,
)
from memrl.llm.embeddings import Embedder


@pytest.fixture(scope="module")
def splits():
    return generate_dialogues(
        seed=0, n_conversations=12, sessions=4, train_questions=30, val_questions=15
    )


@pytest.fixture(scope="module")
def embed():
    return Embedder("hashing").embed


def test_dialogues_are_deterministic_split_by_question_counts_and_reload(splits, tmp_path):
    again = generate_dialogues(0, 12, 4, 30, 15)
    assert again == splits
    n = {k: sum(len(c.questions) for c in v) for k, v in splits.items()}
    assert n["train"] >= 30 and n["train"] - len(splits["train"][-1].questions) < 30
    assert n["val"] >= 15 and splits["test"]
    ids = [c.cid for v in splits.values() for c in v]
    assert len(ids) == len(set(ids)) == 12
    save_dialogues(tmp_path, splits)
    assert load_dialogues(tmp_path) == splits
    with pytest.raises(FileNotFoundError, match="make data"):
        load_dialogues(tmp_path / "missing")
    with pytest.raises(ValueError, match="too few"):
        generate_dialogues(0, 2, 4, 30, 15)


def test_questions_follow_the_facts(splits):
    """The final-state answers are what the turns say last: replay the turns and check."""
    kinds = set()
    for conv in (c for v in splits.values() for c in v):
        state, date_of = {}, {}
        for t in conv.turns:
            kinds.add(t.kind)
            assert t.fact.startswith(f"On {t.date}: ") and t.kind in IDEAL_OP
            if t.key:
                p, a = t.key.split("|")
                if t.kind == "retract":
                    state[t.key] = NONE
                elif t.kind in ("intro", "change"):
                    state[t.key] = t.probe.answer
                    if t.session > 1:
                        date_of[t.key] = t.date
                assert t.probe.answer == state[t.key]  # the probe asks right after the turn
            assert t.probe.answer in t.probe.candidates
        for q in conv.questions:
            assert q.answer in q.candidates
            if q.category == "single-hop":
                assert q.answer in state.values()
            if q.category == "temporal":
                assert q.answer in date_of.values()
    assert kinds == set(IDEAL_OP)  # every kind of turn occurs


def test_exact_match_and_token_f1():
    assert exact_match("The Rome.", "rome") == 1.0
    assert exact_match("Paris", "Rome") == 0.0
    assert f1_score("8 May 2023", "8 May 2023") == 1.0
    assert f1_score("8 June 2023", "8 May 2023") == pytest.approx(2 / 3)
    assert f1_score("Paris", "Rome") == 0.0


def test_bank_operations_return_new_banks(embed):
    bank = mr1.MemoryBank(embed, ["Alice lives in Paris.", "Bob works as a chef."])
    assert bank.related("Alice moved to Rome, far from Paris.", 1) == [0]
    up = bank.apply(mr1.Action("UPDATE", 0), "Alice moved to Rome.")
    assert up.texts == ["Alice moved to Rome.", "Bob works as a chef."]
    assert bank.texts[0] == "Alice lives in Paris."  # unchanged
    assert bank.apply(mr1.Action("DELETE", 1), "x").texts == ["Alice lives in Paris."]
    assert bank.apply(mr1.Action("ADD"), "x").texts[-1] == "x"
    assert bank.apply(mr1.Action("NOOP"), "x").texts == bank.texts
    with pytest.raises(ValueError, match="unknown memory operation"):
        bank.apply(mr1.Action("MERGE"), "x")


def test_heuristic_manager_thresholds(embed):
    h = mr1.HeuristicManager(noop_threshold=0.99, update_threshold=0.5)
    empty = mr1.MemoryBank(embed)
    assert h.decide(empty, "Alice lives in Paris.").op == "ADD"
    bank = empty.apply(mr1.Action("ADD"), "Alice lives in Paris.")
    assert h.decide(bank, "Alice lives in Paris.").op == "NOOP"
    assert h.decide(bank, "Alice lives in Rome.") == mr1.Action("UPDATE", 0)
    assert h.decide(bank, "Zoe quit gymnastics yesterday!").op == "ADD"
    with pytest.raises(ValueError):
        mr1.HeuristicManager(noop_threshold=0.5, update_threshold=0.9)


def test_policy_masks_absent_memories_and_maps_actions(embed):
    th.manual_seed(0)
    pol = mr1.ManagerPolicy(384, k=2, hidden=8)
    bank = mr1.MemoryBank(embed, ["Alice lives in Paris."])
    x, mask, rel = mr1.features(bank, "Alice moved to Rome.", 2)
    assert x.shape == (2, 3 * 384 + 1) and mask.tolist() == [True, False] and rel == [0]
    with th.no_grad():
        probs = th.softmax(pol(th.from_numpy(x)[None], th.from_numpy(mask)[None])[0], 0)
    # actions: ADD, NOOP, UPDATE[0], UPDATE[1], DELETE[0], DELETE[1]; the absent j = 1 never
    assert probs[3] == 0 and probs[5] == 0 and probs.sum() == pytest.approx(1.0)
    assert mr1.index_to_action(2, rel, 2) == mr1.Action("UPDATE", 0)
    assert mr1.index_to_action(4, rel, 2) == mr1.Action("DELETE", 0)
    assert mr1.index_to_action(1, rel, 2) == mr1.Action("NOOP")


class _OracleAnswerer(mr1.AnswerAgent):
    """Answers from the *first* memory (in bank order) naming a candidate, so that keeping a
    stale memory beside the new one (ADD) costs and UPDATE (in place) pays."""

    def __init__(self):
        self.cache, self.calls, self.k = {}, 0, 10

    def answer(self, bank, q: Question) -> str:
        self.calls += 1
        hits = [c for m in bank.texts for c in q.candidates if c != NONE and c in m]
        return hits[0] if hits else NONE


def test_grpo_learns_what_the_reward_prefers(splits, embed):
    """With an answer agent that reads the *first* memory naming a value, a change must be an
    UPDATE (an ADD leaves the stale value first): GRPO, rewarded by the dialogue's questions
    from the bank the sampled operations built, must raise that reward and choose UPDATE for
    the changes."""
    th.manual_seed(0)
    pol = mr1.ManagerPolicy(384, k=2, hidden=32)
    cfg = mr1.GRPOConfig(
        epochs=16, group=8, learning_rate=1e-2, clip=0.2, update_epochs=2, beta=0.0
    )
    hist = mr1.train_grpo(
        pol, splits["train"], _OracleAnswerer(), embed, cfg, np.random.default_rng(0)
    )
    em = [np.mean([h["reward_em"] for h in hist if h["epoch"] == e]) for e in (1, 8)]
    assert em[1] > em[0] + 0.1, em
    _, ops = mr1.evaluate(mr1.RLManager(pol), splits["train"], _OracleAnswerer(), embed)
    changes = [o["op"] for o in ops if o["kind"] == "change"]
    assert changes.count("UPDATE") > len(changes) / 2, changes


def test_the_reward_is_the_dialogues_questions_on_the_bank_the_operations_built(embed):
    """Issue 56: the reward answers the dialogue's questions from the bank the whole
    operation sequence built, so an ADD that leaves a stale value beside the new one costs
    when a question reaches it, and a DELETE of a fact still asked about costs too."""
    q = Question("single-hop", "Where does Alice live?", "Rome", ("Paris", "Rome", NONE))
    job = Question("single-hop", "What does Bruno do?", "chef", ("chef", "pilot", NONE))
    facts = ["Bruno works as a chef.", "Alice lives in Paris.", "Alice moved to Rome."]
    ans = _OracleAnswerer()

    def reward(*ops):
        bank = mr1.MemoryBank(embed)
        for a, fact in zip(ops, facts, strict=True):
            bank = bank.apply(a, fact)
        return mr1.dialogue_reward(ans, bank, [q, job])

    add, upd, dele = mr1.Action("ADD"), mr1.Action("UPDATE", 1), mr1.Action("DELETE", 0)
    assert reward(add, add, upd) == 1.0  # Rome replaced Paris in place
    assert reward(add, add, add) < reward(add, add, upd)
    assert reward(add, add, dele) < reward(add, add, upd)


def test_answer_agent_caches_by_question_and_retrieved_memories(embed):
    from memrl.llm.models import load_model
    from memrl.llm.scoring import LLMScorer

    th.set_num_threads(1)
    ans = mr1.AnswerAgent(LLMScorer(load_model("tiny-random")), k=2)
    q = Question("single-hop", "Where does Alice live?", "Rome", ("Paris", "Rome", NONE))
    bank = mr1.MemoryBank(embed, ["Alice lives in Paris.", "Alice moved to Rome."])
    a = ans.answer(bank, q)
    assert a in q.candidates and ans.calls == 1
    assert ans.answer(mr1.MemoryBank(embed, list(bank.texts)), q) == a and ans.calls == 1
    ans.answer(bank.apply(mr1.Action("DELETE", 0), "x"), q)
    assert ans.calls == 2
    assert "- Alice moved to Rome.\n" in ans.prompt(bank.texts, q.question)


def test_prompted_manager_returns_a_valid_operation(embed):
    from memrl.llm.models import load_model
    from memrl.llm.scoring import LLMScorer

    m = mr1.PromptedManager(LLMScorer(load_model("tiny-random")), k=2)
    bank = mr1.MemoryBank(embed, ["Alice lives in Paris.", "Bob is a chef."])
    a = m.decide(bank, "Alice moved to Rome.")
    assert a.op in mr1.OPS and (a.target in (0, 1) if a.op in ("UPDATE", "DELETE") else True)
    assert json.dumps(a._asdict())  # plain data


def test_a_saved_manager_policy_loads_with_its_sizes(tmp_path):
    th.manual_seed(0)
    policy = mr1.ManagerPolicy(dim=6, k=3, hidden=8)
    x, mask = th.randn(2, 3, 19), th.tensor([[True, True, False], [True, False, False]])
    policy.save(tmp_path / "grpo.pt")
    loaded = mr1.ManagerPolicy.load(tmp_path / "grpo.pt")
    assert (loaded.dim, loaded.k, loaded.hidden, loaded.training) == (6, 3, 8, False)
    th.testing.assert_close(loaded(x, mask), policy(x, mask))
    # a bare state_dict (how the runs before ManagerPolicy.save stored it) needs k
    th.save(policy.state_dict(), tmp_path / "bare.pt")
    with pytest.raises(ValueError, match="related_k"):
        mr1.ManagerPolicy.load(tmp_path / "bare.pt")
    th.testing.assert_close(
        mr1.ManagerPolicy.load(tmp_path / "bare.pt", k=3)(x, mask), policy(x, mask)
    )


@pytest.mark.parametrize("profile", ["default", "paper"])
def test_the_grpo_runs_can_decide_against_their_one_run_baselines(profile):
    """LLM-7/8 compare GRPO's runs with deterministic managers run once: n runs against one
    reach at best p = 2^-n, so 4 runs (the family's seeds) could not decide at 95% whatever
    they scored (the republished default read "no outcome can decide at these seeds")."""
    from memrl.families import load_family
    from memrl.families.llm_memory_rl.jobs import MR1_DETERMINISTIC, grid
    from memrl.stats.bootstrap import LEVEL
    from memrl.stats.design import smallest_p

    specs = [s for s in grid(load_family("llm_memory_rl", profile)) if "Memory-R1" in s.label]
    grpo = [s for s in specs if s.kwargs["condition"] == "grpo"]
    once = [s for s in specs if s.kwargs["condition"] in MR1_DETERMINISTIC]
    assert once and all(s.kwargs["run"] == 0 for s in once)
    assert smallest_p(len(grpo)) <= (1 - LEVEL) / 2, len(grpo)
