"""The environment loop recurrent off-policy agents share (recurrent SAC, recurrent TD3,
recurrent SAC-discrete), and their one ``train`` (:func:`train`, the agent contract of
:mod:`memrl.agents.contract`; each agent gives its constructor for an env, ``for_env``).

Acting runs the agent's actor encoder in step mode on ``[o_t, a_{t-1}, r_{t-1}]``
(the state follows the history even during the initial random steps); finished
episodes go whole into a :class:`~memrl.memory.sequence.SequenceReplayBuffer`;
after ``learning_starts`` steps the agent makes ``gradient_steps`` updates every
``train_freq`` env steps. Continuous actions live in [-1, 1] and are rescaled to
the env's box; discrete actions travel as one-hot vectors (in the buffer and as
the encoders' previous-action input) and reach the env as indices.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, NamedTuple, Protocol

import gymnasium as gym
import numpy as np
import torch as th
from pydantic import Field

from memrl.agents.contract import CHECKPOINT_SEED_OFFSET, NO_EVALS, EnvFn, Evals, TrainLog
from memrl.memory.cores import CoreName
from memrl.memory.sequence import SequenceReplayBuffer
from memrl.runtime import get_device
from memrl.schema import NonNegInt, PosFloat, PosInt, Prob, StrictModel


class RecurrentParams(StrictModel):
    """Recurrent SAC / TD3 / SAC-discrete (the method name sets ``core`` and ``shared_encoder``)."""

    core: CoreName = "lstm"
    shared_encoder: bool = False
    hidden_size: PosInt
    head: list[PosInt] = Field(min_length=1)
    learning_rate: PosFloat
    gamma: Annotated[float, Field(gt=0, le=1)]
    tau: Annotated[float, Field(gt=0, le=1)]
    buffer_size: PosInt
    seq_len: PosInt
    batch_size: PosInt
    learning_starts: NonNegInt
    train_freq: PosInt
    gradient_steps: PosInt
    context: PosInt = 4  # window core: frames seen (the current one and K - 1 before)
    ffm_memory: PosInt = 8  # FFM: trace size m
    ffm_context: PosInt = 4  # FFM: frequencies c
    expl_noise: Annotated[float, Field(ge=0)] = 0.1  # TD3 (Fujimoto et al. 2018)
    target_noise: Annotated[float, Field(ge=0)] = 0.2
    noise_clip: Annotated[float, Field(ge=0)] = 0.5
    policy_delay: PosInt = 2
    target_entropy_ratio: Prob = 0.98  # SAC-discrete (Christodoulou 2019)
    # SAC-discrete: a fixed temperature instead of the tuned one (Ni et al.'s T-Maze: 0.1)
    alpha: Annotated[float, Field(gt=0)] | None = None


class RecurrentAgent(Protocol):
    actor_encoder: Any
    device: str

    def act(self, h: th.Tensor, explore: bool) -> np.ndarray: ...

    def update(self, batch) -> dict[str, float]: ...


class AgentFor(Protocol):
    """An agent's constructor for ``env``'s spaces (e.g. ``RecurrentSAC.for_env``)."""

    def __call__(self, env: gym.Env, p: RecurrentParams, seed: int, device: str) -> Any: ...


def train(
    agent_for: AgentFor,
    env_fn: EnvFn,
    p: RecurrentParams,
    steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
) -> TrainLog:
    """Train the agent ``agent_for`` builds on ``env_fn(seed)`` for ``steps`` env steps
    (:func:`run`), checkpoint evaluations on ``env_fn(seed + CHECKPOINT_SEED_OFFSET)``; torch
    seeded with ``seed`` just before the agent is built."""
    env = env_fn(seed)
    check_env = env_fn(seed + CHECKPOINT_SEED_OFFSET)
    th.manual_seed(seed)
    agent = agent_for(env, p, seed, get_device())
    return run(agent, env, p, steps, seed, evals.episodes, check_env, evals.at)


def run(
    agent: RecurrentAgent,
    env: gym.Env,
    p: RecurrentParams,
    total_steps: int,
    seed: int,
    eval_episodes: int = 0,
    eval_env: gym.Env | None = None,
    eval_at: Sequence[int] = (),
) -> dict[str, Any]:
    """Train ``agent`` on ``env`` for ``total_steps`` steps; per-episode returns and lengths,
    then the returns of ``eval_episodes`` episodes of the deterministic (greedy) policy.

    With ``eval_env``, the greedy policy also plays ``eval_episodes`` episodes there after
    each step count in ``eval_at`` (``checkpoint_returns``, one list per count): a separate
    env, so training itself is the same with or without these checkpoints."""
    # streams of their own: a generator seeded with ``seed`` itself would replay the env's
    # (gymnasium seeds ``np_random`` the same way), e.g. every random T-Maze turn would
    # mirror the cue
    act_seed, buf_seed = np.random.SeedSequence(seed).spawn(2)
    rng = np.random.default_rng(act_seed)
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    act_dim = action_dim(env.action_space)
    if discrete:
        eye = np.eye(act_dim, dtype=np.float32)

        def random_action() -> np.ndarray:
            return eye[rng.integers(act_dim)]

        def to_env(a: np.ndarray):
            return int(np.argmax(a))
    else:
        low, high = env.action_space.low, env.action_space.high

        def random_action() -> np.ndarray:
            return rng.uniform(-1.0, 1.0, act_dim).astype(np.float32)

        def to_env(a: np.ndarray):
            return low + (a + 1.0) * 0.5 * (high - low)

    buf = SequenceReplayBuffer(p.buffer_size, p.seq_len, seed=buf_seed)
    returns, lengths = [], []
    step = 0
    obs, _ = env.reset(seed=seed)

    checkpoints = sorted(eval_at) if eval_env is not None else []
    checkpoint_returns: list[list[float]] = []
    while step < total_steps:
        ep_obs, ep_act, ep_rew = [obs], [], []
        state = agent.actor_encoder.initial_state(1)
        prev_a, prev_r = np.zeros(act_dim, np.float32), 0.0
        done = terminated = False
        while not done and step < total_steps:
            with th.no_grad():
                h, state = agent.actor_encoder.step(
                    *_step_input(obs, prev_a, prev_r, agent.device), state
                )
                if step < p.learning_starts:
                    a = random_action()
                else:
                    a = agent.act(h, explore=True)
            obs, r, terminated, truncated, _ = env.step(to_env(a))
            ep_obs.append(obs)
            ep_act.append(a)
            ep_rew.append(float(r))
            prev_a, prev_r = a, float(r)
            done = terminated or truncated
            step += 1
            if step >= p.learning_starts and len(buf) and step % p.train_freq == 0:
                for _ in range(p.gradient_steps):
                    agent.update(buf.sample(p.batch_size))
            if checkpoints and step == checkpoints[0]:
                checkpoints.pop(0)
                checkpoint_returns.append(
                    evaluate(agent, eval_env, eval_episodes, act_dim, to_env)  # type: ignore[arg-type]
                )
        if done:
            buf.add_episode(np.array(ep_obs), np.array(ep_act), np.array(ep_rew), terminated)
            returns.append(float(sum(ep_rew)))
            lengths.append(len(ep_rew))
            obs, _ = env.reset()
    return {
        "episode_returns": returns,
        "episode_lengths": lengths,
        "eval_returns": evaluate(agent, env, eval_episodes, act_dim, to_env),
        "checkpoint_returns": checkpoint_returns,
    }


def evaluate(
    agent: RecurrentAgent, env: gym.Env, episodes: int, act_dim: int, to_env: Callable
) -> list[float]:
    """Returns of ``episodes`` episodes of the deterministic policy on ``env``, each from a
    zero memory state."""
    evals = []
    for _ in range(episodes):
        obs, _ = env.reset()
        state = agent.actor_encoder.initial_state(1)
        prev_a, prev_r, done, total = np.zeros(act_dim, np.float32), 0.0, False, 0.0
        while not done:
            with th.no_grad():
                h, state = agent.actor_encoder.step(
                    *_step_input(obs, prev_a, prev_r, agent.device), state
                )
                a = agent.act(h, explore=False)
            obs, r, terminated, truncated, _ = env.step(to_env(a))
            prev_a, prev_r, done = a, float(r), terminated or truncated
            total += float(r)
        evals.append(total)
    return evals


def _step_input(obs, prev_a, prev_r, device: str) -> list[th.Tensor]:
    """``[o_t, a_{t-1}, r_{t-1}]`` as float32 batches of one, for an encoder's step mode."""
    return [
        th.as_tensor(np.asarray(v, dtype=np.float32)[None], device=device)
        for v in (obs, prev_a, prev_r)
    ]


