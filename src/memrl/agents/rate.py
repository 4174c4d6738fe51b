"""Offline sequence policies for the Passive T-Maze: a decision transformer, RATE, and any
memory core of :mod:`memrl.memory.cores`, all trained the same way (behaviour cloning of
oracle trajectories) so that only their memory differs.

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
trajectory in order and back-propagates through the memory across all of them; acting, the
current segment is re-read step by step after the memory of the finished ones.

**Recurrent cores** (GRU, LSTM, FFM, S5, window of K): ``[o_t, a_{t-1}, R_t]`` embedded, the
core over the whole trajectory (its state is its memory), a linear head.

Deviations from the RATE reference (CognitiveAISystems/RATE, ``run_experiments/TMaze.sh``)
are set by :class:`OfflineParams` and listed by the claims: no Transformer-XL cache and no
Memory Retention Valve (the 2023 version's memory tokens only), learned absolute positions
within a segment instead of relative ones, and the scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal, NamedTuple

import numpy as np
import torch as th
from pydantic import Field
from torch import nn
from torch.nn import functional as F

from memrl.schema import PosInt, StrictModel


class OfflineParams(StrictModel):
    """A sequence policy trained by behaviour cloning on oracle T-Maze trajectories."""

    model: Literal["dt", "rate", "gru", "lstm", "ffm", "s5", "window"]
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


class Trajectories(NamedTuple):
    """Oracle trajectories of one corridor length: (N, T, .) arrays."""

    observations: np.ndarray  # float32 (N, T, obs_dim)
    actions: np.ndarray  # int64 (N, T)
    returns_to_go: np.ndarray  # float32 (N, T)


# =========================================================================== the models
class TrajectoryTransformer(nn.Module):
    """A decision transformer (``memory_tokens=0``) or RATE (``memory_tokens=M``)."""

    def __init__(self, obs_dim: int, n_actions: int, p: OfflineParams) -> None:
        super().__init__()
        d, self.K = p.d_model, p.context
        self.M = p.memory_tokens if p.model == "rate" else 0
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


def make_policy(obs_dim: int, n_actions: int, p: OfflineParams) -> nn.Module:
    if p.model in ("dt", "rate"):
        return TrajectoryTransformer(obs_dim, n_actions, p)
    return CorePolicy(obs_dim, n_actions, p)


# =========================================================================== training
def train(
    data: Sequence[Trajectories], p: OfflineParams, seed: int, device: str = "cpu"
) -> tuple[nn.Module, list[float]]:
    """Behaviour cloning: cross-entropy of the oracle's actions at every step, Adam(W),
    ``p.epochs`` passes over every trajectory (batches of one length at a time, shuffled).

    :return: the trained policy and the mean loss of each epoch.
    """
    g = th.Generator().manual_seed(seed)
    obs_dim, n_actions = data[0].observations.shape[-1], int(max(d.actions.max() for d in data)) + 1
    policy = make_policy(obs_dim, max(n_actions, 2), p).to(device)
    opt = th.optim.AdamW(policy.parameters(), lr=p.learning_rate, weight_decay=p.weight_decay)
    tensors = [
        tuple(th.as_tensor(a, device=device) for a in (d.observations, d.actions, d.returns_to_go))
        for d in data
    ]
    batches = [(i, j) for i, d in enumerate(data) for j in range(0, len(d.actions), p.batch_size)]
    losses = []
    policy.train()
    for _ in range(p.epochs):
        total, count = 0.0, 0
        perms = [th.randperm(len(d.actions), generator=g) for d in data]
        for k in th.randperm(len(batches), generator=g).tolist():
            i, j = batches[k]
            idx = perms[i][j : j + p.batch_size]
            obs, act, rtg = (t[idx] for t in tensors[i])
            logits = policy(obs, act, rtg)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), act.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), p.grad_clip)
            opt.step()
            total, count = total + loss.item() * len(idx), count + len(idx)
        losses.append(total / count)
    return policy, losses


# =========================================================================== acting
class Actor:
    """Acting one step at a time, as training read the trajectory: a core in step mode from
    its carried state; RATE over the current segment after the memory of the finished ones;
    the decision transformer over the last ``K`` steps.

    ``obs``, ``act``, ``rtg``: (n, T, .) buffers the caller fills, ``act`` up to ``t - 1``."""

    def __init__(self, policy: nn.Module, n: int) -> None:
        self.policy, self.n = policy, n
        self.state = policy.core.initial_state(n) if isinstance(policy, CorePolicy) else None
        self.memory = (
            policy.initial_memory(n) if isinstance(policy, TrajectoryTransformer) else None
        )

    @th.no_grad()
    def logits(self, t: int, obs: th.Tensor, act: th.Tensor, rtg: th.Tensor) -> th.Tensor:
        p = self.policy
        if isinstance(p, CorePolicy):
            prev = act[:, t - 1] if t else th.full((self.n,), -1)
            y, self.state = p.core.step(p.inputs(obs[:, t], prev, rtg[:, t]), self.state)
            return p.head(y)
        K = p.K
        if p.M and t and t % K == 0:  # a segment finished: write its memory
            s = slice(t - K, t)
            _, self.memory = p.segment(obs[:, s], act[:, s], rtg[:, s], self.memory)
        w = slice((t // K) * K if p.M else max(0, t - K + 1), t + 1)
        return p.segment(obs[:, w], act[:, w], rtg[:, w], self.memory)[0][:, -1]


@th.no_grad()
def success_rate(policy: nn.Module, length: int, episodes: int, seed: int) -> float:
    """Greedy success rate on ``episodes`` Passive T-Mazes of corridor ``length``, run side
    by side (every episode lasts ``length`` steps); env ``i`` seeded ``seed + i``."""
    from memrl.envs.pomdp import PassiveTMaze

    policy.eval()
    envs = [PassiveTMaze(length) for _ in range(episodes)]
    first = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    n = episodes
    obs = th.zeros(n, length, len(first[0]))
    act = th.zeros(n, length, dtype=th.long)
    rtg = th.ones(n, length)  # condition on success
    obs[:, 0] = th.as_tensor(np.stack(first))
    successes = np.zeros(n)
    actor = Actor(policy, n)
    for t in range(length):
        a = actor.logits(t, obs, act, rtg).argmax(-1)
        act[:, t] = a
        for i, env in enumerate(envs):
            o, r, done, _, _ = env.step(int(a[i]))
            if done:
                successes[i] = r
            elif t + 1 < length:
                obs[i, t + 1] = th.as_tensor(o)
    return float(successes.mean())


# =========================================================================== the data
ORACLE_DIR = "data/tmaze"  # repo-relative; built by `python -m memrl data build`, in data.dvc
ORACLE_LENGTHS = (1, 2, 4, 8, 16, 24, 32, 48)  # corridors the data set holds
ORACLE_EPISODES = 256  # oracle runs per corridor
_ARRAYS = ("observations", "actions", "returns_to_go")


def oracle_trajectories(length: int, episodes: int, seed: int) -> Trajectories:
    """``episodes`` Passive T-Maze episodes of corridor ``length`` played by the oracle:
    action 0 in the corridor (any action advances; a constant one carries no cue), the
    cue's turn at the junction; every one succeeds, so the return-to-go is 1 throughout.
    Env ``i`` is reset with seed ``seed + i``."""
    from memrl.envs.pomdp import PassiveTMaze

    env = PassiveTMaze(length)
    obs = np.zeros((episodes, length, 2), np.float32)
    act = np.zeros((episodes, length), np.int64)
    for i in range(episodes):
        o, info = env.reset(seed=seed + i)
        for t in range(length):
            obs[i, t] = o
            act[i, t] = (1 if info["cue"] == 1 else 0) if t == length - 1 else 0
            o, r, done, _, _ = env.step(int(act[i, t]))
        assert done and r == 1.0, "the oracle always succeeds"
    return Trajectories(obs, act, np.ones((episodes, length), np.float32))


def save_oracle(root: str | Path) -> Path:
    """Write the oracle data set into ``root`` (one folder per corridor, one ``.npy`` per
    array: byte-identical on every build), replacing it whole only once complete."""
    from memrl.runtime import atomic_dir

    with atomic_dir(root) as tmp:
        for L in ORACLE_LENGTHS:
            d = oracle_trajectories(L, ORACLE_EPISODES, 1000 * L)
            (tmp / f"L{L}").mkdir()
            for name, a in zip(_ARRAYS, d, strict=True):
                np.save(tmp / f"L{L}" / f"{name}.npy", a)
    return Path(root)


def load_oracle(root: str | Path, lengths: Sequence[int], episodes: int) -> list[Trajectories]:
    """The first ``episodes`` oracle runs of each corridor in ``lengths`` from ``root``."""
    root = Path(root)
    out = []
    for L in lengths:
        files = [root / f"L{L}" / f"{name}.npy" for name in _ARRAYS]
        if not all(f.is_file() for f in files):
            raise FileNotFoundError(
                f"{root} has no oracle runs of corridor {L} (it holds {ORACLE_LENGTHS}): "
                "run `make data`"
            )
        out.append(Trajectories(*(np.load(f)[:episodes] for f in files)))
    return out
