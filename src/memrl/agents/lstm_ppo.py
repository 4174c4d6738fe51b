"""LSTM-PPO with rl-zoo's ``ppo_lstm`` settings: :mod:`memrl.agents.ppo` with the LSTM core.

sb3-contrib's ``RecurrentPPO`` algorithm as the zoo configures it (separate actor and critic
LSTMs over the raw observation, ReLU heads ``net_arch``, no orthogonal init, SB3's
``VecNormalize`` with ``normalize``, lr and clip linear to 0 with ``schedule: linear``), written
for speed on a CPU: whole env segments cut at their episode starts go through each LSTM in one
fused call per minibatch, where sb3-contrib pads the pieces in Python and steps its LSTM one
step at a time whenever a minibatch holds an episode start (its issue #113).
``benchmarks/lstm_ppo.py`` compares the two.

This module keeps the zoo's config (:class:`RecurrentPPOParams`, shared with sb3-contrib's
``RPPO`` runs) and maps it onto the general agent: one algorithm, one file
(:mod:`memrl.agents.ppo`), whichever core it runs.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from memrl.agents import ppo
from memrl.agents.contract import NO_EVALS, EnvFn, Evals, TrainLog
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

    def ppo(self) -> ppo.PPOParams:
        """The general agent's config: the LSTM core, one for the actor and one for the
        critic (``enable_critic_lstm``), SB3's value loss (``vf_coef`` 0.5, unclipped)."""
        fields = self.model_dump(exclude={"lstm_hidden_size"})
        return ppo.PPOParams(core="lstm", hidden_size=self.lstm_hidden_size, **fields)


def train(
    env_fn: EnvFn,
    p: RecurrentPPOParams,
    total_steps: int,
    seed: int,
    evals: Evals = NO_EVALS,
) -> TrainLog:
    """:func:`memrl.agents.ppo.train` with the zoo's LSTM-PPO (:meth:`RecurrentPPOParams.ppo`)."""
    return ppo.train(env_fn, p.ppo(), total_steps, seed, evals)
