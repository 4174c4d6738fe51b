"""PPO with any memory core of :data:`memrl.memory.cores.CORES`, readable top to bottom.

One algorithm for two settings (each value's source beside it in ``params.yaml``):

- **POPGym's PPO** as popjaxrl runs it (Lu et al. 2023, ``run_popgym.py`` and
  ``algorithms/ppo_gru.py``; POPGym's own baseline, ``popgym/baselines/ppo.py``, takes the
  same envs, rollout, epochs and minibatches): ``embed`` layers (leaky ReLU) before **one core
  shared** by the actor and the critic heads (``net_arch`` each), orthogonal initialisation
  (gains sqrt 2 before the core, 2 in the heads, 0.01 and 1 at the outputs), the input
  ``[o_t, onehot(a_t-1), start_t]`` (popjaxrl's ``AliasPrevActionV2``: zeros and a start flag
  of 1 at an episode's first step), the value clipped to the old value +- ``clip_range``.
- **rl-zoo's ``ppo_lstm``** (sb3-contrib's ``RecurrentPPO``; :mod:`memrl.agents.lstm_ppo`
  maps its config here): separate actor and critic LSTMs over the raw observation, ReLU
  heads, no orthogonal init, SB3's ``VecNormalize`` of observations and rewards, lr and clip
  linear to 0 over the budget.

**Rollouts.** ``n_envs`` envs step together for ``n_steps``; core states carry over between
rollouts and are zeroed where an episode starts. A time-out (truncation) is bootstrapped as
SB3 does: ``r += gamma V(o_final)``. Advantages by GAE(``gamma``, ``lambda``).

**Resets, as each core's paper has them.** S5 (Lu et al.) resets its state *inside* the
parallel scan at episode starts: a segment goes through the core whole, with its start flags.
The GRU, LSTM and FFM are reset where an episode starts by cutting each segment at its episode
starts (:func:`cut`, as RLlib's sequences in POPGym and the FFM reference, and sb3-contrib); the
pieces go through the core in one fused call from the state stored at the segment's start (zeros
for a piece that starts an episode), padded at the end to the longest piece: the padding never
reaches a piece's outputs, so no packing is needed. Which path a core takes follows its
``forward``: one that takes ``resets`` resets in its scan.

**Updates.** ``n_epochs`` passes over the rollout in minibatches of whole env segments
(``batch_size / n_steps`` segments each; popjaxrl: 8 minibatches of the 64 envs), the clipped
surrogate with per-minibatch normalised advantages, ``vf_coef`` times the (optionally
clipped) squared value error, ``- ent_coef * H``; gradients clipped at 0.5 (both); Adam eps 1e-5.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable
from typing import Annotated, Any, Literal, NamedTuple

import numpy as np
import torch as th
from pydantic import Field
from stable_baselines3.common.running_mean_std import RunningMeanStd
from torch import nn

from memrl.agents import contract
from memrl.agents.contract import NO_EVALS, EnvFn, Evals, TrainLog
from memrl.memory.cores import CoreName, make_core
from memrl.runtime import get_device
from memrl.schema import PosFloat, PosInt, Prob, StrictModel

State = Any  # a core's state: a tensor, or a tuple of tensors (the LSTM's (h, c))


class PPOParams(StrictModel):
    """PPO's hyperparameters with any memory core (see the module's docstring)."""

    core: CoreName = "lstm"
    n_envs: PosInt
    n_steps: PosInt  # rollout length per env (one segment)
    batch_size: PosInt  # env steps per minibatch: batch_size / n_steps whole segments
    n_epochs: PosInt
    learning_rate: PosFloat
    gamma: Annotated[float, Field(gt=0, le=1)]
    gae_lambda: Prob
    clip_range: PosFloat
    ent_coef: Annotated[float, Field(ge=0)] = 0.0
    vf_coef: PosFloat = 0.5  # SB3: 0.5; popjaxrl: VF_COEF 1.0 times the 0.5 in its value loss
    clip_value: bool = False  # popjaxrl: the value clipped to the old value +- clip_range
    hidden_size: PosInt  # the core's width
    net_arch: list[PosInt] = Field(min_length=1)  # each head's hidden layers
    embed: list[PosInt] = Field(default_factory=list)  # layers before the core
    activation: Literal["relu", "leaky_relu"] = "relu"
    shared: bool = False  # one core under both heads (popjaxrl, POPGym); else one each
    ortho_init: bool = False  # popjaxrl's orthogonal gains
    prev_action: bool = False  # input [o, onehot(a_prev), start] (popjaxrl AliasPrevActionV2)
    schedule: Literal["constant", "linear"] = "constant"  # lr and clip; zoo: linear to 0
    normalize: bool = False  # SB3 VecNormalize: observations and rewards (gamma)
    ffm_memory: PosInt = 32  # FFM's m (its paper: 32)
    ffm_context: PosInt = 4  # FFM's c (its reference's standalone default: 4)
    s5_layers: PosInt = 1  # popjaxrl's POPGym agent: 4
    s5_state: Annotated[int, Field(ge=0)] = 0  # S5's 2P (0: the width; popjaxrl: 256)

    def core_kwargs(self) -> dict[str, int]:
        return {
            "ffm": {"memory_size": self.ffm_memory, "context_size": self.ffm_context},
            "s5": {"layers": self.s5_layers, "state_size": self.s5_state},
        }.get(self.core, {})


# =========================================================================== states
def _map(f: Callable[[th.Tensor], th.Tensor], state: State) -> State:
    return tuple(f(s) for s in state) if isinstance(state, tuple) else f(state)


def _batch_dim(core: nn.Module) -> int:
    """The axis of a core's state that runs over the batch (GRU, LSTM, S5: 1; FFM: 0)."""
    a, b = core.initial_state(1), core.initial_state(2)
    a, b = (a[0], b[0]) if isinstance(a, tuple) else (a, b)
    return next(i for i, (x, y) in enumerate(zip(a.shape, b.shape, strict=True)) if x != y)


