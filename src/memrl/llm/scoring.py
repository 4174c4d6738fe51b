"""Choose among admissible actions by their log-likelihood under a frozen causal LM.

A 135M model asked to *write* an agent's next action loops and rambles; asked to
*score* the admissible actions it is well behaved.  :class:`LLMScorer` scores all
candidates of one decision in one batched forward pass that reuses the prompt's
KV cache, and keeps KV caches of what repeats across decisions, so a decision costs
about one pass over the text that is new to it::

    prefix (static, cached) | context (cached while it recurs) | prompt | candidate_1 ... n

The prefix holds the instructions; the context, e.g. the retrieved exemplars, recurs
across the pages of an episode and is kept in a small LRU of caches.

A candidate's score is the mean log-probability of its tokens (length-normalised, so
long actions are not penalised for their length).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import torch as th

from memrl.llm.models import LoadedModel


class LLMScorer:
    """Score candidate continuations of ``prefix + prompt`` with a loaded causal LM."""

    def __init__(self, loaded: LoadedModel, context_cache: int = 4):
        self.model, self.tok, self.device = loaded.model, loaded.tokenizer, loaded.device
        self._prefix: tuple[str, int, object, th.Tensor] | None = None
        self._contexts: OrderedDict[tuple[str, str], tuple[int, object, th.Tensor]] = OrderedDict()
        self.context_cache = context_cache
        self.tokens_encoded = 0  # prompt tokens run through the model (a cost counter)

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

        ``prefix`` and ``context`` are cached and reused while they recur; ``prompt`` is
        encoded once per call and its cache shared by every candidate (one batched pass).
        """
        if not candidates:
            raise ValueError("no candidate actions to score")
        n_pre, cache, last = self._cached(prefix, context)
        try:
            p_ids = self._ids(prompt)
            if p_ids:
                cache, last = self._forward(p_ids, cache)
            n_ctx = n_pre + len(p_ids)
            c_ids = [self._ids(c) for c in candidates]
            if any(len(c) == 0 for c in c_ids):
                raise ValueError(f"empty candidate among {list(candidates)!r}")
            n, width = len(c_ids), max(len(c) for c in c_ids)
            pad = self.tok.pad_token_id
            x = th.full((n, width), pad, dtype=th.long, device=self.device)
            mask = th.zeros((n, width), dtype=th.long, device=self.device)
            for i, c in enumerate(c_ids):
                x[i, : len(c)] = th.tensor(c)
                mask[i, : len(c)] = 1
            cache.batch_repeat_interleave(n)
            full_mask = th.cat([th.ones((n, n_ctx), dtype=th.long, device=self.device), mask], 1)
            logits = self.model(
                input_ids=x, attention_mask=full_mask, past_key_values=cache, use_cache=True
            ).logits
            # token k of a candidate is predicted by the logits before it: the prompt's last
            # position for k = 0, the candidate's own position k - 1 after that
            pred = th.cat([last.expand(n, 1, -1), logits[:, :-1]], 1).float().log_softmax(-1)
            lp = pred.gather(-1, x.unsqueeze(-1)).squeeze(-1) * mask
            return (lp.sum(1) / mask.sum(1)).cpu().numpy().astype(np.float64)
        finally:
            # back to the cached text alone, batch 1, for the next decision
            cache.batch_select_indices(th.tensor([0], device=self.device))
            extra = cache.get_seq_length() - n_pre
            if extra > 0:
                cache.crop(-extra)  # transformers 5: a negative count removes tokens

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
