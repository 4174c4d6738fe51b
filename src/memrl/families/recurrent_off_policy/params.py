"""Schema of the ``recurrent_off_policy`` section of ``params.yaml`` (recurrent SAC/TD3, RecurrentPPO, FFM, T-Maze).

Loaded by :func:`memrl.families.load_family`, which finds it by the family's name:
a family's schema lives in its own module so that changing it reruns only that
family's DVC stage.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, model_validator

from memrl.agents.lstm_ppo import RecurrentPPOParams
from memrl.agents.offline_policies import ModelName
from memrl.agents.ppo import PPOParams
from memrl.agents.recurrent_loop import RecurrentParams
from memrl.agents.sb3_sac import SACParams
from memrl.envs import popgym_levels  # noqa: F401  (POPGym's harder levels, before env ids validate)
from memrl.memory.cores import CORES, core_name
from memrl.schema import EnvId, PosInt, StrictModel

PLAIN = ("SAC", "SAC-prev", "RPPO")  # methods without a choice of memory core
WITH_CORE = ("RSAC", "RTD3", "SACD", "PPO")  # <algorithm>-<core label>[-shared]
POPGYM = "popgym/"  # env ids of POPGym's own environments (the ``popgym`` package)


def parse_method(name: str) -> tuple[str, str | None, bool]:
    """``"RSAC-LSTM-shared"`` -> ``("RSAC", "lstm", True)``; ``"SAC"`` -> ``("SAC", None, False)``;
    ``"SAC-prev"`` -> ``("SAC-prev", None, False)``; ``"PPO-S5"`` -> ``("PPO", "s5", False)``.
    The cores' labels are :data:`memrl.memory.cores.CORES`'."""
    if name in PLAIN:
        return name, None, False
    algo, _, rest = name.partition("-")
    label = rest.removesuffix("-shared")
    by_label = {entry.label: kind for kind, entry in CORES.items()}
    if algo in WITH_CORE and label in by_label and not (algo == "PPO" and rest != label):
        return algo, by_label[label], rest != label
    labels = "|".join(by_label)
    raise ValueError(
        f"unknown method '{name}': use SAC (SB3, no memory), SAC-prev (SB3 SAC reading "
        "[o_t, a_t-1, r_t-1]), RPPO (sb3-contrib), PPO-<{labels}> (memrl's PPO; PPO-LSTM "
        f"off POPGym: the zoo's LSTM-PPO), or <{'|'.join(WITH_CORE[:-1])}>-<{labels}>[-shared], "
        "e.g. RSAC-LSTM or RTD3-GRU-shared"
    )


def _method_name(name: str) -> str:
    parse_method(name)
    return name


MethodName = Annotated[str, AfterValidator(_method_name)]


class ROEnvParams(StrictModel):
    """One POMDP of the recurrent off-policy family and the methods run on it."""

    env_id: EnvId
    total_timesteps: PosInt
    methods: list[MethodName] = Field(min_length=1)
    # where a claim's design needs more seeds than the family's (RO-4 against a constant)
    seeds: Annotated[int, Field(ge=2, strict=True)] | None = None


class TMazeParams(StrictModel):
    """Passive T-Maze sweep (Cherepanov et al.): success against corridor length."""

    lengths: list[PosInt] = Field(min_length=2)
    episodes: PosInt  # training episodes at every length
    eval_episodes: PosInt  # deterministic-policy episodes scoring success
    methods: list[MethodName] = Field(min_length=2)


class MemoryCardParams(StrictModel):
    """The memory card (Cherepanov et al. 2024's classification): every model trained the
    same way, by behaviour cloning of oracle Passive T-Maze trajectories with context ``K``
    (:mod:`memrl.agents.cloning`), then scored at correlation horizons ``xi`` around ``K``."""

    context: PosInt  # K
    horizons: list[PosInt] = Field(min_length=2)  # xi scored, below and past K
    train_lengths: list[PosInt] = Field(min_length=1)  # oracle corridors trained on
    episodes: PosInt  # oracle trajectories per training length
    eval_episodes: PosInt  # greedy episodes per horizon
    models: list[ModelName] = Field(min_length=2)
    transformer: dict[str, float | int]  # OfflineParams of dt and rate
    recurrent: dict[str, float | int]  # OfflineParams of the memory cores
    rtrl: dict[str, float | int] = Field(default_factory=dict)  # the RTRL core's, over recurrent

    def offline(self, model: str) -> Any:
        """The validated :class:`memrl.agents.offline_policies.OfflineParams` of ``model``."""
        from memrl.agents.offline_policies import RTRL, TRANSFORMERS, OfflineParams

        hp = self.transformer if model in TRANSFORMERS else self.recurrent
        if model == RTRL:  # one optimiser step per trajectory, not per segment
            hp = hp | self.rtrl
        return OfflineParams(model=model, context=self.context, **hp)

    @model_validator(mode="after")
    def _around_k(self) -> MemoryCardParams:
        K = self.context
        if not (min(self.horizons) <= K < max(self.horizons)):
            raise ValueError(f"horizons {self.horizons} must reach both sides of K = {K}")
        inside = [xi for xi in self.horizons if K < xi <= max(self.train_lengths)]
        if not inside:
            raise ValueError(
                f"no horizon past K = {K} lies inside the training corridors "
                f"{self.train_lengths}: the card could tell short-term from long-term only "
                "by extrapolation"
            )
        for m in self.models:
            self.offline(m)
        return self


def _truncated(kind: str) -> str:
    if CORES[core_name(kind)].k != "truncation":
        raise ValueError(f"{kind!r} is not trained by truncated backpropagation (K is its context)")
    return kind


TruncatedCore = Annotated[str, AfterValidator(_truncated)]


class TruncationParams(StrictModel):
    """RO-11's fair test (issue 56): cores cloned from oracle T-Mazes whose every corridor is
    longer than ``K``, so cue and turn never share a segment of truncated backpropagation.
    Arms per seed: each core truncated at ``K`` at every budget in ``epochs``; the same core
    with backpropagation through the whole corridor (its positive control); RTRL."""

    context: PosInt  # K, the truncation
    train_lengths: list[PosInt] = Field(min_length=1)  # oracle corridors, every one > K
    horizons: list[PosInt] = Field(min_length=1)  # xi scored; past the corridors: extrapolation
    episodes: PosInt  # oracle trajectories per training length
    eval_episodes: PosInt  # greedy episodes per horizon
    seeds: Annotated[int, Field(ge=2, strict=True)]
    cores: list[TruncatedCore] = Field(min_length=1)
    epochs: list[PosInt] = Field(min_length=1)  # the truncated cores' budgets
    recurrent: dict[str, float | int]  # OfflineParams of the cores (as the card's)
    rtrl: dict[str, float | int]  # RTRL's, over recurrent

    def arms(self) -> list[tuple[str, str, Any]]:
        """(arm name, model, validated OfflineParams) of every arm a seed trains."""
        from memrl.agents.offline_policies import OfflineParams

        K, E, T = self.context, max(self.epochs), max(self.train_lengths)
        out = [
            (
                truncated_arm(c, e),
                c,
                OfflineParams(model=c, context=K, **self.recurrent | {"epochs": e}),
            )
            for c in self.cores
            for e in self.epochs
        ]
        # segments as long as the longest corridor: one segment, the gradient through it all
        out += [
            (bptt_arm(c), c, OfflineParams(model=c, context=T, **self.recurrent | {"epochs": E}))
            for c in self.cores
        ]
        hp = self.recurrent | self.rtrl
        out.append(("RTRL", "rtrl", OfflineParams(model="rtrl", context=K, **hp)))
        return out

    @model_validator(mode="after")
    def _fair(self) -> TruncationParams:
        K = self.context
        if min(self.train_lengths) <= K:
            raise ValueError(
                f"truncation.train_lengths {self.train_lengths} must all be longer than K = {K}: "
                "a corridor <= K puts cue and turn in one segment, where a truncated core can "
                "learn to keep the cue"
            )
        if not any(K < xi <= max(self.train_lengths) for xi in self.horizons):
            raise ValueError(
                f"truncation.horizons {self.horizons}: none past K = {K} in the corridors"
            )
        self.arms()
        return self


def truncated_arm(core: str, epochs: int) -> str:
    return f"{CORES[core].label.upper()} truncated, {epochs} epochs"


def bptt_arm(core: str) -> str:
    return f"{CORES[core].label.upper()} full BPTT"


class RecurrentOffPolicyParams(StrictModel):
    seeds: Annotated[int, Field(ge=2, strict=True)]
    bootstrap_reps: PosInt
    curve_points: Annotated[int, Field(ge=2, strict=True)]
    eval_episodes: PosInt  # deterministic-policy episodes after training: the claims' score
    near_optimal: dict[str, float]  # env id -> return counted as "near-optimal"
    envs: list[ROEnvParams] = Field(min_length=1)
    tmaze: TMazeParams
    rsac: RecurrentParams
    rtd3: RecurrentParams
    sacd: RecurrentParams  # the T-Maze agents
    sacd_popgym: RecurrentParams  # SACD on the POPGym envs (the FFM reference's settings)
    sac: SACParams
    rppo: RecurrentPPOParams
    ppo_popgym: PPOParams | None = None  # PPO-<core> on POPGym (popjaxrl's run_popgym.py)
    ppo_timing: dict[str, PosInt] | None = None  # RO-9: whole PPO training per env step
    benchmark: dict[str, PosInt]  # memory cores timing: batch, steps, inputs, hidden, repeats
    card: MemoryCardParams | None = None  # the memory card, when the profile draws it
    truncation: TruncationParams | None = None  # RO-11's fair test

    def ppo_params(self, method: str, env_id: str) -> PPOParams | RecurrentPPOParams:
        """PPO's hyperparameters on ``env_id``: POPGym's (``ppo_popgym``, the method's core)
        on a POPGym env, the zoo's LSTM-PPO (``rppo``) elsewhere."""
        core = parse_method(method)[1]
        if env_id.startswith(POPGYM):
            if self.ppo_popgym is None:
                raise ValueError(f"{method} on {env_id} needs a ppo_popgym block")
            return self.ppo_popgym.model_copy(update={"core": core})
        if core != "lstm":
            raise ValueError(f"{method} on {env_id}: off POPGym, PPO runs the zoo's PPO-LSTM")
        return self.rppo

    def agent_params(self, method: str, tmaze: bool = False) -> RecurrentParams:
        """The hyperparameters of a recurrent method, its core and encoder sharing set
        (SAC-discrete: ``sacd`` on the T-Maze, ``sacd_popgym`` elsewhere)."""
        algo, core, shared = parse_method(method)
        sacd = self.sacd if tmaze else self.sacd_popgym
        block = {"RSAC": self.rsac, "RTD3": self.rtd3, "SACD": sacd}[algo]
        return block.model_copy(update={"core": core, "shared_encoder": shared})

    @model_validator(mode="after")
    def _consistent(self) -> RecurrentOffPolicyParams:
        ids = [e.env_id for e in self.envs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"envs lists an env twice: {ids}")
        for e in self.envs:
            for m in e.methods:
                algo = parse_method(m)[0]
                if algo == "PPO":
                    self.ppo_params(m, e.env_id)
                if algo in ("RSAC", "RTD3", "SAC", "SAC-prev", "SACD"):
                    hp = (
                        self.sac
                        if algo.startswith("SAC-") or algo == "SAC"
                        else self.agent_params(m)
                    )
                    if hp.learning_starts >= e.total_timesteps:
                        raise ValueError(f"{m}: learning_starts must be below {e.env_id}'s budget")
        if max(self.tmaze.lengths) > self.sacd.seq_len:
            raise ValueError(
                f"sacd.seq_len ({self.sacd.seq_len}) must cover the longest T-Maze "
                f"({max(self.tmaze.lengths)} steps): windows start from a zero memory"
            )
        missing = {"batch", "steps", "inputs", "hidden", "repeats"} - set(self.benchmark)
        if missing:
            raise ValueError(f"benchmark needs {sorted(missing)}")
        return self


FAMILY_PARAMS = RecurrentOffPolicyParams
