"""LLM memory RL: shop env and reward, experience memory (Q update, retrieval, files),
prompts, and the KV-cached scorer against a plain forward pass."""

import json

import numpy as np
import pytest
import torch as th

from memrl.agents.rlem import PREFIX, RLEMAgent, build_prompt, exemplar_text
from memrl.config import ConfigError
from memrl.envs.shop import (
    Product,
    ShopEnv,
    ShopTask,
    expert_episode,
    generate_shop,
    load_shop,
    save_shop,
    shop_reward,
)
from memrl.families import load_family
from memrl.llm.embeddings import Embedder, cosine
from memrl.llm.models import load_model
from memrl.llm.scoring import LLMScorer
from memrl.memory.experience import ExperienceMemory, MemoryFileError, Record, Step


@pytest.fixture(scope="module")
def shop():
    return generate_shop(seed=0, per_category=4, n_test=6, n_train=3, n_init=4)


@pytest.fixture(scope="module")
def scorer():
    th.set_num_threads(1)
    return LLMScorer(load_model("tiny-random"), context_cache=2)


# --------------------------------------------------------------------------- shop
def _task(**kw):
    base = dict(
        tid="T",
        instruction="i",
        department="beauty",
        category="shampoo",
        attributes=("organic", "vegan"),
        options={"size": "8 oz"},
        max_price=20.0,
    )
    return ShopTask(**{**base, **kw})


def _product(**kw):
    base = dict(
        pid="P",
        title="t",
        department="beauty",
        category="shampoo",
        attributes=("organic", "vegan", "travel size"),
        options={"size": ("2 oz", "8 oz")},
        price=10.0,
    )
    return Product(**{**base, **kw})


def test_reward_is_webshop_matching_score():
    t = _task()
    assert shop_reward(t, _product(), {"size": "8 oz"}) == 1.0
    assert shop_reward(t, _product(), {}) == pytest.approx(3 / 4)  # option not chosen
    assert shop_reward(t, _product(price=25.0), {"size": "8 oz"}) == pytest.approx(3 / 4)
    assert shop_reward(t, _product(attributes=("organic",)), {"size": "8 oz"}) == pytest.approx(
        3 / 4
    )
    # product type: same department 0.5, another department 0.1
    assert shop_reward(t, _product(category="lip balm"), {"size": "8 oz"}) == pytest.approx(0.5)
    other = _product(department="grocery", category="coffee")
    assert shop_reward(t, other, {"size": "8 oz"}) == pytest.approx(0.1)


def test_generation_is_deterministic_with_disjoint_splits(shop, tmp_path):
    products, splits = shop
    again = generate_shop(seed=0, per_category=4, n_test=6, n_train=3, n_init=4)
    assert again == shop
    assert {k: len(v) for k, v in splits.items()} == {
        "test": 6,
        "train_a": 3,
        "train_b": 3,
        "init": 4,
    }
    texts = [t.instruction for v in splits.values() for t in v]
    ids = [t.tid for v in splits.values() for t in v]
    assert len(set(ids)) == len(ids)
    assert len(set(texts)) == len(texts)
    assert len({p.title for p in products}) == len(products)
    save_shop(tmp_path, products, splits)
    assert load_shop(tmp_path) == shop
    with pytest.raises(FileNotFoundError, match="make data"):
        load_shop(tmp_path / "nope")


def test_env_pages_actions_and_expert(shop):
    products, splits = shop
    env = ShopEnv(products, max_steps=8, n_results=5)
    task = splits["test"][0]
    obs, info = env.reset(options={"task": task})
    assert info["page"] == "search" and all(a.startswith("search[") for a in info["admissible"])
    same, r, done, trunc, bad = env.step("click[buy now]")  # not on this page: WebShop's no-op
    assert same == obs and bad["invalid"] and r == 0 and not done and env.steps == 1
    env.reset(options={"task": task})
    obs, r, done, trunc, info = env.step(info["admissible"][0])
    assert info["page"] == "results" and len(info["admissible"]) == 6 and r == 0 and not done
    # the expert reaches the best reward among the results of its query
    acts = [t.action for t in expert_episode(env, task)]
    env.reset(options={"task": task})
    for a in acts:
        obs, r, done, trunc, info = env.step(a)
    assert done and acts[-1] == "click[buy now]" and 0 < r <= 1
    # an episode that never buys is truncated after max_steps with reward 0
    env.reset(options={"task": task})
    for i in range(8):
        obs, r, done, trunc, info = env.step(
            "search[" + task.queries[0] + "]" if i % 2 == 0 else "click[back to search]"
        )
    assert trunc and not done and r == 0
    with pytest.raises(ValueError, match="options"):
        env.reset()


