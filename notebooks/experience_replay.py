# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Experience replay: does replaying memories do what the papers say?
#
# Eight claims about replay (ER-1 to ER-8, on five methods), each rerun over several seeds and
# aggregated with rliable (interquartile mean, 95% stratified-bootstrap CI):
#
# 1. **Q-learning with replay** converges faster on MDPs where replay helps (Szlak & Shamir 2021).
# 2. **Prioritized replay** needs far fewer updates than uniform replay on the Blind Cliffwalk,
#    and speeds up DQN (Schaul et al. 2016).
# 3. **Hindsight replay** lets DQN solve bit flipping far beyond where plain DQN fails
#    (Andrychowicz et al. 2017).
# 4. **Replay across Experiments** — mixing an earlier experiment's data into replay — beats
#    learning from scratch, even with poorer or less data (Tirumala et al. 2023).
# 5. **Streaming deep RL**, replay's counter-claim: stream Q(λ), with no replay buffer, learns
#    MinAtar where DQN with a buffer of one fails, and keeps up with DQN with replay (Elsayed,
#    Vasan & Mahmood 2024).
#
# All training code lives in `memrl`: each (configuration, seed) is one job of
# `memrl.families.experience_replay.jobs`, stored on its own by the `runs_experience_replay`
# stage. This notebook loads the runs, plots them and states the verdicts
# (`memrl.families.experience_replay.claims`). Opened on its own (no `runs_dir`), it runs the
# jobs of `profile` itself into `.cache/runs/` (the defaults: the quick `smoke` profile).

# %% tags=["parameters"]
profile = "smoke"  # smoke | default | paper (see params.yaml)
output_dir = ""  # "" writes to a scratch folder; the DVC stage passes its staging folder
runs_dir = ""  # "" reads the pipeline's runs, runs what they lack here; the stage passes its store
overrides = {}  # this run's changes to params.yaml, validated like it: {"seeds": 3}

# %%
from memrl.nbtools import check_parameters

# papermill only warns about an undeclared parameter: fail instead, naming it
check_parameters(globals(), ("profile", "output_dir", "runs_dir", "overrides"))

# %%
import matplotlib.pyplot as plt

from memrl import families, plots, runner
from memrl.families.experience_replay import claims as er_claims
from memrl.families.experience_replay import tables
from memrl.results import (
    budget_table,
    claims_text,
    save_claims,
    save_figure,
    save_table,
)
from memrl.results import (
    output_dir as resolve_output,
)
from memrl.stats.floors import env_floor, split, with_floor

family = families.get("experience_replay")
cfg = families.load_family(family.name, profile, overrides=overrides)  # every value checked
out = resolve_output(output_dir)
print(f"profile={profile}  seeds={cfg.seeds}")
# the runs stage's store; opened on its own, the profile's jobs run here first (stored ones reused)
records, floors = split(runner.family_runs(family, cfg, profile, runs_dir, overrides))
results = tables.load(records)
sweeps = tables.sweeps(results)  # every figure: IQM over seeds with its 95% CI (rliable)

# %% [markdown]
# ## 1. Tabular Q-learning with experience replay (Szlak & Shamir 2021)
#
# A chain whose only reward sits behind a run of uncertain "forward" steps, explored by a
# uniformly random policy. Every env step makes one Q-learning update; every `replay_every`
# steps, `replay_count` stored transitions are replayed. The paper predicts that replay
# speeds convergence here, the more so the more (and more often) one replays.

# %%
fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4))
plots.ci_curves(
    ax,
    sweeps["q_replay"],
    "environment steps",
    "|Q - Q*|∞ / |Q*|∞",
    "Q-learning with replay",
    by="config",
)
plots.floor_band(ax, env_floor(floors, "chain", floor="no learning"), "no learning: Q = 0 (floor)")
ax.set_yscale("log")
# the paper's two knobs: how many replays, how often
final = sweeps["q_final"]
plots.ci_points(
    ax2,
    final[final.replay_count > 0],
    "replay_count",
    "replays per replay event",
    "final error",
    "Final error vs number and frequency of replays",
    by="replay_every",
    label=lambda every: f"replay every {every} step(s)",
)
none = final[final.replay_count == 0].iloc[0]
ax2.axhline(none.iqm, color="k", ls="--", label="no replay")
ax2.axhspan(none.ci_low, none.ci_high, color="k", alpha=0.1, lw=0)
ax2.set_xscale("log")
ax2.legend(fontsize=8)
save_figure(fig, out / "figures" / "q_replay.png")

# %% [markdown]
# ## 2a. Prioritized replay on the Blind Cliffwalk (Schaul et al. 2016, Fig. 1)
#
# The memory holds what `2^n` random episodes produce; the single rewarding transition is
# one slot among `2(2^n - 1)`. We count replay updates until the Q-table is learnt.

# %%
fig, ax = plt.subplots(figsize=(6, 4))
plots.ci_points(
    ax,
    sweeps["cliffwalk"],
    "memory_size",
    "transitions in replay memory",
    "updates until learnt",
    "Blind Cliffwalk",
)
ax.set(xscale="log", yscale="log")
save_figure(fig, out / "figures" / "cliffwalk.png")

