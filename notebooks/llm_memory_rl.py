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
# # LLM memory RL: can reinforcement learning shape what a frozen LLM remembers?
#
# **REMEMBERER** (Zhang et al. 2023) keeps the LLM frozen and gives it an *experience
# memory*: records of (task, page, action) with Q-values that reinforcement learning updates
# after every episode. At each step the two most similar records are shown as exemplars,
# with the action to *encourage* (highest Q) and one to *discourage*. The claims:
#
# 1. (success rate) and 2. (score): RLEM beats static exemplars, which beat the LLM alone;
# 3. the gain holds across two initial memories and two training sets;
# 4. n-step bootstrapping and discouraged actions both matter (ablations).
#
# **AgentFly / Memento** (2025) keeps a *case bank* of past (task, plan, outcome) and shows
# the agent K = 4 cases chosen by similarity (non-parametric) or by a Q(s, c) learned from
# the outcomes of the cases it used (parametric):
#
# 5. parametric ≥ non-parametric ≥ no memory, and 6. with memory the agent improves over
#    iterations on the same tasks.
#
# **Memory-R1** (2025) puts a *memory manager* between a conversation and the memory bank:
# for each incoming fact it chooses ADD, UPDATE, DELETE or NOOP, and it is trained with RL
# (GRPO) from the exact match of a frozen answer agent that answers from the bank:
#
# 7. (F1) and 8. (exact match): the RL-trained manager beats a Mem0-style manager and the
#    same LLM prompted to manage memory without RL.
#
# LoCoMo is not available offline either, so its dialogues are generated
# (`memrl.envs.dialogue`): two speakers over dated sessions whose facts are introduced,
# changed, retracted and restated, with single-hop, multi-hop and temporal questions.
#
# WebShop is not installable offline, so the shop is generated (`memrl.envs.shop`): search,
# a results page, item pages with options, buy; the reward is WebShop's attribute / option /
# price matching score in [0, 1], success is reward 1. The LLM is SmolLM2-135M-Instruct on the
# `default` profile (a random 2-layer GPT-2 on `smoke`, which exercises the code but knows no
# language). It picks an action by scoring every admissible action's log-likelihood after the
# prompt (`memrl.llm.scoring`), with the prompt's KV cache shared across candidates and the
# instructions and exemplars cached across steps. Each (condition, run) is one job of
# `memrl.families.llm_memory_rl.jobs`, stored on its own by the `runs_llm_memory_rl` stage;
# this notebook loads the runs, plots them and states the verdicts
# (`memrl.families.llm_memory_rl.claims`). Opened on its own (no `runs_dir`), it runs the
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
import numpy as np
import pandas as pd

from memrl import families, plots, runner
from memrl.envs.dialogue import load_dialogues
from memrl.envs.shop import ShopEnv, expert_successes, load_shop
from memrl.families.llm_memory_rl import claims as llm_claims
from memrl.families.llm_memory_rl import tables
from memrl.results import budget_table, claims_text, save_claims, save_figure, save_table
from memrl.results import output_dir as resolve_output
from memrl.runtime import repo_root
from memrl.stats.floors import env_floor, split
from memrl.stats.points import iqm_points

family = families.get("llm_memory_rl")
cfg = families.load_family(family.name, profile, overrides=overrides)  # every value checked
out = resolve_output(output_dir)
products, splits = load_shop(repo_root() / cfg.shop_data.path)
dialogues = load_dialogues(repo_root() / cfg.dialogue_data.path)
print(f"profile={profile}  model={cfg.llm.model}  runs={cfg.seeds}")
print(
    f"catalogue: {len(products)} products; tasks: "
    + ", ".join(f"{k} {len(v)}" for k, v in splits.items())
)
print("an instruction:", splits["test"][0].instruction)
shop = ShopEnv(products, cfg.shop.max_steps, cfg.shop.n_results)
tasks = [t for split in splits.values() for t in split]
print(
    f"expert demonstrations earn the full reward on {expert_successes(shop, tasks)} of {len(tasks)} tasks"
)
print(
    "dialogues: "
    + ", ".join(
        f"{k} {len(v)} conversations / {sum(len(c.questions) for c in v)} questions"
        for k, v in dialogues.items()
    )
)