# --------------------------------------------------------------------------- memory
def _steps(rewards, instr="buy shampoo", pages=("search", "results", "item")):
    return [
        Step(instr, pages[min(i, len(pages) - 1)], f"obs {i}", (f"a{i}", f"b{i}"), f"a{i}", r)
        for i, r in enumerate(rewards)
    ]


def test_q_update_one_step_bootstrap_and_running_mean():
    mem = ExperienceMemory(n_step=1, gamma=1.0)
    mem.update(_steps([0.0, 0.0, 1.0]))
    # last to first: the final reward reaches the first step through the bootstraps
    qs = [mem.records[("buy shampoo", f"obs {i}")].q[f"a{i}"] for i in range(3)]
    assert qs == [1.0, 1.0, 1.0]
    mem.update(_steps([0.0, 0.0, 0.0]))  # second visit: alpha = 1/2
    qs = [mem.records[("buy shampoo", f"obs {i}")].q[f"a{i}"] for i in range(3)]
    # step 2: 1 + (0 - 1)/2; step 1: 1 + (0 + 0.5 - 1)/2; step 0: 1 + (0 + 0.75 - 1)/2
    assert qs == pytest.approx([0.875, 0.75, 0.5])
    assert mem.records[("buy shampoo", "obs 0")].n["a0"] == 2


def test_q_update_n_step_and_no_bootstrap():
    mem = ExperienceMemory(n_step=2, gamma=0.5)
    steps = _steps([0.0, 1.0, 0.0, 2.0])
    mem.update(steps)
    q = lambda i: mem.records[("buy shampoo", f"obs {i}")].q[f"a{i}"]  # noqa: E731
    assert q(3) == 2.0
    assert q(2) == pytest.approx(0.0 + 0.5 * 2.0)
    assert q(1) == pytest.approx(1.0 + 0.5 * 0.0 + 0.25 * q(3))
    assert q(0) == pytest.approx(0.0 + 0.5 * 1.0 + 0.25 * q(2))
    # w/o bootstrap (the reference's n_step_flatten=None): full discounted returns, whatever n
    nb = ExperienceMemory(n_step=1, gamma=0.5, bootstrap=False)
    nb.update(_steps([0.0, 0.0, 1.0]))
    assert [nb.records[("buy shampoo", f"obs {i}")].q[f"a{i}"] for i in range(3)] == [0.25, 0.5, 1]


def test_retrieval_similarity_is_half_page_half_instruction():
    emb = Embedder("hashing")
    mem = ExperienceMemory()
    mem.update(_steps([1.0], instr="organic shampoo in 8 oz", pages=("item",)))
    mem.update(_steps([1.0], instr="wireless headphones in black", pages=("search",)))
    # same page type wins over a closer instruction on another page
    got = mem.retrieve("wireless headphones in red", "item", 1, emb.embed)
    assert got[0].instruction == "organic shampoo in 8 oz"
    got = mem.retrieve("wireless headphones in red", "search", 2, emb.embed)
    assert [r.instruction for r in got] == [
        "wireless headphones in black",
        "organic shampoo in 8 oz",
    ]
    e = emb.embed(["a b c", "a b c", "x y z"])
    assert cosine(e[:1], e[1:2])[0, 0] == pytest.approx(1.0, abs=1e-6)
    assert cosine(e[:1], e[2:])[0, 0] < 0.5


