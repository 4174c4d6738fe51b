"""Schema of the ``llm_memory_rl`` section of ``params.yaml`` (REMEMBERER, AgentFly, Memory-R1).

Loaded by :func:`memrl.families.load_family`, which finds it by the family's name:
a family's schema lives in its own module so that changing it reruns only that
family's DVC stage.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from memrl.schema import NonNegInt, PosFloat, PosInt, StrictModel

RLEM_CONDITIONS = ("llm", "static", "rlem", "rlem_no_bootstrap", "rlem_no_discouraged")


class LLMParams(StrictModel):
    """The frozen LLM (in this process, or behind a server) and the retrieval encoder."""

    # inprocess: smollm2 | tiny-random | local folder | HF id in the cache;
    # server: the model name the server serves
    model: str = Field(min_length=1)
    device: str = "auto"
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"  # weights' dtype once loaded
    temperature: Annotated[float, Field(ge=0)]  # softmax over candidate log-likelihoods
    embedder: Literal["minilm", "hashing"]
    backend: Literal["inprocess", "server"] = "inprocess"  # server: memrl.llm.server
    url: str | None = None  # server: its base URL, e.g. http://127.0.0.1:8080
    timeout: PosFloat = 60.0  # server: seconds per request
    retries: NonNegInt = 2  # server: further tries when it is down or too slow

    @model_validator(mode="after")
    def _server(self) -> LLMParams:
        if self.backend == "server" and not (self.url or "").startswith(("http://", "https://")):
            raise ValueError(
                "llm.backend: server needs llm.url, the server's base URL "
                f"(http://host:port), got {self.url!r}"
            )
        return self


class ShopDataParams(StrictModel):
    """The generated WebShop-like catalogue and task splits (data/, tracked by data.dvc)."""

    path: str
    seed: NonNegInt
    per_category: PosInt
    n_test: PosInt
    n_train: PosInt
    n_init: Annotated[int, Field(ge=2, strict=True)]


class ShopEnvParams(StrictModel):
    max_steps: PosInt
    n_results: PosInt


class RLEMParams(StrictModel):
    """REMEMBERER / RLEM (Zhang et al. 2023)."""

    conditions: list[Literal[RLEM_CONDITIONS]] = Field(min_length=1)  # type: ignore[valid-type]
    test_tasks: PosInt
    epochs: PosInt
    n_step: PosInt
    gamma: Annotated[float, Field(gt=0, le=1)]
    capacity: PosInt
    exemplars: PosInt


class AgentFlyParams(StrictModel):
    """AgentFly / Memento (2025): case-based memory with non-parametric or parametric selection."""

    conditions: list[Literal["none", "nonparametric", "parametric"]] = Field(min_length=1)
    tasks: PosInt  # the first `tasks` test tasks, replayed every iteration
    iterations: PosInt  # paper: 5
    k: PosInt  # cases in the prompt (paper: 4)
    q_learning_rate: Annotated[float, Field(gt=0)]
    q_epochs: PosInt  # passes over Q's examples after each episode


class DialogueDataParams(StrictModel):
    """The generated LoCoMo-like dialogues (data/, tracked by data.dvc)."""

    path: str
    seed: NonNegInt
    conversations: PosInt
    sessions: Annotated[int, Field(ge=2, strict=True)]
    train_questions: PosInt  # Memory-R1's split: 152 train / 81 val / the rest test
    val_questions: PosInt


MEMORY_R1_CONDITIONS = ("add_only", "heuristic", "prompted", "grpo")


class MemoryR1Params(StrictModel):
    """Memory-R1 (2025): memory manager trained with GRPO from the answer agent's exact match."""

    conditions: list[Literal[MEMORY_R1_CONDITIONS]] = Field(min_length=1)  # type: ignore[valid-type]
    answer_k: PosInt  # memories retrieved for the answer agent
    related_k: PosInt  # related memories the manager sees (and may update / delete)
    heuristic_noop: Annotated[float, Field(ge=-1, le=1)]
    heuristic_update: Annotated[float, Field(ge=-1, le=1)]
    hidden: PosInt
    epochs: PosInt  # passes over the training tuples (one per turn carrying a fact)
    group: Annotated[int, Field(ge=2, strict=True)]  # GRPO's G: operations sampled per state
    learning_rate: Annotated[float, Field(gt=0)]
    clip: Annotated[float, Field(gt=0)]
    update_epochs: PosInt
    beta: Annotated[float, Field(ge=0)]
    batch: PosInt  # training tuples per policy update
    warm_start_epochs: NonNegInt  # cloning the Mem0-style heuristic before GRPO (0: cold start)
    warm_start_lr: Annotated[float, Field(gt=0)]
    # the share of the clone's target spread over every valid operation
    warm_start_explore: Annotated[float, Field(ge=0, lt=1)]
    test_conversations: PosInt | None = None  # the first n test conversations (None: all)

    @model_validator(mode="after")
    def _thresholds(self) -> MemoryR1Params:
        if self.heuristic_update > self.heuristic_noop:
            raise ValueError("memory_r1.heuristic_update must not exceed heuristic_noop")
        return self


class LLMMemoryRLParams(StrictModel):
    # run r uses initial memory r % 2 and training set (r // 2) % 2: 4 runs cover all combos
    seeds: Annotated[int, Field(ge=2, strict=True)]
    bootstrap_reps: PosInt
    llm: LLMParams
    shop_data: ShopDataParams
    shop: ShopEnvParams
    rlem: RLEMParams
    agentfly: AgentFlyParams
    dialogue_data: DialogueDataParams
    memory_r1: MemoryR1Params
    # Memory-R1's GRPO runs where LLM-7/8's design needs more than ``seeds`` (None: seeds):
    # its baselines are deterministic, one run each, and n runs against one reach at best
    # p = 2^-n, so 6 are the fewest that can decide at 95% (5 reach 1/32 > 1/40)
    memory_r1_seeds: Annotated[int, Field(ge=2, strict=True)] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> LLMMemoryRLParams:
        if self.rlem.test_tasks > self.shop_data.n_test:
            raise ValueError(
                f"rlem.test_tasks ({self.rlem.test_tasks}) exceeds the generated test split "
                f"(shop_data.n_test = {self.shop_data.n_test})"
            )
        if self.agentfly.tasks > self.shop_data.n_test:
            raise ValueError(
                f"agentfly.tasks ({self.agentfly.tasks}) exceeds the generated test split "
                f"(shop_data.n_test = {self.shop_data.n_test})"
            )
        if "rlem" not in self.rlem.conditions:
            raise ValueError("rlem.conditions must include 'rlem' (the method under test)")
        return self


FAMILY_PARAMS = LLMMemoryRLParams
