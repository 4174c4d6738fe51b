"""Offline sequence policies for the Passive T-Maze: a decision transformer, RATE, and any
memory core of :mod:`memrl.memory.cores`, all trained the same way (behaviour cloning of
oracle trajectories, :mod:`memrl.agents.cloning`) so that only their memory differs.

**Decision transformer** (Chen et al. 2021): the trajectory as tokens
``R_1 o_1 a_1 R_2 o_2 a_2 ...`` (return-to-go, observation, action), a causal transformer,
and ``a_t`` predicted from the output at ``o_t``. It sees a context of ``K`` steps: training
cuts trajectories into segments of ``K`` steps, each on its own; acting, the last ``K`` steps.

**RATE** (Recurrent Action Transformer with Memory, Cherepanov et al. 2023): the same
transformer over the same segments of ``K`` steps, with ``M`` memory tokens around each one,
as the recurrent memory transformer lays them out::

    [m_read (M) | R o a ... (3K tokens) | m_write (M)]       causal attention
    m_read of segment s+1 = output at m_write of segment s  (the first: learned embeddings)

so what the write tokens saw reaches later segments. Training runs the segments of a
trajectory in order as the reference trainer does (CognitiveAISystems/RATE,
``src/trainer.py``): the memory is detached between segments and the optimiser steps once per
segment. ``rate_bptt`` is the variant that back-propagates through the memory across all the
segments of a trajectory, one step per trajectory. Acting, the current segment is re-read
step by step after the memory of the finished ones.

**Recurrent cores** (GRU, LSTM, FFM, S5, window of K): ``[o_t, a_{t-1}, R_t]`` embedded, the
core, a linear head. Trained on the same segments of ``K`` steps, the state carried from one
to the next and detached (truncated backpropagation through time: ``K`` is how far back
gradients reach), one optimiser step per segment. **RTRL** (:class:`RTRLPolicy`): an
element-wise LSTM whose gradients reach back to the trajectory's start by exact real-time
recurrent learning (:mod:`memrl.memory.rtrl`), one step per trajectory. :func:`k_kind` says
what ``K`` is for each.

Deviations from the RATE reference (CognitiveAISystems/RATE, ``run_experiments/TMaze.sh``)
are set by :class:`OfflineParams` and listed by the claims: no Transformer-XL cache and no
Memory Retention Valve (the 2023 version's memory tokens only), learned absolute positions
within a segment instead of relative ones, and the scale.
"""

from __future__ import annotations

from typing import Annotated

import torch as th
from pydantic import AfterValidator, Field
from torch import nn
from torch.nn import functional as F

from memrl.memory.cores import CORES, core_name
from memrl.schema import PosInt, StrictModel

# what K is for each policy: the span it attends to (context), the span its training lets
# gradients reach through its state (truncation), or nothing (none: gradients reach back to
# the trajectory's start); the memory cores say theirs in memrl.memory.cores.CORES
TRANSFORMERS = {
    "dt": "context",
    "rate": "context",  # its memory is detached between segments: no gradient across them
    "rate_bptt": "context",  # its memory back-propagates through every segment
}
RTRL = "rtrl"


def k_kind(model: str) -> str:
    """What the context ``K`` is for ``model``: ``"context"``, ``"truncation"`` or ``"none"``."""
    if model in TRANSFORMERS:
        return TRANSFORMERS[model]
    return "none" if model == RTRL else CORES[core_name(model)].k


def model_name(model: str) -> str:
    """``model`` if it is a policy here: a transformer, a memory core or RTRL."""
    names = [*TRANSFORMERS, *CORES, RTRL]
    if model not in names:
        raise ValueError(f"unknown model {model!r}; choose one of {names}")
    return model


ModelName = Annotated[str, AfterValidator(model_name)]


class OfflineParams(StrictModel):
    """A sequence policy trained by behaviour cloning on oracle T-Maze trajectories."""

    model: ModelName
    context: PosInt  # K: steps per segment (transformers) or frames seen (window)
    sections: PosInt = 3  # training trajectories span 1..sections segments of K steps
    d_model: PosInt = 64
    layers: PosInt = 2
    heads: PosInt = 2
    memory_tokens: PosInt = 4  # RATE's M
    dropout: Annotated[float, Field(ge=0, lt=1)] = 0.1
    learning_rate: Annotated[float, Field(gt=0)] = 3e-4
    weight_decay: Annotated[float, Field(ge=0)] = 0.01
    batch_size: PosInt = 64
    epochs: PosInt = 20
    grad_clip: Annotated[float, Field(gt=0)] = 1.0