class Pieces(NamedTuple):
    """Segments (T steps of n envs) cut at episode starts: piece ``k`` is env ``env[k]``'s
    steps ``[t0[k], t0[k] + length[k])``; ``carry[k]``: it goes on from the state stored at
    the segment's start (else it starts an episode, from zeros); ``at`` maps every (t, env)
    to its (piece, step in the piece)."""

    env: np.ndarray
    t0: np.ndarray
    length: np.ndarray
    carry: np.ndarray
    at: tuple[np.ndarray, np.ndarray]


def cut(starts: np.ndarray) -> Pieces:
    """:class:`Pieces` of segments whose episode-start flags are ``starts`` (T, n)."""
    T, n = starts.shape
    env, t0, ends = [], [], []
    step_in = np.empty((T, n), dtype=np.int64)
    piece_of = np.empty((T, n), dtype=np.int64)
    for j in range(n):
        cuts = [0, *(np.flatnonzero(starts[1:, j]) + 1).tolist(), T]
        for a, b in itertools.pairwise(cuts):
            piece_of[a:b, j] = len(env)
            step_in[a:b, j] = np.arange(b - a)
            env.append(j)
            t0.append(a)
            ends.append(b)
    env_a, t0_a = np.asarray(env), np.asarray(t0)
    carry = (t0_a == 0) & (starts[0, env_a] == 0)
    return Pieces(env_a, t0_a, np.asarray(ends) - t0_a, carry, (piece_of, step_in))


# =========================================================================== networks
def _layers(inp: int, sizes: list[int], act: type[nn.Module]) -> list[nn.Module]:
    out: list[nn.Module] = []
    for h in sizes:
        out += [nn.Linear(inp, h), act()]
        inp = h
    return out


def _orthogonal(module: nn.Module, gain: float) -> None:
    for m in module.modules():
        if isinstance(m, nn.Linear):
            nn.init.orthogonal_(m.weight, gain)
            nn.init.zeros_(m.bias)