# %% [markdown]
# ## 2b. DQN with prioritized replay vs uniform replay
#
# `PrioritizedReplayBuffer` plugs into stable-baselines3; `PrioritizedDQN` adds the IS-weighted
# loss and the priority updates (α = 0.6, β 0.4 → 1, step size ÷ 4, as in the paper).

# %%
fig, ax = plt.subplots(figsize=(7, 4))
plots.ci_curves(
    ax,
    sweeps["per_dqn"],
    "environment steps",
    "training return (last 10 episodes)",
    cfg.per_dqn.env_id,
)
plots.floor_band(ax, env_floor(floors, cfg.per_dqn.env_id))
save_figure(fig, out / "figures" / "per_dqn.png")

# %% [markdown]
# ## 3. Hindsight experience replay on bit flipping (Andrychowicz et al. 2017, Fig. 1)

# %%
fig, ax = plt.subplots(figsize=(6, 4))
plots.ci_points(
    ax,
    sweeps["her"],
    "n_bits",
    "number of bits",
    "final success rate",
    "Bit flipping: DQN vs DQN+HER",
)
ax.set_ylim(-0.05, 1.05)
save_figure(fig, out / "figures" / "her.png")

# %% [markdown]
# ## 4. Replay across Experiments (Tirumala et al. 2023)
#
# The earlier experiment is one SAC run kept in `data/` (tracked by `data.dvc`). Each RaE
# minibatch takes a fixed share from it; the ablations give the agent only the run's early,
# poor-quality part, or a small random part of it.

# %%
fig, ax = plt.subplots(figsize=(7, 4))
plots.ci_curves(
    ax,
    sweeps["rae"],
    "environment steps",
    "training return (last 10 episodes)",
    cfg.rae.env_id,
    by="condition",
)
plots.floor_band(ax, env_floor(floors, cfg.rae.env_id))
save_figure(fig, out / "figures" / "rae.png")

# %% [markdown]
# ## 5. Replay's counter-claim: streaming deep RL (Elsayed, Vasan & Mahmood 2024)
#
# Stream Q(λ) learns from each transition once, as it arrives: no replay buffer, no batch, no
# target network; eligibility traces, a step-size bound (ObGD), sparse initialisation,
# LayerNorm and online normalisation keep it stable (`memrl.agents.stream_q`). Against it:
# DQN with a buffer of 1 and batch 1 (DQN1, the "stream barrier") and DQN with its replay
# buffer, on MinAtar games, each beside a random policy. Training returns (the paper's curves).

# %%
if cfg.stream is not None and len(sweeps["stream"]):
    games = list(dict.fromkeys(sweeps["stream"].env))
    fig, axes = plt.subplots(1, len(games), figsize=(6 * len(games), 4), squeeze=False)
    for ax, game, env_id in zip(axes[0], games, cfg.stream.env_ids, strict=True):
        plots.ci_curves(
            ax,
            sweeps["stream"][sweeps["stream"].env == game],
            "environment steps",
            "training return (last 10 episodes)",
            game,
            by="method",
        )
        plots.floor_band(ax, env_floor(floors, env_id))
    save_figure(fig, out / "figures" / "stream.png")

# %% [markdown]
# ## Claims
#
# Verdicts come from the runs by one rule (`memrl.stats.claims.VERDICT_RULE`); nothing here
# is typed in.

# %%
rows = er_claims.claims(cfg, results, floors)
fig = plots.forest(rows)
save_figure(fig, out / "figures" / "claims.png")
for name, df in results.items():
    save_table(df, out / "tables" / f"{name}.csv")
plot_floors = {
    "q_replay.csv": env_floor(floors, "chain", floor="no learning"),
    "per_dqn.csv": env_floor(floors, cfg.per_dqn.env_id),
    "rae.csv": env_floor(floors, cfg.rae.env_id),
}
for name, df in tables.plot_data(cfg, sweeps).items():
    save_table(with_floor(df, plot_floors.get(name)), out / "plots" / name)
save_claims(out, rows)

# %% [markdown]
# ## Coverage and trend: what this budget can show
#
# Each claim is about an *early* regime (the first part of training) or a *final* one
# (after the paper's budget); *coverage* is our budget over the paper's. A final claim run on
# less than half the paper's budget is narrowed whichever way it goes: comparisons that hold
# read **partially (budget)**, comparisons that fail **partially contradicted (budget)**, and
# where none decides it is **inconclusive (budget)**. Each panel shows a comparison's effect
# (IQM difference, > 0 the paper's way, 95% CI band) at 25, 50, 75 and 100% of our budget,
# from the same runs — whether the gap is widening, closing or flipping as training goes on.

# %%
fig = plots.trend_panels(rows)
if fig is not None:
    save_figure(fig, out / "figures" / "trends.png")
print(budget_table(rows).to_string())

# %%
# NBVAL_CHECK_OUTPUT
print(claims_text(rows))
