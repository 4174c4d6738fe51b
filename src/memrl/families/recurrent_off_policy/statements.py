"""What the recurrent off-policy papers say: each claim as data (statement, source, the
paper's value and budget, the number it states), judged by :mod:`.claims` on our runs."""

from __future__ import annotations

from memrl.stats.claims import Budget, Claim, Hardware, PaperEffect

FAMILY = "recurrent_off_policy"
YANG = "Yang & Nguyen 2021, Recurrent Off-policy Baselines for Memory-based Continuous Control"
FFM = "Morad et al. 2023, Reinforcement Learning with Fast and Forgetful Memory"
S5 = "Lu et al. 2023, Structured State Space Models for In-Context Reinforcement Learning"
FINAL = "mean return of {n} deterministic-policy episodes after training"
RELIABLE = (
    "share of seeds whose final return ({n} deterministic-policy episodes) reaches the "
    "near-optimal threshold: a mean over seeds, so no failed seed is trimmed"
)
STEPS = "env steps"
MMER = (
    "MMER: the maximum over training of the mean episodic return per update (POPGym's "
    "metric; its returns are scaled to [-1, 1] per episode)"
)
POPGYM = (
    "Morad et al. 2023 (ICLR), POPGym: Benchmarking Partially Observable Reinforcement Learning"
)
EVALS = (
    "greedy-policy evaluations at 25/50/75% of the budget (an env of their own) and the final "
    "evaluation"
)

# The timing claims' hardware: both papers attribute the speed-up to computing a sequence's
# states in parallel (a scan of O(log n) depth), which is parallel work only on many cores.
FFM_HARDWARE = Hardware(
    "accelerators (GPU parallel scans)",
    ("cuda",),
    "training speeds two orders of magnitude faster than RNNs, attributed to its logarithmic "
    "time and linear space complexity; during training, the aggregator computes "
    "S_k, ..., S_n in parallel (logarithmic time: a parallel scan's depth, on parallel hardware)",
    "FFM, Abstract and Sec. 3 (Fig. 2's caption)",
)
S5_HARDWARE = Hardware(
    "accelerators (GPU parallel scans)",
    ("cuda",),
    "fast inference speeds and parallelisable training ... running over five times faster "
    "(popjaxrl: whole PPO training jitted in JAX, S5's associative scan run in parallel on "
    "accelerators)",
    "S5, Abstract; reference code popjaxrl",
)

RO_1 = Claim(
    family=FAMILY,
    claim_id="RO-1",
    paper=YANG,
    source="Sec. 5, Fig. 2 (Pendulum-P / -V learning curves)",
    statement="Recurrent SAC reaches near-optimal return on Pendulum with only positions (-P) or only "
    "velocities (-V) observed, where SAC with an MLP (no memory) fails.",
    paper_value="qualitative: RSAC near-optimal (~-150 to -200) within 50k steps; MLP SAC fails",
    metric=FINAL,
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(50_000, STEPS),
    # the band's lower end (params.yaml's near_optimal): above it is "near-optimal"
    paper_effect=PaperEffect(
        "level", -200, "near-optimal (~-150 to -200)", "Sec. 5, Fig. 2 (read off the curves)"
    ),
)
RO_2 = Claim(
    family=FAMILY,
    claim_id="RO-2",
    paper=YANG,
    source="Sec. 5 (discussion of Fig. 2)",
    statement="Recurrent SAC is more reliable than recurrent TD3 on the POMDP tasks.",
    paper_value="qualitative",
    metric=RELIABLE,
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(50_000, STEPS),
)
RO_3 = Claim(
    family=FAMILY,
    claim_id="RO-3",
    paper="Ni et al. 2022, Recurrent Model-Free RL Can Be a Strong Baseline for Many POMDPs",
    source="Sec. 5.1, Fig. 3 (shared vs separate encoders); pomdp-baselines notebook",
    statement="Separate actor and critic memory encoders beat one shared encoder.",
    paper_value="qualitative; their TD3-LSTM notebook reaches -183 on Pendulum-V after 31k steps",
    metric=FINAL,
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(50_000, STEPS),  # Pendulum-V: 50k
)
RO_4 = Claim(
    family=FAMILY,
    claim_id="RO-4",
    paper="sb3-contrib RecurrentPPO, rl-baselines3-zoo benchmark",
    source="rl-zoo benchmark.md (CartPoleNoVel-v1, PendulumNoVel-v1)",
    statement="RecurrentPPO (LSTM) solves CartPole with velocities hidden (return 500).",
    paper_value="CartPoleNoVel-v1: 500 +- 0 at 100k steps; PendulumNoVel-v1: -218 +- 140 at 100k",
    metric=FINAL,
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(100_000, STEPS),
    paper_effect=PaperEffect(
        "level",
        475,
        "solves (500 +- 0): tested against CartPole-v1's solved threshold, 475",
        "rl-zoo benchmark.md; gymnasium CartPole-v1 reward_threshold",
    ),
)
RO_5 = Claim(
    family=FAMILY,
    claim_id="RO-5",
    paper=FFM,
    source="Sec. 5, Fig. 3 (POPGym mean return, FFM vs GRU)",
    statement="FFM's return matches or beats a GRU's on POPGym tasks.",
    paper_value="FFM best of the memory models on POPGym aggregate; >= GRU on most tasks "
    "(PPO, 15M samples per task, scored by MMER)",
    metric=MMER,
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(15_000_000, STEPS),  # samples per task (Sec. 5)
)
RO_6 = Claim(
    family=FAMILY,
    claim_id="RO-6",
    paper=FFM,
    source="Sec. 5 (wall-clock efficiency)",
    statement="FFM trains about two orders of magnitude faster than a GRU.",
    paper_value="~100x faster training than their GRU (a per-step GRUCell loop)",
    metric="ms per training step (forward + backward over the batch of sequences)",
    higher_is_better=False,
    regime="final",
    paper_budget=Budget(8 * 1024, "sequence steps per timed batch"),
    machine_dependent=True,
    # "about two orders of magnitude": at least half-way there on a log scale
    paper_effect=PaperEffect(
        "ratio",
        10**1.5,
        "about two orders of magnitude faster (tested as >= 10^1.5 = 32x: nearer two orders "
        "than one on a log scale)",
        "Sec. 5 (wall-clock efficiency)",
    ),
    hardware=FFM_HARDWARE,
)
RO_7 = Claim(
    family=FAMILY,
    claim_id="RO-7",
    paper="Cherepanov et al. 2024, Unraveling the Complexity of Memory in RL Agents",
    source="Sec. 5 (Passive T-Maze, context length K vs correlation horizon xi)",
    statement="With correlation horizon xi, an agent whose context K < xi fails while one with K >= xi "
    "(or a recurrent memory) succeeds: short- vs long-term memory.",
    paper_value="qualitative (success ~1 for K >= xi, ~0.5 (chance) for K < xi)",
    metric="success rate of {n} deterministic-policy episodes after training",
    higher_is_better=True,
    regime="final",
    paper_budget=None,  # "far longer training"; the number was not retrieved
)