class Branch(nn.Module):
    """``embed`` layers, a memory core, then one head (``net_arch``, a linear output) per
    entry of ``outs``."""

    def __init__(self, obs_dim: int, p: PPOParams, outs: tuple[int, ...]) -> None:
        super().__init__()
        act = nn.ReLU if p.activation == "relu" else nn.LeakyReLU
        self.embed = nn.Sequential(*_layers(obs_dim, p.embed, act))
        width = p.embed[-1] if p.embed else obs_dim
        self.core = make_core(p.core, width, p.hidden_size, **p.core_kwargs())
        self.heads = nn.ModuleList(
            nn.Sequential(*_layers(p.hidden_size, p.net_arch, act), nn.Linear(p.net_arch[-1], o))
            for o in outs
        )
        if p.ortho_init:  # popjaxrl: sqrt 2 before the core, 2 in the heads, 0.01 / 1 outputs
            _orthogonal(self.embed, math.sqrt(2))
            for head, o in zip(self.heads, outs, strict=True):
                _orthogonal(head, 2.0)
                _orthogonal(head[-1], 1.0 if o == 1 else 0.01)
        self.dim = _batch_dim(self.core)
        self.in_scan = "resets" in inspect.signature(self.core.forward).parameters

    def initial_state(self, n: int) -> State:
        device = next(self.parameters()).device  # the cores build their states on the CPU
        return _map(lambda s: s.to(device), self.core.initial_state(n))

    def select(self, state: State, idx) -> State:
        return _map(lambda s: s.index_select(self.dim, th.as_tensor(idx, device=s.device)), state)

    def _scaled(self, state: State, keep: th.Tensor) -> State:
        """``state`` times ``keep`` (n,) along the batch axis."""

        def f(s: th.Tensor) -> th.Tensor:
            shape = [1] * s.dim()
            shape[self.dim] = -1
            return s * keep.reshape(shape)

        return _map(f, state)

    def step(self, x: th.Tensor, start: th.Tensor, state: State) -> tuple[list, State]:
        """One step of ``n`` envs: inputs ``x`` (n, d), ``start`` (n,): the state is zeroed
        where an episode starts."""
        y, state = self.core.step(self.embed(x), self._scaled(state, 1.0 - start))
        return [h(y) for h in self.heads], state

    def unroll(self, x: th.Tensor, starts: np.ndarray, state: State) -> list[th.Tensor]:
        """Head outputs (T, n, out) over segments ``x`` (T, n, d) from ``state`` at their
        first step, reset at the episode starts ``starts`` (T, n)."""
        e = self.embed(x)
        dev = e.device
        if self.in_scan:  # S5: the whole segment through the scan, resets inside it
            resets = th.as_tensor(starts, dtype=e.dtype, device=dev).T
            y, _ = self.core(e.transpose(0, 1), state, resets)
            return [h(y.transpose(0, 1)) for h in self.heads]
        T = x.shape[0]
        p = cut(starts)
        steps = th.as_tensor(p.t0, device=dev)[:, None] + th.arange(int(p.length.max()), device=dev)
        xp = e[steps.clamp(max=T - 1), th.as_tensor(p.env, device=dev)[:, None]]  # (P, L, d)
        carry = th.as_tensor(p.carry, dtype=e.dtype, device=dev)
        s0 = self._scaled(self.select(state, p.env), carry)
        y, _ = self.core(xp, s0)  # pieces start at step 0: their padding never reaches them
        y = y[th.as_tensor(p.at[0], device=dev), th.as_tensor(p.at[1], device=dev)]  # (T, n, h)
        return [h(y) for h in self.heads]


class ActorCritic(nn.Module):
    """Action logits and state values from one shared :class:`Branch` or one each."""

    def __init__(self, obs_dim: int, n_act: int, p: PPOParams) -> None:
        super().__init__()
        outs = [(n_act, 1)] if p.shared else [(n_act,), (1,)]
        self.branches = nn.ModuleList(Branch(obs_dim, p, o) for o in outs)

    def initial_state(self, n: int) -> list[State]:
        return [b.initial_state(n) for b in self.branches]

    def select(self, states: list[State], idx) -> list[State]:
        return [b.select(s, idx) for b, s in zip(self.branches, states, strict=True)]

    def step(self, x, start, states) -> tuple[th.Tensor, th.Tensor, list[State]]:
        outs, new = [], []
        for b, s in zip(self.branches, states, strict=True):
            o, s = b.step(x, start, s)
            outs += o
            new.append(s)
        return outs[0], outs[1][..., 0], new

    def unroll(self, x, starts, states) -> tuple[th.Tensor, th.Tensor]:
        outs = [
            o for b, s in zip(self.branches, states, strict=True) for o in b.unroll(x, starts, s)
        ]
        return outs[0], outs[1][..., 0]


