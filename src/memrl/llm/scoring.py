"""Choose among admissible actions by their log-likelihood under a frozen causal LM.

A 135M model asked to *write* an agent's next action loops and rambles; asked to
*score* the admissible actions it is well behaved.  :class:`LLMScorer` scores all
candidates of one decision in the same forward pass as the prompt, and keeps KV caches of
what repeats across decisions, so a decision costs about one pass over the text that is
new to it::

    prefix (static, cached) | context (cached while it recurs) | prompt | candidate_1 ... n

The prefix holds the instructions; the context, e.g. the retrieved exemplars, recurs
across the pages of an episode and is kept in a small LRU of caches.

The prompt and all candidates go through the model in *one* forward pass, laid out as one
sequence ``prompt | cand_1 | cand_2 | ...`` with a tree-shaped attention mask (each candidate
sees the cached text, the prompt and its own earlier tokens, never another candidate) and
position ids that restart every candidate right after the prompt.  On a CPU a pass over a
few dozen tokens costs mostly the read of the weights (~70 ms for SmolLM2-135M here), so one
pass instead of a prompt pass plus a batched candidate pass saves that read per decision.

A candidate's score is the mean log-probability of its tokens (length-normalised, so
long actions are not penalised for their length).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch as th

from memrl.llm.models import LoadedModel


class Scorer:
    """What the agents call: ``score`` the candidates (in-process here, or through a server:
    :class:`memrl.llm.server.ServerScorer`) and ``choose`` one of them."""

    backend = ""
    model_name = ""
    tokens_encoded = 0  # prompt tokens read by the model (a cost counter)
    decisions = 0  # score calls

    def usage(self) -> dict[str, Any]:
        """Backend, model and the counters so far (a job records the change over its run)."""
        return {
            "backend": self.backend,
            "model": self.model_name,
            "decisions": self.decisions,
            "tokens": self.tokens_encoded,
        }

    def score(
        self, prefix: str, prompt: str, candidates: Sequence[str], context: str = ""
    ) -> np.ndarray:
        """Mean token log-probability of each candidate after ``prefix + context + prompt``."""
        raise NotImplementedError

    def choose(
        self,
        prefix: str,
        prompt: str,
        candidates: Sequence[str],
        temperature: float,
        rng: np.random.Generator,
        context: str = "",
    ) -> int:
        """Index of the chosen candidate: a softmax sample at ``temperature`` (0: argmax)."""
        s = self.score(prefix, prompt, candidates, context)
        if temperature <= 0:
            return int(np.argmax(s))
        z = (s - s.max()) / temperature
        p = np.exp(z) / np.exp(z).sum()
        return int(rng.choice(len(s), p=p))


class LLMScorer(Scorer):
    """Score candidate continuations of ``prefix + prompt`` with a loaded causal LM."""

    backend = "inprocess"

    def __init__(self, loaded: LoadedModel, context_cache: int = 4):
        self.model, self.tok, self.device = loaded.model, loaded.tokenizer, loaded.device
        self.model_name = loaded.name
        self._prefix: tuple[str, int, object, th.Tensor] | None = None
        self._contexts: OrderedDict[tuple[str, str], tuple[int, object, th.Tensor]] = OrderedDict()
        self.context_cache = context_cache
        self.tokens_encoded = 0  # prompt tokens run through the model (a cost counter)

    def forget(self) -> None:
        """Drop the cached prefix and contexts: what a job computes and counts (its
        ``tokens``) then does not depend on the jobs this process ran before."""
        self._prefix = None
        self._contexts.clear()

    def _ids(self, text: str) -> list[int]:
        return self.tok(text, add_special_tokens=False)["input_ids"]

    @th.inference_mode()
    def _forward(self, ids: list[int], cache) -> tuple[object, th.Tensor]:
        from transformers import DynamicCache

        cache = DynamicCache() if cache is None else cache
        x = th.tensor([ids], device=self.device)
        # only the last position's logits are needed: skips the LM head on the rest
        out = self.model(input_ids=x, past_key_values=cache, use_cache=True, logits_to_keep=1)
        self.tokens_encoded += len(ids)
        return out.past_key_values, out.logits[0, -1]

    def _cached(self, prefix: str, context: str) -> tuple[int, object, th.Tensor]:
        """(length, KV cache, last logits) of ``prefix + context``, computed once while recent."""
        if self._prefix is None or self._prefix[0] != prefix:
            ids = self._ids(prefix)
            if not ids:
                raise ValueError("the static prefix must not be empty")
            cache, last = self._forward(ids, None)
            self._prefix = (prefix, len(ids), cache, last)
            self._contexts.clear()
        _, n_pre, pre_cache, pre_last = self._prefix
        if not context:
            return n_pre, pre_cache, pre_last
        key = (prefix, context)
        if key in self._contexts:
            self._contexts.move_to_end(key)
        else:
            ids = self._ids(context)
            cache, last = self._forward(ids, copy.deepcopy(pre_cache))
            self._contexts[key] = (n_pre + len(ids), cache, last)
            while len(self._contexts) > self.context_cache:
                self._contexts.popitem(last=False)
        return self._contexts[key]

    @th.inference_mode()
    def score(
        self, prefix: str, prompt: str, candidates: Sequence[str], context: str = ""
    ) -> np.ndarray:
        """Mean token log-probability of each candidate after ``prefix + context + prompt``.

        ``prefix`` and ``context`` are cached and reused while they recur; ``prompt`` and the
        candidates go through the model together, in one pass (see the module's docstring).
        """
        if not candidates:
            raise ValueError("no candidate actions to score")
        self.decisions += 1
        n_pre, cache, last = self._cached(prefix, context)
        p_ids = self._ids(prompt)
        c_ids = [self._ids(c) for c in candidates]
        if any(len(c) == 0 for c in c_ids):
            raise ValueError(f"empty candidate among {list(candidates)!r}")
        n_p, lens = len(p_ids), [len(c) for c in c_ids]
        n_q = n_p + sum(lens)  # query length: the prompt, then every candidate
        # attention: everything attends to the cached text; the prompt is causal; candidate
        # tokens see the prompt and their own earlier tokens only
        allowed = th.zeros((n_q, n_pre + n_q), dtype=th.bool, device=self.device)
        allowed[:, : n_pre + n_p] = True
        allowed[:n_p, n_pre : n_pre + n_p] = th.ones(n_p, n_p, dtype=th.bool).tril()
        pos = list(range(n_pre, n_pre + n_p))
        pred = []  # per candidate token, the query row whose logits predict it (-1: `last`)
        start = n_p
        for n in lens:
            allowed[start : start + n, n_pre + start : n_pre + start + n] = th.ones(
                n, n, dtype=th.bool
            ).tril()
            pos += range(n_pre + n_p, n_pre + n_p + n)
            pred += [n_p - 1] + list(range(start, start + n - 1))
            start += n
        ids = th.tensor([p_ids + sum(c_ids, [])], device=self.device)
        first = max(n_p - 1, 0)  # the first query row whose logits are needed
        try:
            out = self.model(
                input_ids=ids,
                attention_mask=allowed[None, None],
                position_ids=th.tensor([pos], device=self.device),
                past_key_values=cache,
                use_cache=True,
                logits_to_keep=n_q - first,
            )
            self.tokens_encoded += n_p
            logits = th.cat([last[None], out.logits[0]]).float().log_softmax(-1)
            rows = th.tensor(pred, device=self.device) - first + 1  # row 0 is `last`
            lp = logits[rows, ids[0, n_p:]]
            return np.array([t.sum().item() / len(t) for t in lp.split(lens)], dtype=np.float64)
        finally:
            # back to the cached text alone for the next decision
            extra = cache.get_seq_length() - n_pre
            if extra > 0:
                cache.crop(-extra)  # transformers 5: a negative count removes tokens
