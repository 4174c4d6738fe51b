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
# # Recurrent off-policy RL: does memory make SAC and TD3 work on POMDPs?
#
# When the observation hides part of the state, an agent must remember. Nine papers, twelve
# claims, each rerun over several seeds and aggregated with rliable (interquartile mean,
# 95% stratified-bootstrap CI):
#
# 1. **Recurrent SAC** (Yang & Nguyen 2021) reaches near-optimal return on Pendulum with
#    only positions (*-P*) or only velocities (*-V*) observed, where SAC with an MLP fails —
#    and (2) it is more reliable than recurrent TD3.
# 3. **Separate memory encoders** for actor and critic beat one shared encoder (Ni et al.
#    2022, pomdp-baselines).
# 4. **LSTM-PPO** (sb3-contrib's RecurrentPPO), the on-policy baseline, solves CartPole
#    without velocities (the rl-zoo's CartPoleNoVel: 500 at 100k steps). We run our own
#    implementation of the same algorithm (`memrl.agents.lstm_ppo`, ~3.6x faster here),
#    cross-checked against sb3-contrib's by `benchmarks/lstm_ppo.py`.
# 5. **Fast and Forgetful Memory** (Morad et al. 2023) matches or beats a GRU on POPGym, and
#    (6) trains much faster than one. On POPGym's own envs both papers run PPO: ours is
#    `memrl.agents.ppo` (popjaxrl's settings, scaled down; any core of the cores table), scored
#    by MMER (the best per-update mean episodic return) per task and over the suite.
# 7. On the **Passive T-Maze** (Cherepanov et al. 2024), an agent that sees the last K frames
#    succeeds only while K covers the correlation horizon ξ = corridor length; a recurrent
#    memory succeeds at every length.
# 8. **S5** with resets inside its parallel scan (Lu et al. 2023) beats a GRU on POPGym, and
#    (9) runs over five times faster than one (whole PPO training per env step).
# 10. **RATE** (Cherepanov et al. 2023) keeps recalling the T-Maze cue beyond its attention
#     window, where a decision transformer with the same window falls to chance; with it, the
#     *memory card* classifies every core by what it can remember.
# 11. **Real-time recurrent learning** (Irie et al. 2023): cores trained with backpropagation
#     truncated at K steps do not carry the cue further than K, while an element-wise LSTM
#     trained by exact RTRL (no truncation) does.
# 12. POPGym's own headline as a counter-claim (Morad et al., ICLR 2023): the **GRU** is the
#     strongest memory model overall.
#
# The agents (`memrl.agents.recurrent_sac`, `recurrent_td3`, `recurrent_sac_discrete`) read
# `[o_t, a_{t-1}, r_{t-1}]` through a memory core (`memrl.memory.cores`: GRU, LSTM, FFM, S5 or
# a window of K frames), train in sequence mode on windows replayed from whole episodes
# (`memrl.memory.sequence`) and act in step mode. Scores are the return of deterministic
# evaluation episodes after training. The runs are jobs (`memrl.families.recurrent_off_policy.jobs`),
# one per (env, method, seed), each stored on its own by the `runs_recurrent_off_policy` stage;
# this notebook loads them, plots them and states the verdicts
# (`memrl.families.recurrent_off_policy.claims`). Opened on its own (no `runs_dir`), it runs
# the jobs of `profile` itself into `.cache/runs/` (the defaults: the quick `smoke` profile).

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
import pandas as pd

from memrl import families, plots, runner
from memrl.envs.registry import short_env
from memrl.families.recurrent_off_policy import card as ro_card
from memrl.families.recurrent_off_policy import claims as ro_claims
from memrl.families.recurrent_off_policy import tables
from memrl.results import budget_table, claims_text, save_claims, save_figure, save_table
from memrl.results import output_dir as resolve_output
from memrl.runtime import atomic_write_json
from memrl.stats.floors import env_floor, split, with_floor
from memrl.stats.points import iqm_curves

family = families.get("recurrent_off_policy")
cfg = families.load_family(family.name, profile, overrides=overrides)  # every value checked
out = resolve_output(output_dir)
print(f"profile={profile}  seeds={cfg.seeds}")
for e in cfg.envs:
    print(f"  {e.env_id:<36} {e.total_timesteps:>8,} steps  {', '.join(e.methods)}")
print(
    f"  T-Maze lengths {cfg.tmaze.lengths}, {cfg.tmaze.episodes} episodes each: "
    f"{', '.join(cfg.tmaze.methods)} (window K = {cfg.sacd.context})"
)