def test_memory_saves_and_reloads_identically_and_rejects_corrupt_files(tmp_path):
    mem = ExperienceMemory(capacity=10, n_step=2, gamma=0.9)
    mem.update(_steps([0.0, 0.5, 1.0]))
    p = tmp_path / "m.json"
    mem.save(p)
    back = ExperienceMemory.load(p)
    assert back.to_json() == mem.to_json()
    p.write_text(p.read_text()[:-20])
    with pytest.raises(MemoryFileError, match="not valid JSON"):
        ExperienceMemory.load(p)
    p.write_text(json.dumps({"format": "other"}))
    with pytest.raises(MemoryFileError, match="not an experience memory"):
        ExperienceMemory.load(p)
    p.write_text(json.dumps({**mem.to_json(), "records": [{"page": "x"}]}))
    with pytest.raises(MemoryFileError, match="malformed"):
        ExperienceMemory.load(p)
    with pytest.raises(MemoryFileError, match="not found"):
        ExperienceMemory.load(tmp_path / "missing.json")


def test_capacity_forgets_oldest_records():
    mem = ExperienceMemory(capacity=2)
    mem.update(_steps([0.0, 0.0, 1.0]))
    assert len(mem) == 2 and ("buy shampoo", "obs 0") not in mem.records


# --------------------------------------------------------------------------- prompts
def test_exemplar_shows_encouraged_and_discouraged_actions():
    rng = np.random.default_rng(0)
    rec = Record("buy tea", "item", "[item page] tea", ("click[a]", "click[b]", "click[buy now]"))
    rec.q.update({"click[buy now]": 0.8, "click[a]": 0.1})
    rec.n.update({"click[buy now]": 2, "click[a]": 1})
    text = exemplar_text(rec, rng)
    assert "Instruction: buy tea\nPage: [item page] tea\n" in text
    assert "Encouraged: click[buy now] -> 0.8\nDiscouraged: click[a] -> 0.1\n" in text
    assert "Discouraged" not in exemplar_text(rec, rng, discouraged=False)
    # nothing positive yet: a random admissible action is encouraged with a small value
    rec2 = Record(
        "buy tea", "item", "p", ("click[a]", "click[b]"), {"click[a]": 0.0}, {"click[a]": 1}
    )
    enc = exemplar_text(rec2, rng).split("Encouraged: ")[1].split("\n")[0]
    assert enc.split(" -> ")[0] in rec2.admissible and 0 <= float(enc.split(" -> ")[1]) <= 0.5
    prompt = build_prompt("buy tea", "[search page]")
    assert prompt == "Instruction: buy tea\nPage: [search page]\nEncouraged:"


def test_agent_modes_and_learning(shop, scorer):
    products, splits = shop
    env = ShopEnv(products, max_steps=6)
    emb = Embedder("hashing")
    with pytest.raises(ValueError, match="unknown mode"):
        RLEMAgent(scorer, emb, None, "oracle", np.random.default_rng(0))
    with pytest.raises(ValueError, match="needs a memory"):
        RLEMAgent(scorer, emb, None, "rlem", np.random.default_rng(0))
    mem = ExperienceMemory()
    agent = RLEMAgent(scorer, emb, mem, "rlem", np.random.default_rng(0))
    res = agent.run_episode(env, splits["train_a"][0], learn=True)
    assert len(mem) > 0 and res.steps == len(res.actions) and agent.decisions == res.steps
    n = len(mem)
    agent.run_episode(env, splits["test"][0], learn=False)
    assert len(mem) == n  # testing never writes to the memory
    assert PREFIX.endswith("\n\n")


# --------------------------------------------------------------------------- scorer
def _reference(lm, prefix, context, prompt, cands):
    tok = lm.tokenizer
    ids = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    out = []
    for c in cands:
        p, cc = ids(prefix) + ids(context) + ids(prompt), ids(c)
        with th.no_grad():
            lp = lm.model(th.tensor([p + cc])).logits[0].log_softmax(-1)
        out.append(np.mean([lp[len(p) + k - 1, cc[k]].item() for k in range(len(cc))]))
    return np.array(out)


