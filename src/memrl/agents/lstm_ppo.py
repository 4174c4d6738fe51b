"""LSTM-PPO for discrete-action POMDPs, readable top to bottom.

The algorithm and hyperparameters of sb3-contrib's ``RecurrentPPO`` with rl-zoo's
``ppo_lstm`` settings, written for speed on a CPU:

- **Networks.** Separate actor and critic LSTMs (``enable_critic_lstm``) over the raw
  observation, each followed by a ReLU layer (``net_arch``) and a linear head: action
  logits, state value. The LSTMs are :class:`~memrl.memory.blas_rnn.BlasLSTM` (torch's
  layer, equations and initial draws, on the pinned OpenBLAS with compiled cells). No
  orthogonal init (zoo: ``ortho_init: False``); Adam, eps 1e-5; learning rate and clip range
  constant or, as the zoo, linear to 0 over the budget.
- **Observations** are standardised as the zoo's ``normalize: True`` (SB3 ``VecNormalize``,
  observations only): a running mean and variance over every observation the training envs
  return, ``clip((o - mean) / sqrt(var + 1e-8), +-10)``; evaluation uses the stats frozen.
- **Rollouts.** ``n_envs`` envs step together for ``n_steps``; the LSTM states carry over
  between rollouts and are zeroed where an episode starts. A time-out (truncation) is
  bootstrapped as SB3 does: ``r += gamma V(o_final)``. Advantages by GAE(``gamma``, ``lambda``).
- **Updates.** ``n_epochs`` passes over the rollout in minibatches of whole env segments
  (``batch_size / n_steps`` segments each). Each segment is cut at its episode starts
  (:func:`cut`); the pieces go through each LSTM in one fused call, padded at the end, from
  the state stored at the segment's start (or zeros for a piece that starts an episode).
  Then the clipped surrogate ``-min(rho A, clip(rho, 1 +- eps) A)`` with per-minibatch
  normalised advantages, plus ``vf_coef * (V - R)^2`` and ``- ent_coef * H``; gradients
  clipped at ``max_grad_norm``.

sb3-contrib does the same cutting, but pads the pieces in Python for every minibatch and
steps its LSTM one step at a time whenever a minibatch holds an episode start (its issue
#113: ~100 env steps/s for a small LSTM). Here the pieces start at step 0 of the padded
batch, so the padding never reaches a piece's outputs and no packing is needed (a packed
LSTM's backward was 3x slower on this CPU). ``benchmarks/lstm_ppo.py`` compares the two.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Annotated, Any, Literal, NamedTuple

import numpy as np
import torch as th
from pydantic import Field
from stable_baselines3.common.running_mean_std import RunningMeanStd
from torch import nn
from torch.nn import functional as F

from memrl.agents import contract
from memrl.agents.contract import NO_EVALS, EnvFn, Evals, TrainLog
from memrl.agents.nets import mlp
from memrl.memory.blas_rnn import BlasLSTM
from memrl.runtime import get_device
from memrl.schema import PosFloat, PosInt, Prob, StrictModel


class RecurrentPPOParams(StrictModel):
    """LSTM-PPO hyperparameters (rl-zoo ``ppo_lstm.yml``), for sb3-contrib's RecurrentPPO
    (``RPPO``) and memrl's LSTM-PPO (``PPO-LSTM``) alike."""

    n_envs: PosInt
    n_steps: PosInt
    batch_size: PosInt
    n_epochs: PosInt
    learning_rate: PosFloat
    gamma: Annotated[float, Field(gt=0, le=1)]
    gae_lambda: Prob
    clip_range: PosFloat
    ent_coef: Annotated[float, Field(ge=0)]
    lstm_hidden_size: PosInt
    net_arch: list[PosInt] = Field(min_length=1)
    schedule: Literal["constant", "linear"] = "constant"  # lr and clip; zoo: linear to 0
    normalize: bool = False  # zoo: normalize (VecNormalize: observations and rewards, gamma)


