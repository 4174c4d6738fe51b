"""The LLM server backend (:mod:`memrl.llm.server`).

Against a real server: llama-cpp-python's OpenAI-compatible server on the SmolLM2 GGUF the
project installs (``make test`` builds it once per machine; without it these tests say why
they skip). REMEMBERER decisions and Memory-R1 operations recorded from the agents' own code
are scored through it and in-process, and must choose alike.

Faults: a server that is down, too slow, at a wrong URL or answering malformed JSON each
give one :class:`ServerError` naming the URL, after the configured tries (the faulty servers
here are small local HTTP servers that misbehave on purpose). No test here bounds a wall
time: a slow server holds its answer until the test ends, so only a timeout that fired can
explain the error the client reports.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import torch as th

from memrl.config import ConfigError
from memrl.families import load_family
from memrl.llm.scoring import LLMScorer, Scorer
from memrl.llm.serve import free_port, served
from memrl.llm.server import SCORE_ROUTE, ServerError, ServerScorer

BOS = "<|im_start|>"  # SmolLM2's BOS token, which the server is told to prepend


# =========================================================================== faults
class _Faulty(BaseHTTPRequestHandler):
    mode = "json"
    requests: list[str]  # the paths asked for, one per try
    release: threading.Event  # a slow server answers once the test has ended

    def do_POST(self):  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.requests.append(self.path)
        if self.mode == "slow":
            self.release.wait(60)  # then a well-formed reply: a client without a timeout
            # would report its content ("no prompt log-prob"), not "did not answer"
        if self.mode == "missing":
            self.send_error(404, "Not Found")
            return
        body = b"<html>not json</html>" if self.mode == "garbage" else b'{"choices": []}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def faulty():
    """A local HTTP server whose behaviour the test sets: ``faulty(mode) -> url``; the
    requests it got are ``faulty.requests[url]``."""
    servers, release = [], threading.Event()

    def start(mode: str) -> str:
        requests: list[str] = []
        handler = type("Handler", (_Faulty,), {"mode": mode, "requests": requests})
        handler.release = release
        srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        url = f"http://127.0.0.1:{srv.server_address[1]}"
        start.requests[url] = requests
        return url

    start.requests = {}
    yield start
    release.set()
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _fails(scorer: ServerScorer, *words: str) -> str:
    with pytest.raises(ServerError) as err:
        scorer.check()
    msg = str(err.value)
    assert scorer.endpoint in msg and "\n" not in msg
    for w in words:
        assert w in msg
    return msg


def test_a_down_server_fails_once_naming_the_url():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    _fails(ServerScorer(url, "m", timeout=1.0, retries=1), "did not answer", "2 tries")


def test_a_slow_server_fails_by_the_timeout_after_each_try(faulty):
    """The server holds every answer until the test ends: the error can only come from the
    client's timeout, once per try (1 + retries)."""
    url = faulty("slow")
    _fails(ServerScorer(url, "m", timeout=0.3, retries=1), "did not answer", "0.3 s", "2 tries")
    assert len(faulty.requests[url]) == 2


def test_a_wrong_url_and_malformed_replies_fail_with_what_was_expected(faulty):
    _fails(ServerScorer(faulty("missing"), "m", timeout=2), "HTTP 404", "llm.url")
    _fails(ServerScorer(faulty("garbage"), "m", timeout=2), "not JSON")
    _fails(ServerScorer(faulty("json"), "m", timeout=2), "no prompt log-prob")


def test_server_params_are_checked_before_any_run(tmp_path):
    with pytest.raises(ConfigError, match="llm.url"):
        load_family("llm_memory_rl", "smoke", overrides={"llm": {"backend": "server"}})
    from memrl.families.llm_memory_rl.jobs import preflight

    down = {"llm": {"backend": "server", "url": f"http://127.0.0.1:{free_port()}"}}
    cfg = load_family("llm_memory_rl", "smoke", overrides=down)
    cfg = cfg.model_copy(update={"llm": cfg.llm.model_copy(update={"retries": 0})})
    with pytest.raises(ServerError, match="did not answer"):
        preflight(cfg)