# %% [markdown]
# ## Every run
#
# Every (environment, method, seed) and every (T-Maze length, memory, seed) is one job; the
# cores' timing below is one more. Nothing is tuned after the fact.

# %%
envs = [short_env(e.env_id) for e in cfg.envs]
# the runs stage's store; opened on its own, the profile's jobs run here first (stored ones reused)
records, floors = split(runner.family_runs(family, cfg, profile, runs_dir, overrides))
runs = tables.load(records, envs)
runs.main[["env", "method", "seed", "episodes", "eval_return", "late_train_return"]].head(12)

# %% [markdown]
# ## How fast is each memory core?
#
# FFM's paper reports ~100x faster training than a GRU, against a GRU stepped one `GRUCell`
# call at a time; S5's reports over 5x faster than its GRU (a scanned GRU cell), with S5
# stacked 4 layers deep. One job times one training step (forward and backward over a batch
# of sequences, at the papers' sizes on the `default` profile) of every core, on one thread.
# Wall-clock times differ between machines; these are the only claims that do.

# %%
speed = runs.timing.groupby("core", sort=False).ms.median()
fig, ax = plt.subplots(figsize=(6.5, 0.45 * len(speed) + 1))
ax.barh(speed.index, speed.values, color="tab:gray")
for i, v in enumerate(speed.values):
    ax.text(v, i, f" {v:.0f} ms ({v / speed['FFM']:.1f}x FFM)", va="center")
ax.set(xlabel="ms per training step (median)", xlim=(0, 1.5 * speed.max()))
ax.invert_yaxis()
fig.tight_layout()
save_figure(fig, out / "figures" / "ffm_timing.png")

# %% [markdown]
# ## Learning curves
#
# The mean return of the last 10 training episodes at each point of the budget (exploring
# policy): IQM over seeds with a 95% stratified-bootstrap band.

# %%
curve_df = iqm_curves(runs.main)
fig, axes = plt.subplots(1, len(envs), figsize=(4.6 * len(envs), 3.8), squeeze=False)
for ax, env in zip(axes[0], envs, strict=True):
    plots.ci_curves(ax, curve_df[curve_df.env == env], "environment steps", "training return", env)
    plots.floor_band(ax, env_floor(floors, env))
fig.tight_layout()
save_figure(fig, out / "figures" / "learning_curves.png")

# %% [markdown]
# ## T-Maze: success against the correlation horizon
#
# The cue is shown at the first step; the turn at the end of a corridor of length L is
# rewarded only if it matches, so the correlation horizon is ξ = L. The window agent sees
# the current frame and K − 1 before it: it can only succeed while K ≥ ξ (left of the dashed
# line). Success is the fraction of deterministic evaluation episodes with the right turn;
# 0.5 is chance.

# %%
success = tables.tmaze_success(runs, cfg.bootstrap_reps)
fig, ax = plt.subplots(figsize=(5.5, 3.6))
plots.ci_points(ax, success, "length", "corridor length L (= ξ)", "success rate")
ax.axhline(0.5, color="gray", ls=":", label="chance")
ax.axvline(cfg.sacd.context + 0.5, color="black", ls="--", lw=1, label=f"K = {cfg.sacd.context}")
ax.set(xscale="log", ylim=(-0.05, 1.05))
ax.set_xticks(cfg.tmaze.lengths, [str(v) for v in cfg.tmaze.lengths])
ax.legend(fontsize=8)
fig.tight_layout()
save_figure(fig, out / "figures" / "tmaze.png")

# %% [markdown]
# ## The memory card: what each core remembers
#
# Cherepanov et al. (2024) classify an agent's memory by holding its context K fixed and
# moving the cue ξ steps back: **short-term** memory recalls only while ξ ≤ K, **long-term**
# beyond it. Here every model is trained the same way, by behaviour cloning of oracle T-Maze
# runs (`memrl.agents.cloning`), on segments of K steps, and scored at each ξ. What K *is*
# differs by model (`K is`): the span a decision transformer, RATE or the window attends to
# (*context*), the span truncated backpropagation lets a recurrent core's gradients reach
# (*truncation*: GRU, LSTM, FFM, S5), or nothing (*none*: the element-wise LSTM trained by
# exact real-time recurrent learning). RATE is trained as its reference trains it (memory
# detached between segments); the paper profile adds `rate_bptt`, which back-propagates
# through all segments. A core
# *remembers* at ξ when its success IQM is ≥ 0.9 and its CI (over seeds and episodes) clears
# chance by 0.1; the class follows from that rule on the horizons inside the training
# corridors (`memrl.families.recurrent_off_policy.card`), never typed in. Horizons past them
# measure extrapolation and are shown apart. Cost: seconds per training run, and one training
# step of the core at the timing job's sizes.

