"""LLM decision cost and memory retrieval latency, measured in this run.

1. Decisions/s of the action scorer on real REMEMBERER prompts (SmolLM2-135M by default):
   - *naive*: every candidate scored by its own full forward pass over prompt + candidate,
   - *two passes*: the prompt encoded once, then all candidates in one batch over copies of
     its KV cache (the scorer before 2026-11-23),
   - *one pass*: prompt and candidates in one forward pass with a tree attention mask
     (:class:`memrl.llm.scoring.LLMScorer` without caches),
   - *one pass + caches*: as one pass, with the static prefix and the exemplars cached
     across the decisions of an episode (what the experiments use).
2. Retrieval latency of the experience memory over 10^4 records (0.5 x page match +
   0.5 x instruction cosine), with all-MiniLM-L6-v2 embeddings cached per instruction.

    python benchmarks/llm_scoring.py [--model smollm2] [--decisions 12] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import memrl  # noqa: F401  (first: importing it pins the kernels, memrl.isa)

# isort: split
import numpy as np
import torch as th

from memrl.agents.rlem import PREFIX, RLEMAgent, build_prompt
from memrl.envs.shop import ShopEnv
from memrl.families import load_family
from memrl.families.llm_memory_rl import jobs as lm
from memrl.llm.embeddings import Embedder
from memrl.llm.models import load_model
from memrl.llm.scoring import LLMScorer
from memrl.memory.experience import ExperienceMemory, Step
from memrl.runtime import set_torch_threads


def decisions(cfg, n: int):
    """``n`` (context, prompt, candidates) triples from static-exemplar episodes on test tasks."""
    products, splits = lm.load_tasks(cfg.shop_data)
    env = ShopEnv(products, cfg.shop.max_steps, cfg.shop.n_results)
    mem = lm.initial_memory(cfg.rlem, env, splits["init"][:2])
    agent = RLEMAgent(None, Embedder("minilm"), mem, "static", np.random.default_rng(0))
    out, rng = [], np.random.default_rng(1)
    for task in splits["test"]:
        obs, info = env.reset(options={"task": task})
        agent._shown.clear()
        for _ in range(4):
            ctx = agent.exemplars(task.instruction, info["page"])
            out.append(
                (ctx, build_prompt(task.instruction, obs), [f" {a}" for a in info["admissible"]])
            )
            if len(out) == n:
                return out
            adm = [a for a in info["admissible"] if a != "click[buy now]"]
            obs, _, done, trunc, info = env.step(adm[int(rng.integers(len(adm)))])
            if done or trunc:
                break
    return out


def naive(loaded, ctx, prompt, cands):
    tok, model = loaded.tokenizer, loaded.model
    ids = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    p = ids(PREFIX) + ids(ctx) + ids(prompt)
    with th.inference_mode():
        for c in cands:
            model(th.tensor([p + ids(c)]))


def two_pass(loaded, ctx, prompt, cands):
    from transformers import DynamicCache

    tok, model = loaded.tokenizer, loaded.model
    ids = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    p = ids(PREFIX) + ids(ctx) + ids(prompt)
    c = [ids(x) for x in cands]
    width = max(map(len, c))
    x = th.tensor([x + [tok.pad_token_id] * (width - len(x)) for x in c])
    mask = th.tensor([[1] * (len(p) + len(x)) + [0] * (width - len(x)) for x in c])
    with th.inference_mode():
        cache = model(th.tensor([p]), past_key_values=DynamicCache(), logits_to_keep=1)
        cache = cache.past_key_values
        cache.batch_repeat_interleave(len(c))
        model(input_ids=x, attention_mask=mask, past_key_values=cache)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--decisions", type=int, default=12)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--records", type=int, default=10_000)
    args = ap.parse_args()
    set_torch_threads(args.threads)  # torch and numpy's BLAS alike
    cfg = load_family("llm_memory_rl", "default")
    loaded = load_model(args.model)
    batch = decisions(cfg, args.decisions)
    print(
        f"{len(batch)} decisions, {np.mean([len(c) for *_, c in batch]):.1f} candidates each, "
        f"model {args.model}, {args.threads} thread(s)"
    )

    t = time.perf_counter()
    for ctx, prompt, cands in batch:
        naive(loaded, ctx, prompt, cands)
    t_naive = time.perf_counter() - t
    t = time.perf_counter()
    for ctx, prompt, cands in batch:
        two_pass(loaded, ctx, prompt, cands)
    t_two = time.perf_counter() - t
    fresh = LLMScorer(loaded, context_cache=0)
    t = time.perf_counter()
    for ctx, prompt, cands in batch:
        fresh.score(PREFIX, ctx + prompt, cands)
    t_batched = time.perf_counter() - t
    cached = LLMScorer(loaded)
    t = time.perf_counter()
    for ctx, prompt, cands in batch:
        cached.score(PREFIX, prompt, cands, ctx)
    t_cached = time.perf_counter() - t
    n = len(batch)
    print(f"{'naive (one full pass per candidate)':35s}: {n / t_naive:6.2f} decisions/s  (1.00x)")
    for label, t in [
        ("two passes, prompt KV shared", t_two),
        ("one pass, tree attention mask", t_batched),
        ("one pass + prefix/exemplar caches", t_cached),
    ]:
        print(f"{label:35s}: {n / t:6.2f} decisions/s  ({t_naive / t:.2f}x)")

    # retrieval over a large memory: records from 500 distinct instructions x 20 pages
    products, splits = lm.load_tasks(cfg.shop_data)
    instr = [t.instruction for v in splits.values() for t in v]
    rng = np.random.default_rng(0)
    mem = ExperienceMemory(capacity=args.records)
    pages = ("search", "results", "item")
    for i in range(args.records):
        text = f"{instr[i % len(instr)]} #{(i // 20) % 500}"
        mem.update([Step(text, pages[i % 3], f"obs {i}", ("a", "b"), "a", float(rng.random()))])
    emb = Embedder("minilm")
    queries = [f"{instr[i % len(instr)]} (query {i})" for i in range(20)]
    mem.retrieve(queries[0], "item", 2, emb.embed)  # embeds every stored instruction once
    t = time.perf_counter()
    for q in queries:
        mem.retrieve(q, "item", 2, emb.embed)
    ms = 1000 * (time.perf_counter() - t) / len(queries)
    print(
        f"retrieval over {len(mem):,} records ({len({r.instruction for r in mem.records.values()})} "
        f"instructions): {ms:.1f} ms per query (embedding the query included)"
    )


if __name__ == "__main__":
    main()