# %% [markdown]
# ## Every run
#
# Every (condition, run) is one job. REMEMBERER: run *r* starts from initial
# memory *r* mod 2 and trains on training set ⌊*r*/2⌋ mod 2 for `rlem.epochs` epochs over 10
# tasks (paper: 3), then plays the test tasks without learning. AgentFly: every seed plays the
# same tasks, each seed in its own order, for several iterations, writing each episode back as
# a case. Memory-R1: every seed
# trains a manager with GRPO; the three baselines are deterministic and run once. Each job's
# final memory or case bank is kept as JSON beside its result in the run store (the trained
# managers as `.pt`); `files_dir` says where.

# %%
# the runs stage's store; opened on its own, the profile's jobs run here first (stored ones reused)
records, floors = split(runner.family_runs(family, cfg, profile, runs_dir, overrides))
loaded = tables.load(cfg, records)
runs, fly, mr1 = loaded.rlem, loaded.fly, loaded.mr1
runs[
    [
        "condition",
        "run",
        "init_memory",
        "train_set",
        "test_success",
        "test_score",
        "memory_records",
        "decisions",
        "seconds",
    ]
]

# %% [markdown]
# ## Success over training epochs
#
# Success rate and score on the training tasks in each epoch, while the memory learns: the
# IQM over runs with its 95% CI (rliable), as everywhere in this suite. (The floors and the
# ceiling are measured on the test tasks: they are drawn in the next figure.)

# %%
curves = tables.training_curves(runs)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
for ax, metric in zip(axes, ["success", "score"], strict=True):
    plots.ci_curves(
        ax,
        iqm_points(curves, "condition", "epoch", metric),
        "training epoch",
        f"training {metric}",
        x="epoch",
        by="condition",
    )
    ax.set_xticks(sorted(set(curves.epoch)))
fig.tight_layout()
save_figure(fig, out / "figures" / "training_epochs.png")

# %% [markdown]
# ## Test performance per condition
#
# The IQM over runs with its 95% CI; each grey dot is one run. Dotted lines with grey bands:
# what a shopper with no knowledge scores on the same test tasks (uniformly random actions;
# a random query, a random result, buy) and the annotated expert (the ceiling).

# %%
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
conditions = list(dict.fromkeys(runs.condition))
for ax, metric in zip(axes, ["test_success", "test_score"], strict=True):
    est = iqm_points(runs.assign(panel=metric), "panel", "condition", metric)
    est = est.set_index("condition").loc[conditions]
    xs = np.arange(len(conditions))
    for i, c in enumerate(conditions):
        v = runs[runs.condition == c][metric].to_numpy()
        ax.plot(np.full(len(v), i) + np.linspace(-0.08, 0.08, len(v)), v, ".", color="0.6")
    yerr = np.nan_to_num([est.iqm - est.ci_low, est.ci_high - est.iqm])
    ax.errorbar(xs, est.iqm, yerr=yerr, fmt="o", color="C0", capsize=4, label="IQM, 95% CI")
    ax.set_xticks(xs, [tables.LABELS[c] for c in conditions], rotation=20)
    ax.set(ylabel=metric.replace("_", " "), ylim=(-0.05, 1.05))
    ax.grid(alpha=0.3, axis="y")
    per_task = tables.test_items(metric)  # each run's test tasks: the oracle runs once
    for policy, color in (("random search-then-buy", "0.35"), ("random", "tab:brown")):
        band = env_floor(floors, "shop", metric, policy, per_task)
        plots.floor_band(ax, band, f"{policy} (floor)", color)
    plots.floor_band(
        ax, env_floor(floors, "shop", metric, "oracle", per_task), "oracle (ceiling)", "tab:green"
    )
axes[0].legend(fontsize=8)
fig.tight_layout()
save_figure(fig, out / "figures" / "test_performance.png")

