"""RO-11, judged on its fair test (issue 56): cores cloned from oracle T-Mazes whose every
corridor is longer than the truncation ``K``, so cue and turn never share a segment.

At every judged corridor ``xi`` (past ``K``, inside the training corridors):

- each core truncated at ``K``, at each budget, stays within the card's remembering margin
  of chance (``chance >= core - delta``), having learned to walk (it clears the uniformly
  random policy, else its chance says nothing);
- the same core with backpropagation through the whole corridor beats chance (the
  positive control: the core can carry the cue when the gradient reaches it);
- RTRL (no truncation) beats chance.

Corridors past the longest trained one are reported (extrapolation), not judged. Each
truncated arm's *chance successes* (seeds at or above the card's "remembers" level at a
judged corridor) are counted: the carried state can hold the cue by accident.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memrl.families.recurrent_off_policy.card import CHANCE, MARGIN, REMEMBERS
from memrl.families.recurrent_off_policy.floor_arms import comparator, floor_arms, walk_floor
from memrl.families.recurrent_off_policy.params import (
    RecurrentOffPolicyParams,
    bptt_arm,
    truncated_arm,
)
from memrl.families.recurrent_off_policy.statements import RO_11
from memrl.families.recurrent_off_policy.tables import Runs
from memrl.stats.aggregate import reference
from memrl.stats.bootstrap import arm
from memrl.stats.claims import MATCHES, Budget, ClaimResult, Comparison
from memrl.stats.compare import Margin


def _arm(cfg: RecurrentOffPolicyParams, runs: list[dict[str, Any]], name: str, xi: int):
    """An arm's success at ``xi``: its seeds, and the greedy episodes within each."""
    mine = [r for r in runs if r["arm"] == name]
    items = [r["episodes"][str(xi)] for r in mine]
    label = f"{name} · xi={xi}"
    return label, arm(None, RO_11.claim_id, label, cfg.bootstrap_reps, items=items)


def chance_successes(runs: list[dict[str, Any]], name: str, judged: list[int]) -> str:
    """How often a truncated arm recalled the cue anyway: seeds at or above REMEMBERS at
    some judged corridor, of all seeds."""
    mine = [r for r in runs if r["arm"] == name]
    hits = sum(any(r["success"][str(xi)] >= REMEMBERS for xi in judged) for r in mine)
    return f"{hits} of {len(mine)} seeds"


def ro_11(cfg: RecurrentOffPolicyParams, runs: Runs, floors=None) -> ClaimResult | None:
    c = cfg.truncation
    if c is None or not runs.truncation:
        return None
    have = {r["arm"] for r in runs.truncation}
    arms = [name for name, _, _ in c.arms() if name in have]
    truncated = [truncated_arm(core, e) for core in c.cores for e in c.epochs]
    truncated = [a for a in truncated if a in have]
    controls = [a for a in (bptt_arm(core) for core in c.cores) if a in have]
    if "RTRL" not in have or not truncated:
        return None
    K, longest = c.context, max(c.train_lengths)
    judged = [xi for xi in c.horizons if K < xi <= longest]
    est: dict = {"chance": reference(CHANCE)}
    est |= floor_arms(cfg, floors, RO_11, [f"T-Maze xi={xi}" for xi in c.horizons])
    for name in arms:
        for xi in c.horizons:
            label, a = _arm(cfg, list(runs.truncation), name, xi)
            est[label] = a
    delta = Margin(
        f"the card's remembering margin: {MARGIN} above chance (declared, "
        "memrl.families.recurrent_off_policy.card)",
        delta=MARGIN,
    )
    comps = []
    for xi in judged:
        env = f"T-Maze xi={xi}"
        chance, walk = comparator(est, env) or "chance", walk_floor(est, env)
        comps += [
            Comparison(
                chance,
                f"{a} · xi={xi}",
                MATCHES,
                margin=delta,
                floor=walk,
                sides=(f"{a} · xi={xi}",),
            )
            for a in truncated
        ]
        comps += [Comparison(f"{a} · xi={xi}", chance, floor=walk) for a in ["RTRL", *controls]]
    r = next(params for name, _, params in c.arms() if name == "RTRL")
    return ClaimResult(
        claim=replace(RO_11, metric=RO_11.metric.format(n=c.eval_episodes)),
        estimates=est,
        ours=f"RTRL · xi={max(judged)}",
        comparisons=comps,
        budget=f"K = {K}; trained on corridors {c.train_lengths} ({c.episodes} oracle runs "
        f"each), judged at xi = {judged}, {c.horizons[-1]} reported as extrapolation; "
        f"{min(sum(r['arm'] == a for r in runs.truncation) for a in arms)} seeds x "
        f"{c.eval_episodes} episodes",
        extra={
            f"chance successes (seeds >= {REMEMBERS} at a judged xi)": "; ".join(
                f"{a}: {chance_successes(list(runs.truncation), a, judged)}" for a in truncated
            ),
            "positive controls": ", ".join(controls) or "none ran",
        },
        deviations=[
            f"truncation: segments of K = {K} steps, the state carried and detached, an "
            "optimiser step per segment (no burn-in); the controls: one segment as long as "
            f"the longest corridor ({longest}), the gradient through all of it; RTRL: the "
            f"quasi-LSTM of IDSIA/rtrl-elstm (hidden {r.d_model}, reading the raw inputs), "
            f"one step per trajectory, {r.epochs} epochs",
            "behaviour cloning of oracle runs (the memory card's trainer), not the paper's "
            "RL training; the T-Maze's cue is one bit seen at step 0",
            f"every training corridor longer than K (the card's include corridors <= K = {K}, "
            "where cue and turn share a segment and a truncated core can learn to keep the "
            "cue and carry it further: the card's runs judged it so until issue 56)",
        ],
        used=Budget(max(c.epochs), "epochs"),
        trend_note="none: scored once, after training",
    )