class LSTMState(NamedTuple):
    h: th.Tensor  # (1, n, hidden), as nn.LSTM takes it
    c: th.Tensor

    def reset(self, start: th.Tensor) -> LSTMState:
        """Zero the state of the envs where ``start`` (n,) is 1."""
        keep = (1.0 - start)[None, :, None]
        return LSTMState(self.h * keep, self.c * keep)

    def select(self, idx) -> LSTMState:
        return LSTMState(self.h[:, idx], self.c[:, idx])


class Pieces(NamedTuple):
    """Segments (T steps of n envs) cut at episode starts: piece ``k`` is env ``env[k]``'s
    steps ``[t0[k], t0[k] + length[k])``; ``carry[k]``: it goes on from the state stored at
    the segment's start (else it starts an episode, from zeros); ``at`` maps every (t, env)
    to its (step in the piece, piece)."""

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
    return Pieces(env_a, t0_a, np.asarray(ends) - t0_a, carry, (step_in, piece_of))


class Branch(nn.Module):
    """An LSTM, then ``net_arch`` (ReLU) and a linear head of ``out`` units."""

    def __init__(self, obs_dim: int, hidden: int, net_arch: list[int], out: int) -> None:
        super().__init__()
        self.lstm = BlasLSTM(obs_dim, hidden, batch_first=False)  # nn.LSTM's layer and draws
        self.head = mlp(hidden, out, net_arch)
        self.hidden = hidden

    def initial_state(self, n: int, device: str) -> LSTMState:
        zeros = th.zeros(1, n, self.hidden, device=device)
        return LSTMState(zeros, zeros.clone())

    def step(
        self, obs: th.Tensor, start: th.Tensor, state: LSTMState
    ) -> tuple[th.Tensor, LSTMState]:
        """One step of ``n`` envs: ``obs`` (n, obs_dim), ``start`` (n,)."""
        h, (hn, cn) = self.lstm(obs[None], tuple(state.reset(start)))
        return self.head(h[0]), LSTMState(hn, cn)

    def unroll(self, obs: th.Tensor, pieces: Pieces, state: LSTMState) -> th.Tensor:
        """Head outputs (T, n, out) over segments ``obs`` (T, n, obs_dim) from ``state`` at
        their first step: one fused LSTM call over the segments cut into episode pieces (a
        piece that starts an episode starts from zeros, as in acting)."""
        T = obs.shape[0]
        steps = th.arange(T, device=obs.device)[:, None] + th.as_tensor(
            pieces.t0, device=obs.device
        )
        x = obs[steps.clamp(max=T - 1), th.as_tensor(pieces.env, device=obs.device)]  # (T, P, d)
        carry = th.as_tensor(pieces.carry, device=obs.device, dtype=obs.dtype)[None, :, None]
        h0, c0 = state.h[:, pieces.env] * carry, state.c[:, pieces.env] * carry
        # pieces start at step 0 of the padded batch, so the padding after a piece never
        # reaches its outputs: no packing needed (packed LSTMs are slow on the CPU)
        out, _ = self.lstm(x, (h0, c0))  # (T, P, hidden)
        step_in, piece_of = (th.as_tensor(a, device=obs.device) for a in pieces.at)
        return self.head(out[step_in, piece_of])


class ObsNormaliser:
    """The observation half of SB3's ``VecNormalize`` (the zoo's ``normalize`` with
    ``norm_obs`` only): ``observe(raw, update=True)`` adds a batch of raw observations
    (n, d) to the running mean and variance, then returns them standardised and clipped;
    ``update=False`` (evaluation) uses the stats as they are. Disabled, it passes ``raw``."""

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
    """The reward half of SB3's ``VecNormalize`` (the zoo's ``normalize``): each env's
    discounted return ``R <- gamma R + r`` feeds a running variance, rewards are divided by
    its standard deviation and clipped, and ``R`` restarts when an episode ends.
    Disabled, it passes the rewards through."""

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


