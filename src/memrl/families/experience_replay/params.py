"""Schema of the ``experience_replay`` section of ``params.yaml`` (Q-learning with replay, PER,
HER, replay across experiments, and the counter-claim: streaming RL without replay).

Loaded by :func:`memrl.families.load_family`, which finds it by the family's name:
a family's schema lives in its own module so that changing it reruns only that
family's DVC stage.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from memrl.agents.sb3_dqn import DQNParams, MinAtarDQNParams
from memrl.agents.sb3_sac import SACParams
from memrl.agents.stream_q import StreamQParams
from memrl.schema import EnvId, NonNegInt, PosFloat, PosInt, Prob, StrictModel


class QReplayParams(StrictModel):
    """Tabular Q-learning with experience replay (Szlak & Shamir 2021)."""

    n_states: PosInt
    p_forward: Annotated[float, Field(gt=0, le=1)]
    gamma: Annotated[float, Field(gt=0, lt=1)]
    lr_exponent: Annotated[float, Field(gt=0.5, le=1)]
    env_steps: PosInt
    eval_every: PosInt
    replay_counts: list[NonNegInt] = Field(min_length=1)
    replay_every: list[PosInt] = Field(min_length=1)


class CliffwalkParams(StrictModel):
    """Blind Cliffwalk (Schaul et al. 2016, Fig. 1)."""

    n_states: list[Annotated[int, Field(ge=2, le=20, strict=True)]] = Field(min_length=2)
    lr: PosFloat
    alpha: Annotated[float, Field(ge=0)]
    epsilon: PosFloat
    mse_threshold: PosFloat
    max_updates: PosInt


class PerDQNParams(StrictModel):
    env_id: EnvId
    total_timesteps: PosInt
    eval_episodes: PosInt
    alpha: Annotated[float, Field(ge=0)]
    beta0: Prob
    lr_scale: PosFloat
    dqn: DQNParams


class HerParams(StrictModel):
    n_bits: list[PosInt] = Field(min_length=1)
    steps_per_bit: PosInt
    n_sampled_goal: PosInt
    goal_selection_strategy: Literal["future", "final", "episode"]
    eval_episodes: PosInt
    success_threshold: Prob
    dqn: DQNParams


class PriorDataParams(StrictModel):
    """The 'previous experiment' whose replay RaE reuses (tracked by data.dvc)."""

    path: str
    seed: NonNegInt
    total_timesteps: PosInt


class RaEParams(StrictModel):
    env_id: EnvId
    total_timesteps: PosInt
    eval_episodes: PosInt
    prior_fraction: Annotated[float, Field(gt=0, lt=1)]
    early_fraction: Annotated[float, Field(gt=0, lt=1)]
    small_fraction: Annotated[float, Field(gt=0, lt=1)]
    sac: SACParams


class StreamParams(StrictModel):
    """Replay's counter-claim (Elsayed, Vasan & Mahmood 2024) on MinAtar: stream Q(lambda)
    (no buffer, batch 1) against DQN with a buffer of 1 and batch 1 (``dqn1``, the "stream
    barrier") and DQN with replay (``dqn``: MinAtar's own DQN, for ``dqn_timesteps`` steps)."""

    env_ids: list[EnvId] = Field(min_length=1)
    seeds: Annotated[int, Field(ge=2, strict=True)]  # its own: ~370 s a seed per game here
    total_timesteps: PosInt
    curve_points: Annotated[int, Field(ge=2, strict=True)]
    late_fraction: Annotated[float, Field(gt=0, le=1)]  # the training returns judged: the last
    stream_q: StreamQParams
    dqn1: DQNParams
    dqn: MinAtarDQNParams
    dqn_timesteps: PosInt  # the replay DQN's budget (issue 73: >= 20% of the paper's 5M)
    # where stream Q(lambda) and DQN1 train (for total_timesteps steps): "xla" the accelerated
    # engine (memrl.engines: the same algorithms step for step, ~10x faster), "torch" the
    # torch agent and SB3
    engine: Literal["xla", "torch"] = "xla"

    @model_validator(mode="after")
    def _stream_barrier(self) -> StreamParams:
        if (self.dqn1.buffer_size, self.dqn1.batch_size, self.dqn1.train_freq) != (1, 1, 1):
            raise ValueError("stream.dqn1 is DQN with buffer_size 1, batch_size 1, train_freq 1")
        if self.dqn.learning_starts >= self.dqn_timesteps:
            raise ValueError("stream.dqn.learning_starts must be below stream.dqn_timesteps")
        return self


class ExperienceReplayParams(StrictModel):
    seeds: Annotated[int, Field(ge=2, strict=True)]
    bootstrap_reps: PosInt
    q_replay: QReplayParams
    cliffwalk: CliffwalkParams
    per_dqn: PerDQNParams
    her: HerParams
    prior_data: PriorDataParams
    rae: RaEParams
    stream: StreamParams | None = None  # streaming RL, when the profile runs it

    @model_validator(mode="after")
    def _budgets_fit(self) -> ExperienceReplayParams:
        if self.per_dqn.dqn.learning_starts >= self.per_dqn.total_timesteps:
            raise ValueError("per_dqn.dqn.learning_starts must be below per_dqn.total_timesteps")
        if self.rae.sac.learning_starts >= self.rae.total_timesteps:
            raise ValueError("rae.sac.learning_starts must be below rae.total_timesteps")
        if self.q_replay.eval_every > self.q_replay.env_steps:
            raise ValueError("q_replay.eval_every must not exceed q_replay.env_steps")
        return self


FAMILY_PARAMS = ExperienceReplayParams


RAE_CONDITIONS = (
    "scratch",
    "RaE (all prior data)",
    "RaE (early, low-quality data)",
    "RaE (small data)",
)


def q_label(count: int, every: int) -> str:
    """The name of a Q-learning + replay configuration (``count`` replays every ``every``)."""
    if count == 0:
        return "no replay"
    return f"{count} replay{'s' * (count != 1)} every {every} step{'s' * (every != 1)}"


def q_replay_configs(p: QReplayParams) -> list[tuple[int, int]]:
    """(replay_count, replay_every) pairs; count 0 (no replay) once."""
    configs = [(0, 1)] if 0 in p.replay_counts else []
    configs += [(k, f) for k in p.replay_counts if k > 0 for f in p.replay_every]
    return configs