# %%
memory_card = ro_card.card(runs.card, cfg.bootstrap_reps, runs.timing)
atomic_write_json(out / "memory_card.json", memory_card)
if memory_card["rows"]:
    print(f"K = {cfg.card.context}; {memory_card['rule']}")
    print(ro_card.table(memory_card).to_string())
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), sharey=True)
    card_rows = pd.DataFrame(memory_card["rows"])
    trained = max(cfg.card.train_lengths) / cfg.card.context
    for ax, kind in zip(axes, ("context", "truncation", "none"), strict=True):
        part = card_rows[card_rows.K_kind == kind]
        if len(part):
            plots.ci_points(ax, part, "xi_over_K", "ξ / K", "success rate", by="core")
        ax.axhline(0.5, color="gray", ls=":", label="chance")
        ax.axvline(1.0, color="black", ls="--", lw=1, label="ξ = K")
        ax.axvspan(trained, card_rows.xi_over_K.max() * 1.2, color="0.9", label="extrapolation")
        ax.set(xscale="log", ylim=(-0.05, 1.05), title=f"K is {kind}")
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    save_figure(fig, out / "figures" / "memory_card.png")

# %% [markdown]
# ## Truncation, tested fairly (RO-11)
#
# The card's corridors include lengths ≤ K, where cue and turn share a segment: a truncated
# core can learn there to keep the cue, and carry it further. RO-11 is judged on its own
# runs, cloned the same way from corridors that are *all* longer than K: each core truncated
# at K (at two budgets), the same core with backpropagation through the whole corridor (its
# positive control) and RTRL, scored at every corridor (the grey band: past the training
# corridors, extrapolation). Each point is the seeds' mean; the bar spans their lowest and
# highest.

# %%
trunc = tables.truncation_table(runs.truncation)
if len(trunc):
    c = cfg.truncation
    groups = {
        f"truncated at K = {c.context}": trunc[trunc.arm.str.contains("truncated")],
        "full BPTT (controls)": trunc[trunc.arm.str.contains("BPTT")],
        "RTRL": trunc[trunc.arm == "RTRL"],
    }
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
    for ax, (title, part) in zip(axes, groups.items(), strict=True):
        for arm_name, g in part.groupby("arm", sort=False):
            ax.errorbar(
                g.xi,
                g["mean"],
                yerr=[g["mean"] - g["min"], g["max"] - g["mean"]],
                marker="o",
                capsize=3,
                label=arm_name,
            )
        ax.axhline(0.5, color="gray", ls=":", label="chance")
        ax.axvspan(max(c.train_lengths), trunc.xi.max() * 1.1, color="0.9")
        ax.set(xlabel="corridor ξ", ylim=(-0.05, 1.05), title=title)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("success rate")
    fig.tight_layout()
    save_figure(fig, out / "figures" / "truncation.png")

# %% [markdown]
# ## Claims
#
# Verdicts come from the runs by one rule (`memrl.stats.claims.VERDICT_RULE`); nothing here
# is typed in. Names like `near-optimal · Pendulum-V`, `rl-zoo: 500` and `chance` are
# constants from the papers (no seeds), shown beside our runs.

# %%
rows = ro_claims.claims(cfg, runs, floors, paper=families.load_family(family.name, "paper"))
checked = [r for r in rows if not r.claim.machine_dependent]
fig = plots.forest(checked)
save_figure(fig, out / "figures" / "claims.png")
save_table(runs.main, out / "tables" / "runs.csv")
save_table(runs.tmaze, out / "tables" / "tmaze_runs.csv")
save_table(curve_df, out / "tables" / "curves.csv")
save_table(runs.timing, out / "tables" / "ffm_timing.csv")
for name, df in tables.plot_data(curve_df, success).items():
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

# %% [markdown]
# The training runs are deterministic for a given profile and seed; claims flagged
# `machine_dependent` (the timings, RO-6 and RO-9) are wall-clock, so they are printed on their
# own below the checked table.

# %%
# NBVAL_CHECK_OUTPUT
print(claims_text(checked))

# %%
timed = [r for r in rows if r.claim.machine_dependent]
print(claims_text(timed))
print("\n".join(r.coverage_note for r in timed))