def test_cached_batched_scoring_equals_plain_forward_passes(scorer):
    lm = load_model("tiny-random")
    prefix, cands = "You shop.\n", [" search[tea]", " click[buy now]", " c"]
    for context in ["ex one\n", "", "ex two\n", "ex one\n", "ex three\n"]:
        for prompt in ["Page: 1\nEncouraged:", "Page: 22\nEncouraged:"]:
            got = scorer.score(prefix, prompt, cands, context)
            assert got == pytest.approx(_reference(lm, prefix, context, prompt, cands), abs=1e-5)
    assert len(scorer._contexts) <= 2
    with pytest.raises(ValueError, match="no candidate"):
        scorer.score(prefix, "x", [])
    rng = np.random.default_rng(0)
    s = scorer.score(prefix, "x", cands)
    assert scorer.choose(prefix, "x", cands, 0.0, rng) == int(np.argmax(s))


def test_linear_layers_run_on_openblas_without_gradients_and_on_torch_with_them():
    from transformers.pytorch_utils import Conv1D

    from memrl.llm.models import BlasLinear, blas_products

    lm = load_model("tiny-random")  # GPT-2: Conv1D blocks and an nn.Linear head
    layers = [m for m in lm.model.modules() if isinstance(m, th.nn.Linear | Conv1D)]
    assert layers and all(isinstance(m.forward, BlasLinear) for m in layers)
    assert blas_products(lm.model) == 0  # already routed: not wrapped twice
    x = th.randint(0, 257, (1, 40))
    with th.inference_mode():
        blas = lm.model(input_ids=x).logits
    with th.enable_grad():  # the modules' own forward (torch), gradients flowing
        own = lm.model(input_ids=x).logits
        own.sum().backward()
    assert own.requires_grad and lm.model.lm_head.weight.grad is not None
    assert not blas.requires_grad
    assert th.allclose(blas, own.detach(), rtol=1e-5, atol=1e-5)
    half = load_model("tiny-random", dtype="bfloat16")  # only float32 goes through OpenBLAS
    assert not any(isinstance(m.forward, BlasLinear) for m in half.model.modules())


def test_missing_model_fails_with_the_fix():
    from memrl.llm.models import ModelNotFoundError, ensure_model

    with pytest.raises(ModelNotFoundError, match="nothing is downloaded"):
        load_model("/nonexistent/model-folder")
    with pytest.raises(ModelNotFoundError, match="nothing is downloaded"):
        ensure_model("no-such-org/no-such-model")
    ensure_model("tiny-random")  # built from a config: always there


# --------------------------------------------------------------------------- params


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d["rlem"].update(test_tasks=99), "exceeds the generated test split"),
        (lambda d: d["rlem"].update(conditions=["llm", "oracle"]), "conditions"),
        (lambda d: d["rlem"].update(conditions=["llm", "static"]), "must include 'rlem'"),
        (lambda d: d["llm"].update(embedder="bert"), "embedder"),
        (lambda d: d["llm"].update(temperature=-1), "temperature"),
        (lambda d: d["memory_r1"].update(conditions=["grpo", "mem0"]), "conditions"),
        (lambda d: d["memory_r1"].update(heuristic_update=0.99), "must not exceed"),
        (lambda d: d["memory_r1"].update(group=1), "group"),
        (lambda d: d["dialogue_data"].update(sessions="4"), "sessions"),
    ],
)
def test_bad_params_fail_before_any_run(params_with, mutate, message):
    with pytest.raises(ConfigError, match=message):
        load_family("llm_memory_rl", "default", params_with(mutate, "llm_memory_rl"))


# --------------------------------------------------------------------------- AgentFly cases
def test_case_bank_selection_learning_and_files(tmp_path):
    from memrl.memory.cases import Case, CaseBank

    emb = Embedder("hashing")
    with pytest.raises(ValueError, match="unknown case selection"):
        CaseBank("random")
    nonp = CaseBank("nonparametric", k=2)
    assert nonp.select("anything", emb.embed) == []
    for t, r in [("organic shampoo", 1.0), ("wireless headphones", 0.2), ("green tea", 0.0)]:
        nonp.add(Case(t, ("search[x]", "click[buy now]"), r))
    assert nonp.select("organic shampoo 8 oz", emb.embed)[0] == 0
    assert "Plan: search[x] > click[buy now]\nOutcome: success" in nonp.cases[0].text()
    assert "failure (score 0.20)" in nonp.cases[1].text()
    # parametric: cases that led to reward are learnt to rank first, whatever the similarity
    par = CaseBank("parametric", k=1, lr=1e-2, epochs=20, seed=0)
    par.cases = list(nonp.cases)
    for _ in range(15):
        par.learn("green tea 1 lb", [2], 1.0, emb.embed)
        par.learn("green tea 1 lb", [0], 0.0, emb.embed)
    assert par.select("green tea 1 lb", emb.embed) == [2]
    par.save(tmp_path / "b.json")
    back = CaseBank.load(tmp_path / "b.json")
    assert back.cases == par.cases and back._examples == par._examples
    (tmp_path / "b.json").write_text("{")
    with pytest.raises(MemoryFileError, match="not valid JSON"):
        CaseBank.load(tmp_path / "b.json")