# =========================================================================== a real server
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """llama-cpp-python's server on SmolLM2 (BOS prepended, see memrl.llm.server), stopped
    with the module's tests."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: `make test` builds it (make llm-server)")
    from memrl.llm.models import smollm2_gguf

    port = free_port()
    config = tmp_path_factory.mktemp("llm-server") / "config.json"
    config.write_text(
        json.dumps(
            {
                "host": "127.0.0.1",
                "port": port,
                "models": [
                    {
                        "model": str(smollm2_gguf()),
                        "model_alias": "smollm2",
                        "n_ctx": 4096,
                        "n_threads": 2,
                        "n_threads_batch": 2,
                        "logits_all": True,
                        "kv_overrides": ["tokenizer.ggml.add_bos_token=bool:true"],
                        "verbose": False,
                    }
                ],
            }
        )
    )
    yield from _serve(
        [sys.executable, "-m", "llama_cpp.server", "--config_file", str(config)],
        f"http://127.0.0.1:{port}",
        "/v1/models",
    )


def _serve(cmd: list[str], url: str, ready: str):
    """Start a server process, yield its URL once ``ready`` answers, stop it after."""
    with contextlib.ExitStack() as stack:
        try:
            up = stack.enter_context(served(cmd, url, ready))
        except RuntimeError as err:
            pytest.fail(str(err))
        yield up


@pytest.fixture(scope="module")
def scoring_server():
    """memrl's own scoring server (memrl.llm.serve) on the same GGUF."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: `make test` builds it (make llm-server)")
    from memrl.llm.models import smollm2_gguf

    port = free_port()
    cmd = [sys.executable, "-m", "memrl.llm.serve", "--model", str(smollm2_gguf())]
    yield from _serve(
        [*cmd, "--port", str(port), "--threads", "2"], f"http://127.0.0.1:{port}", "/health"
    )


class _Recorder(Scorer):
    """Scores with ``inner`` and keeps every decision's arguments."""

    def __init__(self, inner: Scorer):
        self.inner, self.calls = inner, []

    def score(self, prefix: str, prompt: str, candidates: Sequence[str], context: str = ""):
        self.calls.append((prefix, prompt, list(candidates), context))
        return self.inner.score(prefix, prompt, candidates, context)


@pytest.fixture(scope="module")
def smollm2():
    from memrl.llm.models import load_model

    th.set_num_threads(2)
    return LLMScorer(load_model("smollm2"))


@pytest.fixture(scope="module")
def decisions(smollm2):
    """A fixed set of decisions, recorded from the agents' own code: REMEMBERER acting in
    the shop (its first test task) and Memory-R1's prompted manager choosing operations."""
    from memrl.agents import memory_r1 as mr1
    from memrl.agents.rlem import RLEMAgent
    from memrl.envs.dialogue import load_dialogues
    from memrl.envs.shop import ShopEnv, load_shop
    from memrl.llm.embeddings import Embedder
    from memrl.runtime import repo_root

    rec = _Recorder(smollm2)
    products, splits = load_shop(repo_root() / "data" / "shop")
    agent = RLEMAgent(rec, Embedder("hashing"), None, "llm", np.random.default_rng(0))
    agent.run_episode(ShopEnv(products, max_steps=2), splits["test"][0], learn=False)
    conv = load_dialogues(repo_root() / "data" / "dialogues")["test"][0]
    manager, bank = mr1.PromptedManager(rec, k=2), mr1.MemoryBank(Embedder("hashing").embed)
    for turn in conv.turns[:4]:
        bank = bank.apply(manager.decide(bank, turn.fact), turn.fact)
    assert len(rec.calls) >= 6
    return rec.calls