# =========================================================================== inputs
class ObsNormaliser:
    """The observation half of SB3's ``VecNormalize`` (the zoo's ``normalize``):
    ``observe(raw, update=True)`` adds a batch of raw observations (n, d) to the running mean
    and variance, then returns them standardised and clipped; ``update=False`` (evaluation)
    uses the stats as they are. Disabled, it passes ``raw``."""

    def __init__(self, dim: int, enabled: bool = True, clip: float = 10.0) -> None:
        self.rms = RunningMeanStd(shape=(dim,)) if enabled else None
        self.clip = clip

    def __call__(self, raw: np.ndarray, update: bool = False) -> np.ndarray:
        if self.rms is None:
            return raw
        if update:
            self.rms.update(raw)
        out = (raw - self.rms.mean) / np.sqrt(self.rms.var + 1e-8)
        return np.clip(out, -self.clip, self.clip).astype(np.float32)


class RewardScaler:
    """The reward half of SB3's ``VecNormalize``: each env's discounted return ``R <- gamma R
    + r`` feeds a running variance, rewards are divided by its standard deviation and
    clipped, and ``R`` restarts when an episode ends. Disabled, it passes the rewards."""

    def __init__(self, n: int, gamma: float, enabled: bool = True, clip: float = 10.0) -> None:
        self.rms = RunningMeanStd(shape=()) if enabled else None
        self.returns, self.gamma, self.clip = np.zeros(n), gamma, clip

    def __call__(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        if self.rms is None:
            return rewards
        self.returns = self.returns * self.gamma + rewards
        self.rms.update(self.returns)
        out = np.clip(rewards / np.sqrt(self.rms.var + 1e-8), -self.clip, self.clip)
        self.returns[dones.astype(bool)] = 0.0
        return out.astype(np.float32)


def inputs(obs: np.ndarray, prev: np.ndarray, start: np.ndarray, n_act: int, on: bool):
    """The policy's input (n, d'): ``obs`` (n, d), with ``on`` also the previous actions
    ``prev`` (n,) one-hot (zeros where ``start``) and the start flags (AliasPrevActionV2)."""
    if not on:
        return obs
    hot = np.eye(n_act, dtype=np.float32)[prev] * (1.0 - start)[:, None]
    return np.concatenate([obs, hot, start[:, None]], 1).astype(np.float32)


# =========================================================================== training
class Rollout(NamedTuple):
    x: th.Tensor  # (T, n, d'): the policy's inputs
    starts: np.ndarray  # (T, n): an episode starts at this step (state zeroed before it)
    actions: th.Tensor  # (T, n)
    logp: th.Tensor
    values: th.Tensor
    advantages: th.Tensor
    returns: th.Tensor
    states: list  # each branch's state before the rollout's first step


def gae(rewards, values, next_value, starts_next, gamma: float, lam: float):
    """Generalised advantage estimates and returns over (T, n) arrays; ``starts_next[t]`` is 1
    where the step after ``t`` begins a new episode (no bootstrap across it)."""
    T = rewards.shape[0]
    adv = np.zeros_like(rewards)
    last = np.zeros_like(next_value)
    for t in reversed(range(T)):
        nv = next_value if t == T - 1 else values[t + 1]
        alive = 1.0 - starts_next[t]
        delta = rewards[t] + gamma * nv * alive - values[t]
        last = delta + gamma * lam * alive * last
        adv[t] = last
    return adv, adv + values


def train(
    env_fn: EnvFn,
    p: PPOParams,
    total_steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
) -> TrainLog:
    """Train PPO on ``p.n_envs`` envs ``env_fn(seed + i)`` (as SB3's ``make_vec_env``) for
    ``total_steps`` env steps (summed over envs; rounded up to whole rollouts); returns
    per-episode logs (lengths: global steps between successive episode ends), the greedy
    policy's returns after training (``env_fn(seed + EVAL_SEED_OFFSET)``) and after each step
    count of ``evals.at`` (an env of its own: training is the same with or without them)."""
    eval_env = env_fn(seed + contract.EVAL_SEED_OFFSET)
    check_env = env_fn(seed + contract.CHECKPOINT_SEED_OFFSET)
    th.manual_seed(seed)
    device = get_device()
    envs = [env_fn(seed + i) for i in range(p.n_envs)]
    obs_dim = int(np.prod(envs[0].observation_space.shape))
    n_act = int(envs[0].action_space.n)
    in_dim = obs_dim + (n_act + 1 if p.prev_action else 0)
    ac = ActorCritic(in_dim, n_act, p).to(device)
    params = list(ac.parameters())
    opt = th.optim.Adam(params, lr=p.learning_rate, eps=1e-5, fused=True)  # SB3, popjaxrl
    n, T = p.n_envs, p.n_steps
    seg_per_batch = max(1, p.batch_size // T)
    observe = ObsNormaliser(obs_dim, p.normalize)
    scale = RewardScaler(n, p.gamma, p.normalize)

    def tensor(x) -> th.Tensor:
        return th.as_tensor(np.asarray(x, dtype=np.float32), device=device)

    def policy_in(raw, prev, start, update=False) -> np.ndarray:
        return inputs(observe(raw, update), prev, start, n_act, p.prev_action)

    raw = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(envs)]).reshape(n, -1)
    start, prev = np.ones(n, np.float32), np.zeros(n, np.int64)
    x = policy_in(raw, prev, start, update=True)
    states = ac.initial_state(n)
    ep_ret, returns, ends = np.zeros(n), [], []
    checkpoints, checkpoint_returns = sorted(evals.at) if check_env is not None else [], []
    step = 0
    while step < total_steps:
        # ---- rollout
        buf = {k: [] for k in ("x", "starts", "actions", "logp", "values", "rewards")}
        s0 = states
        with th.no_grad():
            for _ in range(T):
                logits, value, states = ac.step(tensor(x), tensor(start), states)
                dist = th.distributions.Categorical(logits=logits)
                act = dist.sample()
                buf["x"].append(x)
                buf["starts"].append(start)
                buf["actions"].append(act.cpu().numpy())
                buf["logp"].append(dist.log_prob(act).cpu().numpy())
                buf["values"].append(value.cpu().numpy())
                rewards, next_raw, next_start = np.zeros(n, np.float32), [], np.zeros(n, np.float32)
                finals = []  # (env, final observation) of time-outs
                for i, e in enumerate(envs):
                    o_i, r, term, trunc, _ = e.step(int(act[i]))
                    ep_ret[i] += r
                    rewards[i] = r
                    if term or trunc:
                        if trunc and not term:
                            finals.append((i, np.asarray(o_i, np.float32).reshape(1, -1)))
                        ends.append(step + n)  # as the SB3 callback: the batch's step count
                        returns.append(float(ep_ret[i]))
                        ep_ret[i] = 0.0
                        o_i, _ = e.reset()
                        next_start[i] = 1.0
                    next_raw.append(np.asarray(o_i, np.float32).reshape(-1))
                prev = act.cpu().numpy()
                x, start = policy_in(np.stack(next_raw), prev, next_start, True), next_start
                rewards = scale(rewards, next_start)  # the time-out bootstrap is added after
                for i, o_final in finals:  # time-out: bootstrap from the final observation
                    xf = policy_in(o_final, prev[[i]], np.zeros(1, np.float32))
                    zero = th.zeros(1, device=device)
                    _, v_final, _ = ac.step(tensor(xf), zero, ac.select(states, [i]))
                    rewards[i] += p.gamma * float(v_final)
                buf["rewards"].append(rewards)
                step += n
                while checkpoints and step >= checkpoints[0]:
                    checkpoints.pop(0)
                    checkpoint_returns.append(evaluate(ac, check_env, evals.episodes, p, observe))
            _, next_value, _ = ac.step(tensor(x), tensor(start), states)
        b = {k: np.asarray(v, np.float32) for k, v in buf.items()}
        starts_next = np.concatenate([b["starts"][1:], start[None]], 0)
        adv, ret = gae(
            b["rewards"], b["values"], next_value.cpu().numpy(), starts_next, p.gamma, p.gae_lambda
        )
        ro = Rollout(
            tensor(b["x"]),
            b["starts"],
            th.as_tensor(b["actions"], dtype=th.long, device=device),
            tensor(b["logp"]),
            tensor(b["values"]),
            tensor(adv),
            tensor(ret),
            s0,
        )

        # ---- updates: n_epochs passes, minibatches of whole segments; with the zoo's
        # linear schedule, lr and clip scale with the budget left (as SB3: after the rollout)
        left = max(0.0, 1.0 - step / total_steps) if p.schedule == "linear" else 1.0
        for group in opt.param_groups:
            group["lr"] = p.learning_rate * left
        for _ in range(p.n_epochs):
            for idx in th.randperm(n).split(seg_per_batch):
                update(ac, opt, params, ro, idx, p.clip_range * left, p)
    return {
        "episode_returns": returns,
        "episode_lengths": np.diff([0, *ends]).tolist(),
        "eval_returns": evaluate(ac, eval_env, evals.episodes, p, observe),
        "checkpoint_returns": checkpoint_returns,
    }