def test_case_agent_writes_cases_back(shop, scorer):
    from memrl.agents.memento import CaseAgent
    from memrl.memory.cases import CaseBank

    products, splits = shop
    env = ShopEnv(products, max_steps=5)
    bank = CaseBank("nonparametric")
    agent = CaseAgent(scorer, Embedder("hashing"), bank, np.random.default_rng(0))
    res = agent.run_episode(env, splits["test"][0])
    assert len(bank) == 1 and bank.cases[0].actions == res.actions
    assert bank.cases[0].reward == res.reward
    agent.run_episode(env, splits["test"][1], learn=False)
    assert len(bank) == 1


def test_load_model_takes_a_dtype():
    assert next(load_model("tiny-random").model.parameters()).dtype == th.float32
    half = load_model("tiny-random", dtype="bfloat16")
    assert next(half.model.parameters()).dtype == th.bfloat16
    with pytest.raises(ValueError, match="dtype must be one of"):
        load_model("tiny-random", dtype="int8")
    with pytest.raises(ConfigError, match="dtype"):
        load_family("llm_memory_rl", "smoke", overrides={"llm.dtype": "fp8"})


def test_expert_demonstrations_succeed_on_at_least_95_percent_of_tasks(shop):
    """The annotated demos that seed the initial memories buy what the task asks for: the
    expert ranks purchases by the reward they would really get (the options the product has)."""
    from memrl.envs.shop import expert_successes

    products, splits = shop
    tasks = [t for split in splits.values() for t in split]
    assert expert_successes(ShopEnv(products, max_steps=8), tasks) >= 0.95 * len(tasks)


def test_every_job_function_runs_its_smoke_job():
    """One smoke job per job function of the family (REMEMBERER, AgentFly, Memory-R1, and
    the floors), run in this process on the tiny random LLM: each returns its row, and the
    LLM ones say which backend and model scored and how many decisions they made."""
    from memrl import families
    from memrl.jobs import resolve

    specs = families.get("llm_memory_rl").grid(load_family("llm_memory_rl", "smoke"))
    first = {}  # the cheapest smoke job of each function
    for s in sorted(specs, key=lambda s: s.cost):
        first.setdefault(s.fn, s)
    assert len(first) >= 4, sorted(first)
    for spec in first.values():
        row = resolve(spec.fn)(**spec.kwargs)
        assert isinstance(row, dict) and row, spec.name
        if "llm" in row:
            used = row["llm"]
            assert used["backend"] == "inprocess" and used["model"] == "tiny-random", spec.name
            assert used["decisions"] > 0 and used["tokens"] > 0, spec.name


def test_a_job_starts_from_no_cached_text(scorer):
    """The worker's scorer keeps its prefix and contexts between calls; each job forgets
    them first, so what it counts does not depend on the jobs the worker ran before (a
    smoke REMEMBERER run counted 4,453 tokens after another job and 4,578 alone)."""
    scorer.forget()
    before = scorer.tokens_encoded
    a = scorer.score("You shop.", "Buy:", [" a", " b"], "Example: buy a")
    first = scorer.tokens_encoded - before
    scorer.score("You shop.", "Buy:", [" a", " b"], "Example: buy a")  # cached: cheaper
    assert scorer.tokens_encoded - before - first < first
    scorer.forget()
    before = scorer.tokens_encoded
    b = scorer.score("You shop.", "Buy:", [" a", " b"], "Example: buy a")
    assert scorer.tokens_encoded - before == first and a.tobytes() == b.tobytes()
