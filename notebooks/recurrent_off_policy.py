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
# When the observation hides part of the state, an agent must remember. Five papers, seven
# claims, each rerun over several seeds and aggregated with rliable (interquartile mean,
# 95% stratified-bootstrap CI):
#
# 1. **Recurrent SAC** (Yang & Nguyen 2021) reaches near-optimal return on Pendulum with
#    only positions (*-P*) or only velocities (*-V*) observed, where SAC with an MLP fails —
#    and (2) it is more reliable than recurrent TD3.
# 3. **Separate memory encoders** for actor and critic beat one shared encoder (Ni et al.
#    2022, pomdp-baselines).
# 4. **RecurrentPPO** (sb3-contrib), the on-policy baseline, solves CartPole without
#    velocities (the rl-zoo's CartPoleNoVel: 500).
# 5. **Fast and Forgetful Memory** (Morad et al. 2023) matches or beats a GRU on POPGym, and
#    (6) trains much faster than one.
# 7. On the **Passive T-Maze** (Cherepanov et al. 2024), an agent that sees the last K frames
#    succeeds only while K covers the correlation horizon ξ = corridor length; a recurrent
#    memory succeeds at every length.
#
# The agents (`memrl.agents.recurrent_sac`, `recurrent_td3`, `recurrent_sac_discrete`) read
# `[o_t, a_{t-1}, r_{t-1}]` through a memory core (`memrl.memory.cores`: GRU, LSTM, FFM or a
# window of K frames), train in sequence mode on windows replayed from whole episodes
# (`memrl.memory.sequence`) and act in step mode. Scores are the return of deterministic
# evaluation episodes after training. This notebook runs `memrl.experiments.recurrent_off_policy`,
# plots it and states the verdicts; the defaults below are the quick `smoke` profile, and
# `dvc repro` runs it with the profile named in `params.yaml`.

# %% tags=["parameters"]
profile = "smoke"  # smoke | default | paper (see params.yaml)
output_dir = ""  # "" writes to a scratch folder; the DVC stage passes results/recurrent_off_policy

# %%
import matplotlib.pyplot as plt

from memrl import plots
from memrl.config import load_family, load_runtime
from memrl.experiments import recurrent_off_policy as ro
from memrl.results import claims_table, save_claims, save_figure, save_table
from memrl.results import output_dir as resolve_output
from memrl.stats.curves import iqm_curves

cfg = load_family("recurrent_off_policy", profile)  # validates every value before any training
rt = load_runtime()
out = resolve_output(output_dir)
print(f"profile={profile}  seeds={cfg.seeds}  workers={rt.workers}")
for e in cfg.envs:
    print(f"  {e.env_id:<36} {e.total_timesteps:>8,} steps  {', '.join(e.methods)}")
print(f"  T-Maze lengths {cfg.tmaze.lengths}, {cfg.tmaze.episodes} episodes each: "
      f"{', '.join(cfg.tmaze.methods)} (window K = {cfg.sacd.context})")  # fmt: skip

# %% [markdown]
# ## How fast is FFM?
#
# FFM's paper reports ~100x faster training than a GRU — against a GRU stepped one
# `GRUCell` call at a time. We time one training step (forward and backward over a batch of
# sequences, at the paper's sizes on the `default` profile) for FFM, that per-step loop and
# PyTorch's fused `nn.GRU`, on one thread, before the training runs so the machine is idle.
# Wall-clock times differ between machines; this is the only claim that does.

# %%
timing = ro.benchmark(cfg, threads=rt.torch_threads)
speed = timing.groupby("core", sort=False).ms.median()
fig, ax = plt.subplots(figsize=(6, 2.6))
ax.barh(speed.index, speed.values, color=["tab:green", "tab:gray", "tab:blue"])
for i, v in enumerate(speed.values):
    ax.text(v, i, f" {v:.0f} ms ({v / speed['FFM']:.1f}x FFM)", va="center")
ax.set(xlabel="ms per training step (median)", xlim=(0, 1.45 * speed.max()))
ax.invert_yaxis()
fig.tight_layout()
save_figure(fig, out / "figures" / "ffm_timing.png")

# %% [markdown]
# ## Every run
#
# One call trains every (environment, method, seed) and every (T-Maze length, memory, seed),
# two processes at a time (one per core), longest runs first. Nothing is tuned after the fact.

# %%
runs = ro.run(cfg, rt)
runs[["env", "method", "seed", "episodes", "eval_return", "late_train_return", "seconds"]].head(12)

# %% [markdown]
# ## Learning curves
#
# The mean return of the last 10 training episodes at each point of the budget (exploring
# policy): IQM over seeds with a 95% stratified-bootstrap band.

# %%
main_runs = runs[runs.length == 0]
curve_df = iqm_curves(main_runs)
envs = list(dict.fromkeys(curve_df.env))
fig, axes = plt.subplots(1, len(envs), figsize=(4.6 * len(envs), 3.8), squeeze=False)
for ax, env in zip(axes[0], envs, strict=True):
    plots.ci_curves(ax, curve_df[curve_df.env == env], "environment steps", "training return", env)
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
success = ro.tmaze_success(cfg, runs)
fig, ax = plt.subplots(figsize=(5.5, 3.6))
for method, g in success.groupby("method"):
    ax.errorbar(g.length, g.iqm, yerr=[g.iqm - g.ci_low, g.ci_high - g.iqm], marker="o",
                capsize=3, label=method)  # fmt: skip
ax.axhline(0.5, color="gray", ls=":", label="chance")
ax.axvline(cfg.sacd.context + 0.5, color="black", ls="--", lw=1, label=f"K = {cfg.sacd.context}")
ax.set(xscale="log", xlabel="corridor length L (= ξ)", ylabel="success rate", ylim=(-0.05, 1.05))
ax.set_xticks(cfg.tmaze.lengths, [str(v) for v in cfg.tmaze.lengths])
ax.legend(fontsize=8)
ax.grid(alpha=0.3)
fig.tight_layout()
save_figure(fig, out / "figures" / "tmaze.png")

# %% [markdown]
# ## Claims
#
# Verdicts come from the runs by one rule (`memrl.stats.claims.VERDICT_RULE`); nothing here
# is typed in. Names like `near-optimal · Pendulum-V`, `rl-zoo: 500` and `chance` are
# constants from the papers (no seeds), shown beside our runs.

# %%
rows = ro.claims(cfg, runs, timing)
fig = plots.claim_intervals([r for r in rows if r.claim.claim_id != "RO-6"])
save_figure(fig, out / "figures" / "claims.png")
save_table(runs, out / "runs" / "runs.csv")
save_table(curve_df, out / "runs" / "curves.csv")
save_table(timing, out / "runs" / "ffm_timing.csv")
for name, df in ro.plot_data(curve_df, success).items():
    save_table(df, out / "plots" / f"{name}.csv")
save_claims(out, ro.FAMILY, rows)

# %% [markdown]
# The training runs are deterministic for a given profile and seed; the FFM timing claim
# (RO-6) is wall-clock, so it is printed on its own below the checked table.

# %%
# NBVAL_CHECK_OUTPUT
print(claims_table([r for r in rows if r.claim.claim_id != "RO-6"]).to_string())

# %%
timing_rows = [r for r in rows if r.claim.claim_id == "RO-6"]
print(claims_table(timing_rows).to_string())
print("\n".join(r.coverage_note for r in timing_rows))