# %% [markdown]
# ## AgentFly: results over iterations
#
# Left: each iteration's mean score; right: the best score reached on each task so far (the
# cumulative view AgentFly reports). IQM over seeds with its 95% CI.

# %%
iters = pd.concat([tables.iteration_curves(fly), tables.floor_iterations(floors)])
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
for ax, metric in zip(axes, ["score", "best_score"], strict=True):
    plots.ci_curves(
        ax,
        iqm_points(iters, "condition", "iteration", metric),
        "iteration",
        metric.replace("_", " "),
        x="iteration",
        by="condition",
    )
    ax.set_xticks(sorted(set(iters.iteration)))
fig.tight_layout()
save_figure(fig, out / "figures" / "agentfly_iterations.png")

# %% [markdown]
# ## Memory-R1: answer quality by manager
#
# Left: the answer agent's F1 on the test questions per question category, for the bank each
# manager built (GRPO: mean over seeds). Right: GRPO's reward in each epoch, the exact match
# on the training dialogues' questions from the banks its sampled operations built (each
# line a seed).

# %%
cats = pd.DataFrame(
    {
        tables.MR1_LABELS[c]: pd.DataFrame(list(g.f1_by_category)).mean()
        for c, g in mr1.groupby("condition", sort=False)
    }
)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
cats.plot.bar(ax=axes[0], rot=0)
axes[0].set(ylabel="F1 (test questions)", ylim=(0, 1))
axes[0].grid(alpha=0.3, axis="y")
axes[0].legend(fontsize=8)
for _, r in mr1[mr1.condition == "grpo"].iterrows():
    axes[1].plot(range(1, len(r.reward_em) + 1), r.reward_em, marker="o", label=f"seed {r.run}")
axes[1].set(xlabel="GRPO epoch", ylabel="reward (EM, training dialogues)")
axes[1].grid(alpha=0.3)
axes[1].legend(fontsize=8)
fig.tight_layout()
save_figure(fig, out / "figures" / "memory_r1.png")

# %% [markdown]
# Which operation each manager chose for each kind of turn (the kind is the generator's
# annotation, never shown to a manager: intro → ADD, change → UPDATE, retract → DELETE,
# repeat and small talk → NOOP would be ideal). The last line is each manager's share of test
# turns given the operation the turn calls for: the prompted LLM counts as a baseline only
# above 90% (`memory_r1_claims.MIN_OPERATION_FIT`).

# %%
ops = tables.memory_r1_ops(mr1)
print(ops.to_string())
print(tables.operation_fit(ops).round(3).to_string())

# %% [markdown]
# ## Positive controls: can the LLM use a perfect memory?
#
# A claim whose methods sit at the floor blames *model scale* only if the method, given what
# it needs to succeed, sits there too: REMEMBERER's static agent with the test tasks' own
# expert trajectories as its memory (`expert exemplars`), AgentFly's agent with each task's
# own expert case in its bank (`expert cases`), and Memory-R1's answer agent reading the gold
# memory bank (`gold memory`). Where a control leaves the expert's path, the first such page
# is listed with the mean token log-likelihoods of the expert's and the chosen action.

# %%
controls = loaded.controls
shown = [c for c in ("test_score", "test_success", "f1", "em") if c in controls]
print(controls.groupby("control")[shown].mean().round(3).to_string())
for d in llm_claims.divergences(loaded, "expert exemplars")[:3]:
    print(d)

# %% [markdown]
# ## Claims
#
# Verdicts come from the runs by one rule (`memrl.stats.claims.VERDICT_RULE`); nothing here
# is typed in.

# %%
rows = llm_claims.claims(cfg, loaded, floors)
fig = plots.forest(rows)
save_figure(fig, out / "figures" / "claims.png")
save_table(runs, out / "tables" / "runs.csv")
save_table(fly, out / "tables" / "agentfly.csv")
save_table(mr1, out / "tables" / "memory_r1.csv")
save_table(ops.reset_index(), out / "tables" / "memory_r1_ops.csv")
for name, df in tables.plot_data(curves, iters).items():
    save_table(df, out / "plots" / name)
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