class Features(NamedTuple):
    """A batch of windows run through SAC's encoders: features ``(B, T+1, hidden)`` whose
    ``[:, :-1]`` are ``h_t`` and ``[:, 1:]`` are ``h_{t+1}``, and the targets' tensors."""

    critic: th.Tensor  # online critic encoder, with gradients
    actor: th.Tensor  # actor encoder (the critic's, detached, when shared)
    target: th.Tensor  # target critic encoder, no gradients
    act: th.Tensor
    rew: th.Tensor
    done: th.Tensor
    mask: th.Tensor
    n: th.Tensor  # number of valid steps (>= 1)


def sac_features(agent: Any, batch) -> Features:
    """Run a SAC variant's three encoders once each over a batch of windows (the agent's
    ``critic_encoder``, ``actor_encoder`` and ``critic_target[0]``)."""
    full_obs, full_pa, full_pr, act, rew, done, mask = history(batch, agent.device)
    h_q, _ = agent.critic_encoder(full_obs, full_pa, full_pr)
    if agent.p.shared_encoder:
        h_a = h_q.detach()
    else:
        h_a, _ = agent.actor_encoder(full_obs, full_pa, full_pr)
    with th.no_grad():
        h_t, _ = agent.critic_target[0](full_obs, full_pa, full_pr)
    return Features(h_q, h_a, h_t, act, rew, done, mask, mask.sum().clamp(min=1.0))