class Rollout(NamedTuple):
    obs: th.Tensor  # (T, n, obs_dim)
    starts: th.Tensor  # (T, n): an episode starts at this step (state zeroed before it)
    actions: th.Tensor  # (T, n)
    logp: th.Tensor  # (T, n)
    advantages: th.Tensor  # (T, n)
    returns: th.Tensor  # (T, n)
    actor_state: LSTMState  # before the rollout's first step, (1, n, hidden)
    critic_state: LSTMState


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
    p: RecurrentPPOParams,
    total_steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
) -> TrainLog:
    """Train LSTM-PPO on ``p.n_envs`` envs ``env_fn(seed + i)`` (as SB3's ``make_vec_env``)
    for ``total_steps`` env steps (summed over envs; rounded up to whole rollouts, as SB3);
    returns per-episode logs (lengths: global steps between successive episode ends, as the
    SB3 wrapper), the greedy policy's returns after training (``env_fn(seed +
    EVAL_SEED_OFFSET)``) and after each step count of ``evals.at`` (an env of its own:
    training is the same with or without them)."""
    eval_episodes, eval_at = evals.episodes, evals.at
    eval_env = env_fn(seed + contract.EVAL_SEED_OFFSET)
    check_env = env_fn(seed + contract.CHECKPOINT_SEED_OFFSET)
    th.manual_seed(seed)
    device = get_device()
    envs = [env_fn(seed + i) for i in range(p.n_envs)]
    obs_dim = int(np.prod(envs[0].observation_space.shape))
    n_act = int(envs[0].action_space.n)
    actor = Branch(obs_dim, p.lstm_hidden_size, list(p.net_arch), n_act).to(device)
    critic = Branch(obs_dim, p.lstm_hidden_size, list(p.net_arch), 1).to(device)
    params = [*actor.parameters(), *critic.parameters()]
    opt = th.optim.Adam(params, lr=p.learning_rate, eps=1e-5, fused=True)  # SB3: eps 1e-5
    n, T = p.n_envs, p.n_steps
    seg_per_batch = max(1, p.batch_size // T)
    observe = ObsNormaliser(obs_dim, p.normalize)
    scale = RewardScaler(n, p.gamma, p.normalize)

    def tensor(x) -> th.Tensor:
        return th.as_tensor(np.asarray(x, dtype=np.float32), device=device)

    raw = np.stack([e.reset(seed=seed + i)[0] for i, e in enumerate(envs)]).reshape(n, -1)
    obs = observe(raw, update=True)
    start = np.ones(n, np.float32)
    a_state, c_state = actor.initial_state(n, device), critic.initial_state(n, device)
    ep_ret, returns, ends = np.zeros(n), [], []
    checkpoints, checkpoint_returns = sorted(eval_at) if check_env is not None else [], []
    step = 0
    while step < total_steps:
        # ---- rollout
        buf = {k: [] for k in ("obs", "starts", "actions", "logp", "values", "rewards")}
        a0, c0 = a_state, c_state
        with th.no_grad():
            for _ in range(T):
                o, s = tensor(obs), tensor(start)
                logits, a_state = actor.step(o, s, a_state)
                value, c_state = critic.step(o, s, c_state)
                dist = th.distributions.Categorical(logits=logits)
                act = dist.sample()
                buf["obs"].append(obs)
                buf["starts"].append(start)
                buf["actions"].append(act.cpu().numpy())
                buf["logp"].append(dist.log_prob(act).cpu().numpy())
                buf["values"].append(value[:, 0].cpu().numpy())
                rewards, next_obs, next_start = np.zeros(n, np.float32), [], np.zeros(n, np.float32)
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
                    next_obs.append(np.asarray(o_i, np.float32).reshape(-1))
                obs, start = observe(np.stack(next_obs), update=True), next_start
                rewards = scale(rewards, next_start)  # the time-out bootstrap is added after
                for i, o_final in finals:  # time-out: bootstrap from the final observation
                    v_final, _ = critic.step(
                        tensor(observe(o_final)), th.zeros(1, device=device), c_state.select([i])
                    )
                    rewards[i] += p.gamma * float(v_final)
                buf["rewards"].append(rewards)
                step += n
                while checkpoints and step >= checkpoints[0]:
                    checkpoints.pop(0)
                    checkpoint_returns.append(
                        evaluate(actor, check_env, eval_episodes, device, observe)
                    )
            next_value, _ = critic.step(tensor(obs), tensor(start), c_state)
        b = {k: np.asarray(v, np.float32) for k, v in buf.items()}
        starts_next = np.concatenate([b["starts"][1:], start[None]], 0)
        adv, ret = gae(
            b["rewards"],
            b["values"],
            next_value[:, 0].cpu().numpy(),
            starts_next,
            p.gamma,
            p.gae_lambda,
        )
        ro = Rollout(
            tensor(b["obs"]),
            tensor(b["starts"]),
            th.as_tensor(b["actions"], dtype=th.long, device=device),
            tensor(b["logp"]),
            tensor(adv),
            tensor(ret),
            a0,
            c0,
        )

        # ---- updates: n_epochs passes, minibatches of whole segments; with the zoo's
        # linear schedule, lr and clip scale with the budget left (as SB3: after the rollout)
        left = max(0.0, 1.0 - step / total_steps) if p.schedule == "linear" else 1.0
        for group in opt.param_groups:
            group["lr"] = p.learning_rate * left
        for _ in range(p.n_epochs):
            for idx in th.randperm(n).split(seg_per_batch):
                update(actor, critic, opt, params, ro, idx, p.clip_range * left, p.ent_coef)
    return {
        "episode_returns": returns,
        "episode_lengths": np.diff([0, *ends]).tolist(),
        "eval_returns": evaluate(actor, eval_env, eval_episodes, device, observe),
        "checkpoint_returns": checkpoint_returns,
    }


def update(
    actor: Branch,
    critic: Branch,
    opt,
    params,
    ro: Rollout,
    idx: th.Tensor,
    clip: float,
    ent_coef: float,
) -> None:
    """One gradient step on the segments ``idx`` of the rollout."""
    obs = ro.obs[:, idx]
    pieces = cut(ro.starts[:, idx].cpu().numpy())
    logits = actor.unroll(obs, pieces, ro.actor_state.select(idx))
    values = critic.unroll(obs, pieces, ro.critic_state.select(idx))[..., 0]
    dist = th.distributions.Categorical(logits=logits)
    logp = dist.log_prob(ro.actions[:, idx])
    adv = ro.advantages[:, idx]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)  # SB3: normalize_advantage per minibatch
    ratio = th.exp(logp - ro.logp[:, idx])
    clipped = ratio.clamp(1 - clip, 1 + clip)
    policy_loss = -th.min(ratio * adv, clipped * adv).mean()
    value_loss = F.mse_loss(values, ro.returns[:, idx])
    loss = policy_loss - ent_coef * dist.entropy().mean() + 0.5 * value_loss  # SB3 vf_coef 0.5
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(params, 0.5)  # SB3 max_grad_norm
    opt.step()


@th.no_grad()
def evaluate(
    actor: Branch,
    env: Any,
    episodes: int,
    device: str,
    observe: Callable[[np.ndarray], np.ndarray] = lambda raw: raw,
) -> list[float]:
    """Returns of ``episodes`` greedy (argmax) episodes, each from a zero LSTM state;
    ``observe`` maps raw observations (1, d) to the policy's input (frozen normalisation)."""
    out = []
    for _ in range(episodes):
        obs, _ = env.reset()
        state, start = actor.initial_state(1, device), th.ones(1, device=device)
        total, done = 0.0, False
        while not done:
            o = th.as_tensor(observe(np.asarray(obs, np.float32).reshape(1, -1)), device=device)
            logits, state = actor.step(o, start, state)
            start = th.zeros(1, device=device)
            obs, r, term, trunc, _ = env.step(int(logits.argmax()))
            total += float(r)
            done = term or trunc
        out.append(total)
    return out
