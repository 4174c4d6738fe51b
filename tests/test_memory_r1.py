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


def test_update_merges_the_fact_into_the_memory_as_the_paper_s_update_does(embed, splits):
    """Memory-R1's UPDATE writes new content into the existing memory (Appendix A.1:
    "... named him Buddy ..." -> "... and later adopted another dog named Scout"): the
    memory's complementary facts stay, the value the fact changes or retracts is replaced."""
    job = "On 1 May 2023: Alice works as a nurse."
    city = "On 8 May 2023: Alice moved to Rome."
    bank = mr1.MemoryBank(embed, [job, "On 1 May 2023: Bruno lives in Oslo."])
    up = bank.apply(mr1.Action("UPDATE", 0), city)
    assert up.texts == [f"{job} {city}", bank.texts[1]]  # merged, not replaced
    assert bank.texts[0] == job  # the bank itself unchanged
    chef = "On 9 June 2023: Alice changed careers and is now a chef."
    assert up.apply(mr1.Action("UPDATE", 0), chef).texts[0] == f"{city} {chef}"  # nurse gone
    quit_ = "On 9 June 2023: Alice is no longer a nurse."
    assert up.apply(mr1.Action("UPDATE", 0), quit_).texts[0] == f"{city} {quit_}"
    other = "On 9 June 2023: Bruno moved to Rome."  # another person's city: complementary
    assert up.apply(mr1.Action("UPDATE", 0), other).texts[0] == f"{job} {city} {other}"
    talk = "On 9 June 2023: Alice had a busy week."
    assert mr1.merge(job, talk) == f"{job} {talk}" and mr1.merge(talk, talk) == talk
    # every generated fact is read as the (speaker, attribute) it states, small talk as none
    for t in (t for v in splits.values() for c in v for t in c.turns):
        assert mr1.fact_subject(t.fact) == (tuple(t.key.split("|")) if t.key else None)
    # the reader sees both facts of the merged memory
    where = Question("single-hop", "Where does Alice live?", "Rome", ("Oslo", "Rome", NONE))
    what = Question("single-hop", "What is Alice's job?", "nurse", ("chef", "nurse", NONE))
    merged = mr1.MemoryBank(embed, up.texts[:1])
    assert [mr1.TopMemoryReader(1).answer(merged, q) for q in (where, what)] == ["Rome", "nurse"]


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


class _Recorder(mr1.TopMemoryReader):
    """The deterministic reader, recording every (bank, question) it is asked."""

    def __init__(self):
        super().__init__(k=3)
        self.asked = []

    def answer(self, bank, q: Question) -> str:
        self.asked.append((tuple(bank.texts), q))
        return super().answer(bank, q)


def test_training_tuples_are_turns_with_the_bank_the_earlier_turns_left(splits, embed):
    """Memory-R1's tuple (Algorithm 1): a turn carrying a fact, the bank built from the turns
    before it (facts as they left them: changed in place, retracted gone), and the question
    linked to the turn (its probe). Small talk carries no evidence: no tuple."""
    convs = splits["train"][:2]
    tuples = mr1.training_tuples(convs, embed)
    turns = [t for c in convs for t in c.turns]
    assert len(tuples) == sum(bool(t.key) for t in turns) < len(turns)
    first = convs[0].turns
    facts: dict[str, str] = {}
    mine = iter(tuples)
    for t in first:
        if t.key:
            tup = next(mine)
            assert (tup.fact, tup.question, tup.kind) == (t.fact, t.probe, t.kind)
            assert tup.bank.texts == list(facts.values())
        if t.kind in ("intro", "change"):
            facts[t.key] = t.fact
        elif t.kind == "retract":
            facts.pop(t.key, None)
    assert {tup.kind for tup in tuples} >= {"intro", "change"}


def test_each_sampled_operation_is_rewarded_by_its_turns_question_on_the_bank_it_made(
    splits, embed
):
    """Sec. 3.1, Eq. 4: after applying operation o the updated bank goes to the frozen
    answer agent, which answers the question linked to the turn: every question the trainer
    asks is a tuple's own, from that tuple's bank with one candidate operation applied."""
    th.manual_seed(0)
    convs = splits["train"][:2]
    pol = mr1.ManagerPolicy(384, k=2, hidden=8)
    reader = _Recorder()
    cfg = mr1.GRPOConfig(1, 4, 1e-3, 0.2, 1, 0.0, 8)
    mr1.train_grpo(pol, convs, reader, embed, cfg, np.random.default_rng(0))
    allowed = set()
    for t in mr1.training_tuples(convs, embed):
        rel = t.bank.related(t.fact, 2)
        for a in mr1.candidate_actions(rel):
            allowed.add((tuple(t.bank.apply(a, t.fact).texts), t.question))
    assert reader.asked and set(reader.asked) <= allowed
    # each (tuple, operation) is answered once: the bank, hence the reward, is fixed
    assert len(reader.asked) == len(set(reader.asked))


