"""The served LLM path against the in-process scorer, per decision, measured in this run.

The same REMEMBERER decisions (static exemplars on the shop's test tasks, SmolLM2-135M) are
scored three ways, one thread each:

1. *in-process*: :class:`memrl.llm.scoring.LLMScorer` (prompt and candidates in one pass,
   prefix and exemplars cached), what the experiments use;
2. *memrl route*: :class:`memrl.llm.server.ServerScorer` against ``python -m
   memrl.llm.serve`` on the GGUF (one request per decision; llama.cpp keeps the text it has
   seen in its KV cache and computes log-probabilities for the candidates' tokens only);
3. *OpenAI echo route* (``--echo N`` decisions; 0 skips it): against llama-cpp-python's
   OpenAI server, one request per candidate echoing the whole prompt with every token's
   log-probabilities (the route vLLM serves fast; llama-cpp-python sorts the vocabulary in
   Python for every echoed token).

Prints seconds per decision and each served path's ratio to the in-process one.

    python benchmarks/llm_server.py [--decisions 12] [--echo 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import memrl  # noqa: F401  (first: importing it pins the kernels, memrl.isa)

# isort: split
from llm_scoring import decisions  # this folder's decision generator

from memrl.agents.rlem import PREFIX
from memrl.families import load_family
from memrl.llm.models import load_model, smollm2_gguf
from memrl.llm.scoring import LLMScorer
from memrl.llm.serve import free_port, served
from memrl.llm.server import ServerScorer
from memrl.runtime import set_torch_threads


def per_decision(scorer, triples) -> float:
    t = time.perf_counter()
    for ctx, prompt, cands in triples:
        scorer.score(PREFIX, prompt, cands, ctx)
    return (time.perf_counter() - t) / len(triples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--decisions", type=int, default=12)
    ap.add_argument("--echo", type=int, default=1, help="decisions on the OpenAI echo route")
    args = ap.parse_args()
    set_torch_threads(1)  # torch and numpy's OpenBLAS (the model's products) on one thread
    cfg = load_family("llm_memory_rl", "default")
    triples = decisions(cfg, args.decisions)
    gguf = str(smollm2_gguf())

    local = per_decision(LLMScorer(load_model("smollm2")), triples)
    print(f"in-process scorer:  {local:8.3f} s per decision ({len(triples)} decisions)")

    port = free_port()
    cmd = [sys.executable, "-m", "memrl.llm.serve", "--model", gguf, "--port", str(port)]
    with served([*cmd, "--threads", "1"], f"http://127.0.0.1:{port}", "/health") as url:
        remote = ServerScorer(url, "smollm2", timeout=600, retries=0)
        served_s = per_decision(remote, triples)
    print(
        f"memrl route:        {served_s:8.3f} s per decision ({remote.requests} requests); "
        f"served / in-process = {served_s / local:.2f}"
    )

    if args.echo > 0:
        port = free_port()
        model = {"model": gguf, "model_alias": "smollm2", "n_ctx": 4096, "logits_all": True}
        model |= {"n_threads": 1, "n_threads_batch": 1, "verbose": False}
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "config.json"
            config.write_text(json.dumps({"host": "127.0.0.1", "port": port, "models": [model]}))
            cmd = [sys.executable, "-m", "llama_cpp.server", "--config_file", str(config)]
            with served(cmd, f"http://127.0.0.1:{port}", "/v1/models") as url:
                echo = ServerScorer(url, "smollm2", timeout=3600, retries=0)
                slow = per_decision(echo, triples[: args.echo])
        print(
            f"OpenAI echo route:  {slow:8.3f} s per decision ({echo.requests} requests for "
            f"{args.echo}); served / in-process = {slow / local:.1f}"
        )


if __name__ == "__main__":
    main()
