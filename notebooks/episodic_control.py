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
# # Episodic control: does a table of remembered returns learn faster than DQN?
#
# Four claims (EC-1 to EC-4, on three methods), each rerun over several seeds and aggregated
# with rliable (interquartile mean, 95% stratified-bootstrap CI):
#
# 1. **MFEC** (Blundell et al. 2016) — remember, for every state and action, the best
#    Monte-Carlo return seen; estimate unseen states from their 11 nearest neighbours —
#    learns faster than DQN early in training.
# 2. **State aggregation** (Pinto 2020) — merge a new state into a stored one within a
#    distance threshold — cuts MFEC's memory and lookup cost with no significant loss of
#    return at conservative thresholds.
# 3. **NEC** (Pritzel et al. 2017) — a learned embedding and a differentiable neural
#    dictionary per action, written with N-step returns — beats DQN early and matches or
#    beats MFEC.
#
# **Environments.** The papers use Atari, which is out of reach on a 2-core CPU. MinAtar
# (Young & Tian 2019) keeps Atari's game dynamics and sticky actions in 10x10 frames with
# one channel per object type, so it stands in for Atari: *Breakout* for games where
# states recur exactly (a small table, MFEC's best case) and *Space Invaders* for games
# whose memory keeps growing (where aggregation matters). *CartPole* stands in for
# continuous-state control, where no state ever recurs exactly and MFEC must lean on its
# neighbours.
#
# All training code lives in `memrl` (`memrl.agents.mfec`, `memrl.agents.nec`,
# `memrl.memory.episodic`, `memrl.memory.dnd`); each (env, method, seed) is one job of
# `memrl.families.episodic_control.jobs`, stored on its own by the `runs_episodic_control`
# stage. This notebook loads the runs, plots them and states the verdicts
# (`memrl.families.episodic_control.claims`). Opened on its own (no `runs_dir`), it runs the
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
from memrl.envs.registry import short_env
from memrl.families.episodic_control import claims as ec_claims
from memrl.families.episodic_control import tables
from memrl.results import budget_table, claims_text, save_claims, save_figure, save_table
from memrl.results import output_dir as resolve_output
from memrl.stats.floors import env_floor, split, with_floor
from memrl.stats.points import iqm_curves

family = families.get("episodic_control")
cfg = families.load_family(family.name, profile, overrides=overrides)  # every value checked
out = resolve_output(output_dir)
print(f"profile={profile}  seeds={cfg.seeds}")
for e in cfg.envs:
    print(f"  {e.env_id:<26} {e.total_timesteps:>9,} steps  {', '.join(e.methods)}")

# %% [markdown]
# ## Every run
#
# Every (environment, method, seed), plus MFEC at each aggregation radius, is one job. Each
# run logs its training episodes; nothing is tuned after the fact.

# %%
envs = [short_env(e.env_id) for e in cfg.envs]
# the runs stage's store; opened on its own, the profile's jobs run here first (stored ones reused)
records, floors = split(runner.family_runs(family, cfg, profile, runs_dir, overrides))
runs = tables.load(records, envs)
runs[["env", "method", "seed", "episodes", "early_return", "late_return", "memory_size"]].head(12)

# %% [markdown]
# ## Sample-efficiency curves
#
# The return of the last 10 training episodes at each point of the budget: IQM over seeds
# with a 95% stratified-bootstrap band. "Early" in the claims below means episodes ending in
# the first quarter of the budget.

# %%
curve_df = iqm_curves(runs[runs.merge_radius == 0])
envs = list(dict.fromkeys(curve_df.env))
fig, axes = plt.subplots(1, len(envs), figsize=(5 * len(envs), 3.8), squeeze=False)
for ax, env in zip(axes[0], envs, strict=True):
    plots.ci_curves(ax, curve_df[curve_df.env == env], "environment steps", "training return", env)
    plots.floor_band(ax, env_floor(floors, env))
fig.tight_layout()
save_figure(fig, out / "figures" / "sample_efficiency.png")

# %% [markdown]
# ## State aggregation: memory, lookup cost and return against the merge radius
#
# Radius 0 is plain MFEC (exact matches only). Memory is the number of keys in the
# tables at the end. *Keys scanned per step* is the deterministic cost of every kNN search:
# acting-time lookups of unseen states and, with aggregation, the write-time search for a
# stored key to merge into (exact matches cost a hash lookup either way). Wall-clock time of
# the acting-time lookups, measured in the same runs, is shown beside it; the claims use
# only the deterministic numbers. EC-2 ("cuts memory substantially") is judged at the
# smallest radius keeping at most half of exact MFEC's keys, EC-3 ("no significant loss at
# conservative thresholds") at the smallest that aggregates at all (at most 90% of the keys):
# both picked on the first half of the seeds' keys, never on returns.

# %%
agg = runs[(runs.env == short_env(cfg.aggregation.env_id)) & runs.method.str.startswith("MFEC")]
by_r = agg.groupby("merge_radius")
fig, axes = plt.subplots(1, 4, figsize=(16, 3.4))
panels = [
    ("memory_size", "keys stored"),
    ("scanned_per_step", "keys scanned per step"),
    ("lookup_seconds", "lookup wall-clock (s)"),
    ("late_return", "return, last quarter"),
]
for ax, (col, label) in zip(axes, panels, strict=True):
    ax.plot(agg.merge_radius, agg[col], "o", alpha=0.4, color="tab:gray")
    ax.plot(by_r[col].median().index, by_r[col].median(), "-o", lw=2)
    ax.set(xlabel="merge radius", ylabel=label)
    ax.grid(alpha=0.3)
fig.suptitle(f"MFEC with state aggregation on {cfg.aggregation.env_id}")
fig.tight_layout()
save_figure(fig, out / "figures" / "aggregation.png")

# %% [markdown]
# ## Claims
#
# Verdicts come from the runs by one rule (`memrl.stats.claims.VERDICT_RULE`); nothing here
# is typed in.

# %%
rows = ec_claims.claims(cfg, runs, floors)
fig = plots.forest(rows)
save_figure(fig, out / "figures" / "claims.png")
save_table(runs, out / "tables" / "runs.csv")
save_table(curve_df, out / "tables" / "curves.csv")
for name, df in tables.plot_data(curve_df).items():
    save_table(with_floor(df, env_floor(floors, name.removesuffix(".csv"))), out / "plots" / name)
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
