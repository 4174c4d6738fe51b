"""The timing claims (RO-6, RO-9): a memory core's training step against a GRU's, judged on
the paper's stated speed-up; wall-clock, so machine-dependent."""

from __future__ import annotations

from dataclasses import replace

from memrl.families.recurrent_off_policy.params import RecurrentOffPolicyParams
from memrl.families.recurrent_off_policy.statements import RO_6, RO_9
from memrl.families.recurrent_off_policy.tables import Runs
from memrl.stats.bootstrap import arm
from memrl.stats.claims import Budget, Claim, ClaimResult, Comparison


def ro_6(cfg: RecurrentOffPolicyParams, runs: Runs, floors=None) -> ClaimResult | None:
    if runs.timing is None or not len(runs.timing):
        return None
    return _speed(
        cfg,
        runs,
        RO_6,
        [("FFM", "GRUCell loop"), ("FFM", "nn.GRU")],
    )


def _speed(
    cfg: RecurrentOffPolicyParams,
    runs: Runs,
    claim: Claim,
    pairs: list[tuple[str, str]],
    *,
    deviations: tuple[str, ...] = (),
    budget: str = "",
    used: Budget | None = None,
    extra: dict | None = None,
) -> ClaimResult:
    """A timing claim: in each (faster, slower) pair of cores the first is faster by the
    paper's stated ratio (``claim.paper_effect``): its time below the slower one's divided by
    that ratio, the bare "faster" reported beside it."""
    names = list(dict.fromkeys(n for pair in pairs for n in pair))
    t = runs.timing[runs.timing.core.isin(names)]
    est = {
        c: arm(g.ms, claim.claim_id, c, cfg.bootstrap_reps)
        for c, g in t.groupby("core", sort=False)
    }
    ratios = {f"{s} / {f}": round(est[s].iqm / est[f].iqm, 2) for f, s in pairs}
    b = cfg.benchmark
    budget = budget or (
        f"batch {b['batch']} x {b['steps']} steps x {b['inputs']} inputs, hidden "
        f"{b['hidden']}; {b['repeats'] + 2} timings each, 1 CPU thread (RO-9's pairs: "
        "1 and 2)"
    )
    return ClaimResult(
        claim=claim,
        estimates=est,
        ours=pairs[0][0],
        comparisons=[Comparison(f, s, effect=True) for f, s in pairs],
        budget=budget,
        deviations=["wall-clock on this machine: machine-dependent", *deviations],
        used=used or Budget(b["batch"] * b["steps"], "sequence steps per timed batch"),
        trend_note="none: a timing benchmark has no training budget",
        floor_reason="a timing benchmark: no policy, so no floor",
        coverage_note="speed-up (IQM time ratio): "
        + ", ".join(f"{k} {v}x" for k, v in ratios.items())
        + f" (the paper: {claim.paper_effect.text})",
        extra={"speed-up": ratios, **(extra or {})},
        device=_device(t),
    )


def _device(t) -> str:
    """The device the timings ran on (one per benchmark run; "cpu" where several differ)."""
    devices = set(t.device) if "device" in t else {"cpu"}
    return devices.pop() if len(devices) == 1 else "cpu"


# RO-9 on the cores alone (stores before issue 72): its former metric and budget
RO_9_CORES = replace(
    RO_9,
    metric="ms per training step (forward + backward over the batch of sequences)",
    paper_budget=Budget(8 * 1024, "sequence steps per timed batch"),
)
PPO_PAIR = ("PPO-S5 · per env step", "PPO-GRU · per env step")  # jobs.ppo_timing's rows


def ro_9(cfg: RecurrentOffPolicyParams, runs: Runs, floors=None) -> ClaimResult | None:
    """As the S5 paper times it: whole PPO training (rollouts and updates) per env step, S5
    against the GRU in the same agent at the POPGym runs' sizes (:func:`~.jobs.ppo_timing`);
    the memory cores' own training steps (S5 against a GRU cell loop at equal depth, and
    against torch's fused GRU) reported beside it, not judged."""
    if runs.timing is None:
        return None
    if not set(PPO_PAIR) <= set(runs.timing.core):
        return _ro_9_cores(cfg, runs)
    core_only = [
        (f"S5 · {d} · 1 thread", f"GRUCell loop · {d} · 1 thread")
        for d in ("1 layer, resets", "4 layers, resets")
    ] + [("S5 · 1 layer, resets · 1 thread", "nn.GRU")]
    t = runs.timing.groupby("core").ms.median()
    cores = {
        f"{s} / {f}": round(float(t[s] / t[f]), 2)
        for f, s in core_only
        if f in t.index and s in t.index
    }
    hp, n = cfg.ppo_popgym, cfg.ppo_timing or {}
    return _speed(
        cfg,
        runs,
        RO_9,
        [PPO_PAIR],
        budget=f"{n.get('steps', 0):,} env steps of whole PPO training per timed run, "
        f"{n.get('repeats', 0) + 2} runs per core interleaved, 1 CPU thread; PPO at the POPGym "
        f"runs' sizes ({hp.n_envs} envs x {hp.n_steps} steps per update, {hp.n_epochs} "
        f"epochs, width {hp.hidden_size}, S5 {hp.s5_layers} layer(s))",
        used=Budget(hp.n_envs * hp.n_steps, "env steps per PPO update"),
        extra={"cores alone (median time ratio, not judged)": cores},
        deviations=(
            "whole PPO training per env step as the paper times it (popjaxrl: a jitted JAX "
            "run on accelerators, 64 envs x 1024 steps per update, S5 4 layers of 256), here "
            "PyTorch on one CPU thread with POPGym's numpy envs stepped in Python, at the "
            "POPGym runs' sizes; on a CPU S5's parallel scan is sequential work: the setup "
            "does not cover the paper's hardware, judged as coverage",
            "S5 and the GRU in the same PPO (one shared core, the same heads and inputs); "
            "the GRU is torch's fused layer on the pinned OpenBLAS (popjaxrl scans a GRU cell)",
        ),
    )


def _ro_9_cores(cfg: RecurrentOffPolicyParams, runs: Runs) -> ClaimResult | None:
    """RO-9 on the memory cores' own training steps, where a store holds no whole-PPO
    timing (runs made before issue 72)."""
    fair = [
        (f"S5 · {d} · {t}", f"GRUCell loop · {d} · {t}")
        for d in ("1 layer, resets", "4 layers, resets")
        for t in ("1 thread", "2 threads")
    ]
    if runs.timing is None or not {n for pair in fair for n in pair} <= set(runs.timing.core):
        return None
    own = (
        [("S5 · 1 layer, resets · 1 thread", "nn.GRU")] if "nn.GRU" in set(runs.timing.core) else []
    )
    return _speed(
        cfg,
        runs,
        RO_9_CORES,
        fair + own,
        deviations=(
            "one training step (forward and backward) of the memory core alone (popjaxrl: "
            "whole PPO training), PyTorch on 1 and 2 CPU threads (JAX on accelerators, where "
            "S5's parallel associative scan is parallel work; on 1-2 CPU threads it is "
            "sequential: the setup does not cover the paper's hardware, judged as coverage)",
            "fair pairs: S5 against a per-step GRU cell loop at equal depth (1 layer, and 4 as "
            "popjaxrl stacks S5), both resetting their state at the same episode starts; and "
            "against the project's own GRU core's kernel (torch's fused nn.GRU, 1 layer, 1 "
            "thread, no resets inside the sequence)",
        ),
    )