def test_the_server_backend_chooses_as_the_in_process_one(server, smollm2, decisions):
    """Same decisions, same choices; and the same numbers when both read the same tokens
    (in-process given the BOS the server prepends): the verdict code cannot tell them apart."""
    remote = ServerScorer(server, "smollm2", timeout=300, retries=0)
    same, ours_bos, theirs_all = [], [], []
    # llama-cpp-python's echo route takes ~130 s a decision here (it sorts the vocabulary in
    # Python for every prompt token): the two shortest decisions here; memrl's own route
    # scores all of them (the test below)
    picked = sorted(decisions, key=lambda d: len("".join(d[:2]) + d[3]) * len(d[2]))[:2]
    for prefix, prompt, cands, context in picked:
        ours = smollm2.score(prefix, prompt, cands, context)
        theirs = remote.score(prefix, prompt, cands, context)
        same.append(int(np.argmax(ours)) == int(np.argmax(theirs)))
        ours_bos += list(smollm2.score(BOS + prefix, prompt, cands, context))
        theirs_all += list(theirs)
    assert all(same), f"choices differ in {same.count(False)} of {len(same)} decisions"
    # the same tokens scored: equal up to llama.cpp's Q4_1 x Q8 kernels against the
    # dequantised fp32 weights in-process (seen: |difference| <= 0.21 nats per token)
    diff = np.abs(np.array(ours_bos) - np.array(theirs_all))
    assert diff.max() < 0.5 and np.corrcoef(ours_bos, theirs_all)[0, 1] > 0.98, diff
    assert remote.usage()["decisions"] == len(picked) and remote.tokens_encoded > 0


def test_a_profile_on_the_server_passes_preflight_and_is_priced_per_decision(scoring_server):
    """On memrl's route (llama-cpp-python's echo route took 369 s for these two decisions of
    the family's usual size; its answers are checked above)."""
    from memrl.families.llm_memory_rl.jobs import decision_seconds, preflight

    served = {"llm": {"backend": "server", "url": scoring_server, "model": "smollm2"}}
    cfg = load_family("llm_memory_rl", "smoke", overrides=served)
    preflight(cfg)  # one small scoring request: the server scores
    seconds = decision_seconds(cfg, repeats=1)
    # a price, not a speed: how fast the server is belongs in benchmarks/llm_scoring.py
    assert seconds is not None and math.isfinite(seconds) and seconds > 0
    assert decision_seconds(load_family("llm_memory_rl", "smoke")) is None  # in-process


def test_memrls_route_scores_as_the_in_process_scorer_in_one_request_per_decision(
    scoring_server, smollm2, decisions
):
    """memrl.llm.serve tokenizes as the in-process scorer (no BOS) and answers a decision in
    one request: the same numbers up to llama.cpp's quantised kernels, so the same choice
    wherever the in-process scorer's margin between its two best candidates exceeds twice
    the numbers' largest difference on that decision. (A near-tie may flip: on an Intel Xeon,
    llama.cpp's AVX2 kernels scored one decision's NOOP and UPDATE -1.342 and -1.336 where
    torch gives -1.256 and -1.284: a margin of 0.028 under differences of up to 0.22.)"""
    remote = ServerScorer(scoring_server, "smollm2", timeout=120, retries=0)
    ours, theirs, decisive, same = [], [], [], []
    for prefix, prompt, cands, context in decisions:
        a = smollm2.score(prefix, prompt, cands, context)
        b = remote.score(prefix, prompt, cands, context)
        top2 = np.sort(a)[-2:]
        decisive.append(top2[1] - top2[0] > 2 * np.abs(np.asarray(a) - np.asarray(b)).max())
        same.append(int(np.argmax(a)) == int(np.argmax(b)))
        ours += list(a)
        theirs += list(b)
    assert remote.route == SCORE_ROUTE and remote.requests == len(decisions)
    flipped = [i for i, (d, s) in enumerate(zip(decisive, same, strict=True)) if d and not s]
    assert flipped == [], f"decisive choices differ: decisions {flipped}"
    # so that choices are compared at all (3 of the 6 are decisive on that Xeon)
    assert sum(decisive) >= len(decisions) // 2, f"only {sum(decisive)} decisive decisions"
    diff = np.abs(np.array(ours) - np.array(theirs))
    assert diff.max() < 0.5 and np.corrcoef(ours, theirs)[0, 1] > 0.98, diff