# =========================================================================== the models
class TrajectoryTransformer(nn.Module):
    """A decision transformer (``memory_tokens=0``) or RATE (``memory_tokens=M``)."""

    def __init__(self, obs_dim: int, n_actions: int, p: OfflineParams) -> None:
        super().__init__()
        d, self.K = p.d_model, p.context
        self.M = p.memory_tokens if p.model in ("rate", "rate_bptt") else 0
        self.n_actions = n_actions
        self.embed_rtg = nn.Linear(1, d)
        self.embed_obs = nn.Linear(obs_dim, d)
        self.embed_act = nn.Embedding(n_actions, d)
        self.position = nn.Parameter(th.randn(3 * self.K + 2 * self.M, d) * 0.02)
        self.memory = nn.Parameter(th.randn(max(self.M, 1), d) * 0.02)  # the first read
        layer = nn.TransformerEncoderLayer(
            d, p.heads, 4 * d, p.dropout, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, p.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, n_actions)

    def initial_memory(self, batch: int) -> th.Tensor:
        return self.memory[: self.M].expand(batch, self.M, -1)

    def segment(
        self, obs: th.Tensor, act: th.Tensor, rtg: th.Tensor, memory: th.Tensor
    ) -> tuple[th.Tensor, th.Tensor]:
        """One segment of ``T <= K`` steps: action logits (B, T, A) and the memory written.

        ``act`` holds the actions taken (the last one's token is never read by the logits
        of any step, by causality, so acting may pass anything there)."""
        B, T, _ = obs.shape
        tokens = th.stack(
            [self.embed_rtg(rtg[..., None]), self.embed_obs(obs), self.embed_act(act)], 2
        ).reshape(B, 3 * T, -1)  # R_1 o_1 a_1 R_2 ...
        x = th.cat([memory, tokens, memory], 1) if self.M else tokens
        n = x.shape[1]
        pos = self.position[: self.M + 3 * T]
        if self.M:  # the write tokens always sit at the last M positions
            pos = th.cat([pos, self.position[-self.M :]])
        mask = nn.Transformer.generate_square_subsequent_mask(n, device=x.device)
        h = self.norm(self.blocks(x + pos, mask=mask, is_causal=True))
        logits = self.head(h[:, self.M + 1 : self.M + 3 * T : 3])  # at the o_t tokens
        return logits, (h[:, -self.M :] if self.M else memory)

    def forward(self, obs: th.Tensor, act: th.Tensor, rtg: th.Tensor) -> th.Tensor:
        """Training: logits (B, T, A) for whole trajectories cut into segments of K steps,
        the memory carried (RATE) or not (DT) from one to the next."""
        memory, out = self.initial_memory(obs.shape[0]), []
        for s in range(0, obs.shape[1], self.K):
            logits, memory = self.segment(
                obs[:, s : s + self.K], act[:, s : s + self.K], rtg[:, s : s + self.K], memory
            )
            out.append(logits)
        return th.cat(out, 1)


class CorePolicy(nn.Module):
    """``[o_t, a_{t-1}, R_t]`` -> a memory core -> action logits (state: the core's)."""

    def __init__(self, obs_dim: int, n_actions: int, p: OfflineParams) -> None:
        super().__init__()
        from memrl.memory.cores import make_core

        self.n_actions = n_actions
        kw = {"context": p.context} if p.model == "window" else {}
        self.embed = nn.Linear(obs_dim + n_actions + 1, p.d_model)
        self.core = make_core(p.model, p.d_model, p.d_model, **kw)
        self.head = nn.Linear(p.d_model, n_actions)

    def inputs(self, obs: th.Tensor, prev_act: th.Tensor, rtg: th.Tensor) -> th.Tensor:
        """``prev_act`` -1: no action yet (the first step), embedded as zeros."""
        a = F.one_hot(prev_act.clamp(min=0), self.n_actions).to(obs) * (prev_act >= 0)[..., None]
        return F.relu(self.embed(th.cat([obs, a, rtg[..., None]], -1)))

    def forward(self, obs: th.Tensor, act: th.Tensor, rtg: th.Tensor) -> th.Tensor:
        prev = F.pad(act[:, :-1], (1, 0), value=-1)
        y, _ = self.core(self.inputs(obs, prev, rtg), self.core.initial_state(len(obs)))
        return self.head(y)


class RTRLPolicy(CorePolicy):
    """``[o_t, a_{t-1}, R_t]`` as they are -> the element-wise LSTM trained by exact RTRL
    (:mod:`memrl.memory.rtrl`) -> action logits. No trained layer below the core: RTRL's
    sensitivities would have to cover it too (Irie et al. put the eLSTM first likewise)."""

    def __init__(self, obs_dim: int, n_actions: int, p: OfflineParams) -> None:
        nn.Module.__init__(self)
        from memrl.memory.rtrl import ELSTM

        self.n_actions = n_actions
        self.core = ELSTM(obs_dim + n_actions + 1, p.d_model)
        self.head = nn.Linear(p.d_model, n_actions)

    def inputs(self, obs: th.Tensor, prev_act: th.Tensor, rtg: th.Tensor) -> th.Tensor:
        a = F.one_hot(prev_act.clamp(min=0), self.n_actions).to(obs) * (prev_act >= 0)[..., None]
        return th.cat([obs, a, rtg[..., None]], -1)


def make_policy(obs_dim: int, n_actions: int, p: OfflineParams) -> nn.Module:
    if p.model in TRANSFORMERS:
        return TrajectoryTransformer(obs_dim, n_actions, p)
    if p.model == RTRL:
        return RTRLPolicy(obs_dim, n_actions, p)
    return CorePolicy(obs_dim, n_actions, p)
