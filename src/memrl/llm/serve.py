"""A scoring server for a GGUF model: one request per decision, log-probabilities of the
candidates' tokens only.

The OpenAI completions route scores a candidate only by echoing the whole prompt with every
token's log-probabilities; llama-cpp-python then sorts the full vocabulary in Python for
every prompt token, and memrl sends one such request per candidate: ~130 s per decision for
SmolLM2-135M on a 2-core CPU, where the in-process scorer takes ~1 s
(``benchmarks/llm_server.py``). This server answers memrl's own route instead::

    POST /memrl/v1/score
    {"prefix": ..., "context": ..., "prompt": ..., "candidates": [...]}
    -> {"scores": [mean token log-probability per candidate], "prompt_tokens": n}

It tokenizes as :class:`memrl.llm.scoring.LLMScorer` does (prefix, context, prompt and each
candidate apart, no BOS), keeps the evaluated text in llama.cpp's KV cache and evaluates only
what is new to it (the longest common prefix with the last request is reused), then each
candidate after the prompt, reading the log-softmax at the candidate's own tokens.
:class:`memrl.llm.server.ServerScorer` uses this route when the server offers it and the
OpenAI route otherwise::

    python -m memrl.llm.serve --model "$(python -c 'from memrl.llm.models import smollm2_gguf; print(smollm2_gguf())')" --port 8080

Needs ``llama-cpp-python`` (``pip install -e '.[server]'``, built from source).
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from memrl.llm.server import SCORE_ROUTE


class GGUFScorer:
    """Candidate log-probabilities from a ``llama_cpp.Llama`` made with ``logits_all=True``
    (every evaluated position's logits kept in ``llama.scores``)."""

    def __init__(self, llama):
        self.llm = llama
        self.lock = threading.Lock()
        self._tokens: dict[str, list[int]] = {}

    def ids(self, text: str) -> list[int]:
        if text not in self._tokens:
            if len(self._tokens) > 4096:
                self._tokens.clear()
            self._tokens[text] = self.llm.tokenize(text.encode(), add_bos=False, special=True)
        return self._tokens[text]

    def score(
        self, prefix: str, context: str, prompt: str, candidates: Sequence[str]
    ) -> tuple[list[float], int]:
        """(mean token log-probability of each candidate after ``prefix + context +
        prompt``, tokens evaluated for the prompt)."""
        if not candidates or any(not c for c in candidates):
            raise ValueError("candidates must be non-empty strings")
        base = self.ids(prefix) + self.ids(context) + self.ids(prompt)
        if not base:
            raise ValueError("the prompt must not be empty")
        with self.lock:
            llm = self.llm
            held = llm.input_ids[: llm.n_tokens].tolist()
            same = 0
            for a, b in zip(held, base, strict=False):
                if a != b:
                    break
                same += 1
            llm.n_tokens = same  # what llama.cpp already holds of this text is reused
            if same < len(base):
                llm.eval(base[same:])
            out = []
            for cand in candidates:
                c = self.ids(cand)
                if len(base) + len(c) > llm.n_ctx():
                    raise ValueError(f"prompt and candidate exceed the context ({llm.n_ctx()})")
                llm.n_tokens = len(base)
                llm.eval(c)
                rows = np.asarray(llm.scores[len(base) - 1 : len(base) - 1 + len(c)], np.float64)
                top = rows.max(axis=1, keepdims=True)
                norm = top[:, 0] + np.log(np.exp(rows - top).sum(axis=1))
                out.append(float(np.mean(rows[np.arange(len(c)), c] - norm)))
            llm.n_tokens = len(base)
            return out, len(base) - same


def handler(scorer: GGUFScorer) -> type[BaseHTTPRequestHandler]:
    """The HTTP handler: ``POST`` :data:`SCORE_ROUTE`, ``GET /health``; 404 elsewhere."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path == "/health":
                return self._reply(200, {"status": "ok"})
            return self._reply(404, {"error": f"no route {self.path}"})

        def do_POST(self):  # noqa: N802
            if self.path != SCORE_ROUTE:
                return self._reply(404, {"error": f"no route {self.path}"})
            try:
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                scores, n = scorer.score(
                    req.get("prefix", ""),
                    req.get("context", ""),
                    req.get("prompt", ""),
                    list(req["candidates"]),
                )
            except (ValueError, KeyError, TypeError) as err:
                return self._reply(400, {"error": str(err)})
            return self._reply(200, {"scores": scores, "prompt_tokens": n})

        def log_message(self, *args) -> None:  # quiet: one line per request is noise
            pass

    return Handler


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(cmd: Sequence[str], url: str, ready: str, timeout: float = 600.0) -> Iterator[str]:
    """Run the server ``cmd``, yield ``url`` once ``url + ready`` answers, stop it after
    (terminate, then kill). RuntimeError with the end of its stderr if it exits first, or
    after ``timeout`` seconds (a hang guard, not a speed bound)."""
    proc = subprocess.Popen(list(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                urllib.request.urlopen(url + ready, timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode()[-2000:] if proc.poll() is not None else ""
                    raise RuntimeError(f"{cmd[2]} did not start: {err}") from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def load(model: str, n_ctx: int = 4096, threads: int = 1):
    """The GGUF at ``model`` as a ``llama_cpp.Llama`` keeping every position's logits."""
    from llama_cpp import Llama

    return Llama(
        model_path=model,
        n_ctx=n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        logits_all=True,
        verbose=False,
    )


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m memrl.llm.serve", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--model", required=True, help="a GGUF file")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    server = ThreadingHTTPServer(
        (args.host, args.port), handler(GGUFScorer(load(args.model, args.n_ctx, args.threads)))
    )
    print(f"memrl scoring server on http://{args.host}:{args.port}{SCORE_ROUTE}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