def test_the_top_memory_reader_answers_with_the_candidate_its_top_memory_names(embed):
    r = mr1.TopMemoryReader(k=3)
    q = Question("single-hop", "Where does Alice live?", "Rome", ("Paris", "Rome", NONE))
    bank = mr1.MemoryBank(embed, ["Alice moved to Rome.", "Bruno is a chef."])
    assert r.answer(bank, q) == "Rome"
    assert r.answer(mr1.MemoryBank(embed, ["Bruno is a chef."]), q) == NONE
    assert r.answer(mr1.MemoryBank(embed), q) == NONE
    when = Question("temporal", "When did Alice move?", "8 May 2023", ("8 May 2023", "18 May 2023"))
    late = mr1.MemoryBank(embed, ["On 18 May 2023: Alice moved to Rome."])
    assert r.answer(late, when) == "18 May 2023"  # a date inside another is not named


def test_grpo_on_the_turns_reward_learns_what_the_reader_prefers(splits, embed):
    """Under the deterministic reader every operation of a training turn earns a known
    reward (the turn's question answered from the bank it produced): GRPO from a cold start
    must raise its reward and end choosing a best-rewarded operation on most training turns
    (the untrained head does on 31%). Which operation that is depends on the embedder: with
    the hashing one a change's most related memory is often another fact, into which an
    UPDATE now merges the change, so an ADD is often the reader's best."""
    th.manual_seed(0)
    pol = mr1.ManagerPolicy(384, k=2, hidden=32)
    cfg = mr1.GRPOConfig(
        epochs=12, group=8, learning_rate=1e-2, clip=0.2, update_epochs=2, beta=0.0, batch=16
    )
    reader = mr1.TopMemoryReader(3)
    hist = mr1.train_grpo(pol, splits["train"], reader, embed, cfg, np.random.default_rng(0))
    em = [np.mean([h["reward_em"] for h in hist if h["epoch"] == e]) for e in (1, 12)]
    assert em[1] > em[0] + 0.1, em

    def reward(t, a) -> float:
        return exact_match(reader.answer(t.bank.apply(a, t.fact), t.question), t.question.answer)

    best = []
    for t in mr1.training_tuples(splits["train"], embed):
        _, mask, rel = mr1.features(t.bank, t.fact, 2)
        acts = [mr1.index_to_action(i, rel, 2) for i in range(6) if i < 2 or mask[(i - 2) % 2]]
        best.append(
            reward(t, mr1.RLManager(pol).decide(t.bank, t.fact)) == max(reward(t, a) for a in acts)
        )
    assert np.mean(best) > 0.8, np.mean(best)


def test_the_warm_start_clones_the_heuristic(splits, embed):
    """GRPO starts from the Mem0-style manager's operations (the paper's manager starts as a
    prompted instruct LLM): the clone chooses as its teacher on the training tuples."""
    th.manual_seed(0)
    tuples = mr1.training_tuples(splits["train"], embed)
    teacher = mr1.HeuristicManager(noop_threshold=0.95, update_threshold=0.5)
    pol = mr1.ManagerPolicy(384, k=2, hidden=32)
    loss = mr1.warm_start(pol, tuples, teacher, epochs=200, lr=1e-2)
    clone = mr1.RLManager(pol)
    same = [clone.decide(t.bank, t.fact) == teacher.decide(t.bank, t.fact) for t in tuples]
    assert loss < 0.1 and np.mean(same) >= 0.95, (loss, np.mean(same))
    assert {a.op for t in tuples for a in [teacher.decide(t.bank, t.fact)]} >= {"ADD", "UPDATE"}


def test_the_clone_learns_where_its_teacher_acts_and_keeps_every_operation_possible(splits, embed):
    """The warm start's states include the teacher's own (each turn of the banks it builds
    itself, small talk too), and with ``explore`` every valid operation keeps a share of
    the clone's probability, so GRPO can sample the ones the teacher never takes (DELETE)."""
    th.manual_seed(0)
    teacher = mr1.HeuristicManager(noop_threshold=0.95, update_threshold=0.7)
    own = mr1.teacher_states(splits["train"], teacher, embed)
    assert len(own) == sum(len(c.turns) for c in splits["train"])
    assert "smalltalk" in {t.kind for t in own}
    assert all(t.question is None for t in own)
    first = own[0]
    assert len(first.bank) == 0  # each conversation starts from an empty bank
    pol = mr1.ManagerPolicy(384, k=2, hidden=32)
    mr1.warm_start(pol, own, teacher, epochs=100, lr=1e-2, explore=0.3)
    clone = mr1.RLManager(pol)
    same = [clone.decide(t.bank, t.fact) == teacher.decide(t.bank, t.fact) for t in own]
    assert np.mean(same) >= 0.9, np.mean(same)
    x, mask, _ = mr1.features(own[-1].bank, own[-1].fact, 2)
    with th.no_grad():
        p = th.softmax(pol(th.from_numpy(x)[None], th.from_numpy(mask)[None])[0], 0)
    assert mask.all() and float(p[-2:].sum()) > 0.02  # DELETE stays possible
    assert "DELETE" not in {teacher.decide(t.bank, t.fact).op for t in own}


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