RO_8 = Claim(
    family=FAMILY,
    claim_id="RO-8",
    paper=S5,
    source="Abstract and POPGym results (reference code: popjaxrl)",
    statement="S5 with in-scan resets outperforms an RNN (GRU) on POPGym tasks.",
    paper_value="qualitative: S5 above the GRU on most of their POPGym subset (PPO, 15M "
    "steps per task, popjaxrl's per-update mean return)",
    metric=MMER,
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(15_000_000, STEPS),  # popjaxrl run_popgym: 15M per task
)
RO_9 = Claim(
    family=FAMILY,
    claim_id="RO-9",
    paper=S5,
    source="Abstract (runtime against the GRU)",
    statement="S5 runs over five times faster than an RNN (GRU).",
    paper_value="> 5x faster than their GRU (a scanned GRU cell), whole PPO training in JAX "
    "on accelerators",
    metric="ms per env step of whole PPO training (rollouts and updates)",
    higher_is_better=False,
    regime="final",
    paper_budget=Budget(64 * 1024, "env steps per PPO update"),  # popjaxrl: 64 envs x 1024
    machine_dependent=True,
    paper_effect=PaperEffect("ratio", 5, "over five times faster", "Abstract"),
    hardware=S5_HARDWARE,
)

RO_12 = Claim(
    family=FAMILY,
    claim_id="RO-12",
    paper=POPGYM,
    source="Sec. 5 (results over the suite) and the abstract; reference popgym/baselines/ppo.py",
    statement="Counter-claim to RO-5 and RO-8: the GRU is the strongest memory model overall "
    "on POPGym (the highest suite-wide MMER of its memory models).",
    paper_value="qualitative: the GRU best of POPGym's 13 memory models (LSTM, S4D, linear "
    "attention, ...) by MMER averaged over the suite (RLlib PPO, 15M steps per task)",
    metric=MMER,
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(15_000_000, STEPS),  # POPGYM_STEPS default 15e6
)

RO_10 = Claim(
    family=FAMILY,
    claim_id="RO-10",
    paper="Cherepanov et al. 2023, Recurrent Action Transformer with Memory (RATE)",
    source="T-Maze experiments; reference run_experiments/TMaze.sh (CognitiveAISystems/RATE)",
    statement="On the T-Maze, RATE keeps succeeding at corridors longer than its attention "
    "window, where a decision transformer with the same window falls to chance.",
    paper_value="RATE ~1.0 success far beyond its 50-step segments (trained on up to 3 "
    "segments); DT with context 50 at chance beyond it",
    metric="success rate of {n} greedy episodes after behaviour cloning of oracle runs",
    higher_is_better=True,
    regime="final",
    paper_budget=Budget(200, "epochs"),  # TMaze.sh: --training.epochs=200
)

RO_11 = Claim(
    family=FAMILY,
    claim_id="RO-11",
    paper="Irie, Gopalakrishnan & Schmidhuber 2023, Exploring the Promise and Limits of "
    "Real-Time Recurrent Learning; Cherepanov et al. 2024 (the memory card's K)",
    source="the card's thesis: a recurrent core's context is what its training lets "
    "gradients reach (truncation K); RTRL has no truncation",
    statement="Recurrent cores trained with backpropagation truncated at K steps do not learn "
    "to carry the T-Maze cue further than K steps, while an element-wise LSTM of the same "
    "size trained by exact RTRL learns it.",
    paper_value="qualitative: truncated cores at chance beyond K, RTRL above chance",
    metric="success rate of {n} greedy episodes after behaviour cloning of oracle runs",
    higher_is_better=True,
    regime="final",
    paper_budget=None,
)