def losses(ac: ActorCritic, ro: Rollout, idx: th.Tensor, clip: float, p: PPOParams):
    """PPO's policy, value and entropy terms on the segments ``idx`` of the rollout."""
    logits, values = ac.unroll(ro.x[:, idx], ro.starts[:, idx.numpy()], ac.select(ro.states, idx))
    dist = th.distributions.Categorical(logits=logits)
    logp = dist.log_prob(ro.actions[:, idx])
    adv = ro.advantages[:, idx]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)  # normalised per minibatch (SB3, popjaxrl)
    ratio = th.exp(logp - ro.logp[:, idx])
    clipped = ratio.clamp(1 - clip, 1 + clip)
    policy_loss = -th.min(ratio * adv, clipped * adv).mean()
    target = ro.returns[:, idx]
    value_loss = (values - target) ** 2
    if p.clip_value:  # popjaxrl: the larger of the plain and the clipped value's errors
        old = ro.values[:, idx]
        value_loss = th.max(value_loss, (old + (values - old).clamp(-clip, clip) - target) ** 2)
    return policy_loss, value_loss.mean(), dist.entropy().mean()


def update(ac: ActorCritic, opt, params, ro: Rollout, idx: th.Tensor, clip: float, p) -> None:
    """One gradient step on the segments ``idx`` of the rollout."""
    policy_loss, value_loss, entropy = losses(ac, ro, idx, clip, p)
    loss = policy_loss - p.ent_coef * entropy + p.vf_coef * value_loss
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(params, 0.5)  # SB3 max_grad_norm, popjaxrl MAX_GRAD_NORM
    opt.step()


@th.no_grad()
def evaluate(
    ac: ActorCritic,
    env: Any,
    episodes: int,
    p: PPOParams,
    observe: Callable[[np.ndarray], np.ndarray] = lambda raw: raw,
) -> list[float]:
    """Returns of ``episodes`` greedy (argmax) episodes, each from a zero state; ``observe``
    maps raw observations (1, d) to standardised ones (frozen normalisation)."""
    n_act, out, dev = int(env.action_space.n), [], next(ac.parameters()).device
    for _ in range(episodes):
        obs, _ = env.reset()
        states, start, prev = ac.initial_state(1), np.ones(1, np.float32), np.zeros(1, np.int64)
        total, done = 0.0, False
        while not done:
            raw = observe(np.asarray(obs, np.float32).reshape(1, -1))
            x = th.as_tensor(inputs(raw, prev, start, n_act, p.prev_action), device=dev)
            logits, _, states = ac.step(x, th.as_tensor(start, device=dev), states)
            prev, start = logits.argmax(-1).cpu().numpy(), np.zeros(1, np.float32)
            obs, r, term, trunc, _ = env.step(int(prev[0]))
            total += float(r)
            done = term or trunc
        out.append(total)
    return out