def action_dim(space: gym.Space) -> int:
    """Width of an action as the agents see it: the box's size, or ``n`` (one-hot)."""
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.Box):
        return int(np.prod(space.shape))
    raise TypeError(f"recurrent agents take Box or Discrete actions, not {space}")


def history(batch, device: str) -> tuple[th.Tensor, ...]:
    """Tensors of a batch of windows, extended by one step to reach ``o_{t+1}``.

    Returns ``full_obs, full_prev_act, full_prev_rew`` (B, T+1, .) — the encoder input
    whose outputs ``[:, :-1]`` are ``h_t`` and ``[:, 1:]`` are ``h_{t+1}`` — and
    ``act, rew, done, mask`` (B, T, .).
    """

    def t(x) -> th.Tensor:
        return th.as_tensor(x, device=device)

    obs, next_obs, act, rew = t(batch.obs), t(batch.next_obs), t(batch.actions), t(batch.rewards)
    full_obs = th.cat([obs, next_obs[:, -1:]], 1)
    full_pa = th.cat([t(batch.prev_actions), act[:, -1:]], 1)
    full_pr = th.cat([t(batch.prev_rewards), rew[:, -1:]], 1)
    return full_obs, full_pa, full_pr, act, rew, t(batch.dones), t(batch.mask)


def encoder(obs_dim: int, act_dim: int, p: RecurrentParams, device: str):
    """A history encoder with ``p``'s core (``p.context`` steps for the windowed core,
    ``p.ffm_memory`` traces by ``p.ffm_context`` frequencies for FFM)."""
    from memrl.memory.history import HistoryEncoder

    kwargs: dict[str, int] = {}
    if p.core == "window":
        kwargs = {"context": p.context}
    elif p.core == "ffm":
        kwargs = {"memory_size": p.ffm_memory, "context_size": p.ffm_context}
    return HistoryEncoder(obs_dim, act_dim, p.core, p.hidden_size, **kwargs).to(device)


def actor_optimiser(head: Any, actor_encoder: Any, p: RecurrentParams):
    """Adam over the actor's head and its encoder — unless the encoder is shared, when
    only the critic's loss trains it (Ni et al.'s ablation)."""
    from memrl.agents.nets import adam

    params = [*head.parameters()]
    if not p.shared_encoder:
        params += [*actor_encoder.parameters()]
    return adam(params, lr=p.learning_rate)


def encoders_and_critics(
    obs_dim: int, act_dim: int, p: RecurrentParams, device: str, discrete: bool = False
):
    """The parts recurrent SAC and TD3 share: ``(actor_encoder, critic_encoder, q1, q2)``.

    Separate actor and critic history encoders (Ni et al.'s recommendation) unless
    ``p.shared_encoder`` (their ablation: one module for both); twin Q heads on the
    critic's features and the action — or, for ``discrete`` actions, on the features
    alone with one output per action.
    """
    from memrl.agents.nets import mlp

    critic_encoder = encoder(obs_dim, act_dim, p, device)
    actor_encoder = critic_encoder if p.shared_encoder else encoder(obs_dim, act_dim, p, device)
    q_in, q_out = (p.hidden_size, act_dim) if discrete else (p.hidden_size + act_dim, 1)
    q1, q2 = (mlp(q_in, q_out, p.head).to(device) for _ in range(2))
    return actor_encoder, critic_encoder, q1, q2
