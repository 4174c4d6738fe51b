"""Score candidate actions through an LLM server: memrl's own scoring route
(:mod:`memrl.llm.serve`, one request per decision) where the server has it, else any
OpenAI-compatible ``/v1/completions``.

:class:`ServerScorer` computes what :class:`memrl.llm.scoring.LLMScorer` computes in-process
(the mean token log-probability of each candidate after ``prefix + context + prompt``), so
the agents and the verdicts never know which backend scored. Per candidate it sends::

    POST {url}/v1/completions
    {"model": ..., "prompt": prefix + context + prompt + candidate,
     "echo": true, "logprobs": 1, "max_tokens": 1, "temperature": 0}

and averages the returned prompt-token log-probabilities of the tokens whose text offset
falls inside the candidate. vLLM and llama-cpp-python's server (``python -m
llama_cpp.server``) answer this; llama.cpp's own ``llama-server`` ignores ``echo`` on this
route, which :meth:`ServerScorer.check` reports as a server that cannot score.

One caveat is the server's, not ours: llama-cpp-python pairs each echoed token with the
logits of its *own* position, which is right only when the prompt starts with a BOS token.
For a model whose GGUF does not add one (SmolLM2), serve it with
``--kv_overrides tokenizer.ggml.add_bos_token=bool:true`` (docs/llm-server.md); the
in-process scorer then matches it when its prefix starts with that BOS token.

Faults give one :class:`ServerError` naming the URL and what was expected: a server that is
down or too slow (after ``retries`` further tries, each bounded by ``timeout`` seconds), a
wrong URL (an HTTP error), or a reply that is not the JSON the protocol promises.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

import numpy as np

from memrl.llm.scoring import Scorer

ROUTE = "/v1/completions"
SCORE_ROUTE = "/memrl/v1/score"  # memrl.llm.serve's route: one request per decision


class ServerError(RuntimeError):
    """The LLM server could not be used; the message names the URL and the fix."""


class ServerScorer(Scorer):
    """Score candidates with the model served at ``url`` (see the module's docstring).

    :param url: the server's base URL, e.g. ``http://127.0.0.1:8080``
    :param model: the model name sent with each request (as the server serves it)
    :param timeout: seconds one request may take
    :param retries: further tries after a connection failure or a timeout (HTTP errors and
        malformed replies are not retried: they would answer the same)
    """

    backend = "server"

    def __init__(self, url: str, model: str, timeout: float = 60.0, retries: int = 2):
        self.url, self.model_name = url.rstrip("/"), model
        self.route = SCORE_ROUTE  # memrl's own route until the server shows it lacks it
        self.timeout, self.retries = float(timeout), int(retries)
        self.tokens_encoded = 0  # prompt tokens the server read (its `usage`), a cost counter
        self.decisions = 0  # score calls
        self.requests = 0

    @property
    def endpoint(self) -> str:
        """The URL requests go to: memrl's scoring route, or the OpenAI completions one."""
        return self.url + self.route

    def _post(self, body: dict[str, Any], absent_ok: bool = False) -> dict[str, Any] | None:
        """The JSON reply to ``body`` at :attr:`endpoint` (None for a route the server does
        not have, with ``absent_ok``)."""
        data = json.dumps(body).encode()
        req = urllib.request.Request(
            self.endpoint, data=data, headers={"Content-Type": "application/json"}
        )
        last = ""
        for attempt in range(self.retries + 1):
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as reply:
                    raw = reply.read()
                break
            except urllib.error.HTTPError as err:
                if absent_ok and err.code in (404, 405):
                    return None
                detail = err.read()[:200].decode("utf-8", "replace")
                raise ServerError(
                    f"LLM server {self.endpoint}: HTTP {err.code} {err.reason} ({detail!r}); "
                    "expected an OpenAI-compatible completions route: check llm.url "
                    "(the base URL, without /v1)"
                ) from None
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as err:
                reason = getattr(err, "reason", err)
                last = f"{type(reason).__name__}: {reason}"
                if attempt < self.retries:
                    time.sleep(min(2.0**attempt, 5.0))
        else:
            raise ServerError(
                f"LLM server {self.endpoint} did not answer ({last}) in {self.retries + 1} "
                f"tries of at most {self.timeout:g} s: start it (docs/llm-server.md) or set "
                "llm.backend: inprocess"
            )
        self.requests += 1
        try:
            return json.loads(raw)
        except ValueError:
            raise ServerError(
                f"LLM server {self.endpoint} replied with something that is not JSON "
                f"({raw[:120].decode('utf-8', 'replace')!r}); expected a JSON reply"
            ) from None

    def _candidate_logprobs(self, text: str, candidate: str) -> list[float]:
        reply = self._post(
            {
                "model": self.model_name,
                "prompt": text + candidate,
                "echo": True,
                "logprobs": 1,
                "max_tokens": 1,
                "temperature": 0.0,
            }
        )
        try:
            lp = reply["choices"][0]["logprobs"]
            offsets, values = lp["text_offset"], lp["token_logprobs"]
            usage = reply.get("usage") or {}
        except (KeyError, IndexError, TypeError):
            raise ServerError(
                f"LLM server {self.endpoint} sent no prompt log-probabilities "
                f"(reply keys {sorted(reply) if isinstance(reply, dict) else type(reply)}); "
                "expected choices[0].logprobs with text_offset and token_logprobs: the server "
                "must honour echo + logprobs (vLLM and llama-cpp-python do; llama.cpp's "
                "llama-server does not)"
            ) from None
        start, end = len(text), len(text) + len(candidate)
        picked = [v for o, v in zip(offsets, values, strict=False) if start <= o < end]
        if not picked or any(v is None for v in picked):
            raise ServerError(
                f"LLM server {self.endpoint} echoed no log-probabilities for the candidate "
                f"{candidate!r}: it ignores echo (llama.cpp's llama-server does); use vLLM or "
                "llama-cpp-python's server"
            )
        self.tokens_encoded += int(usage.get("prompt_tokens", 0))
        return [float(v) for v in picked]

    def score(
        self, prefix: str, prompt: str, candidates: Sequence[str], context: str = ""
    ) -> np.ndarray:
        """Mean token log-probability of each candidate after ``prefix + context + prompt``."""
        if not candidates:
            raise ValueError("no candidate actions to score")
        if any(not c for c in candidates):
            raise ValueError(f"empty candidate among {list(candidates)!r}")
        self.decisions += 1
        if self.route == SCORE_ROUTE:  # one request per decision (memrl.llm.serve)
            reply = self._post(
                {
                    "prefix": prefix,
                    "context": context,
                    "prompt": prompt,
                    "candidates": list(candidates),
                },
                absent_ok=True,
            )
            scores = reply.get("scores") if isinstance(reply, dict) else None
            if isinstance(scores, list) and len(scores) == len(candidates):
                self.tokens_encoded += int(reply.get("prompt_tokens", 0))
                return np.array(scores, dtype=np.float64)
            self.route = ROUTE  # an OpenAI-compatible server: one echo request per candidate
        text = prefix + context + prompt
        return np.array(
            [np.mean(self._candidate_logprobs(text, c)) for c in candidates], dtype=np.float64
        )

    def check(self) -> None:
        """One tiny scoring request: raises :class:`ServerError` unless the server scores."""
        self.score("The sky is", "", [" blue", " green"])
