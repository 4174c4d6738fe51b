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
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import torch as th
from llm_scoring import decisions  # this folder's decision generator

from memrl.agents.rlem import PREFIX
from memrl.config import load_family
from memrl.llm.models import load_model, smollm2_gguf
from memrl.llm.scoring import LLMScorer
from memrl.llm.server import ServerScorer


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd: list[str], url: str, ready: str) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while True:
        try:
            urllib.request.urlopen(url + ready, timeout=2).read()
            return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                sys.exit(f"{cmd[2]} did not start")
            time.sleep(0.5)


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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
    th.set_num_threads(1)
    cfg = load_family("llm_memory_rl", "default")
    triples = decisions(cfg, args.decisions)
    gguf = str(smollm2_gguf())

    local = per_decision(LLMScorer(load_model("smollm2")), triples)
    print(f"in-process scorer:  {local:8.3f} s per decision ({len(triples)} decisions)")

    port = _port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "memrl.llm.serve", "--model", gguf, "--port", str(port)]
    proc = _start([*cmd, "--threads", "1"], url, "/health")
    try:
        remote = ServerScorer(url, "smollm2", timeout=600, retries=0)
        served = per_decision(remote, triples)
    finally:
        _stop(proc)
    print(
        f"memrl route:        {served:8.3f} s per decision ({remote.requests} requests); "
        f"served / in-process = {served / local:.2f}"
    )

    if args.echo > 0:
        port = _port()
        url = f"http://127.0.0.1:{port}"
        model = {"model": gguf, "model_alias": "smollm2", "n_ctx": 4096, "logits_all": True}
        model |= {"n_threads": 1, "n_threads_batch": 1, "verbose": False}
        with tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "config.json"
            config.write_text(json.dumps({"host": "127.0.0.1", "port": port, "models": [model]}))
            proc = _start(
                [sys.executable, "-m", "llama_cpp.server", "--config_file", str(config)],
                url,
                "/v1/models",
            )
            try:
                echo = ServerScorer(url, "smollm2", timeout=3600, retries=0)
                slow = per_decision(echo, triples[: args.echo])
            finally:
                _stop(proc)
        print(
            f"OpenAI echo route:  {slow:8.3f} s per decision ({echo.requests} requests for "
            f"{args.echo}); served / in-process = {slow / local:.1f}"
        )


if __name__ == "__main__":
    main()
