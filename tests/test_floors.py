"""Floors run as ordinary jobs: a random policy's episodes, their own code keys (adding or
editing a floor never moves a run's key), and the split the notebooks read them through."""

from __future__ import annotations

import pytest

from memrl import families
from memrl.agents.random_policy import random_policy
from memrl.families import load_family
from memrl.fingerprint import job_files
from memrl.stats.floors import floor_arm, split


def test_random_policy_plays_episodes_or_steps():
    ep = random_policy("CartPole-v1", "CartPole", seed=0, episodes=5)
    assert len(ep["episode_returns"]) == 5 and ep["score"] > 0
    assert ep == random_policy("CartPole-v1", "CartPole", seed=0, episodes=5)  # seeded
    st = random_policy("CartPole-v1", "CartPole", seed=0, steps=300)
    assert sum(st["episode_lengths"]) <= 300 and st["floor"] == "random"
    with pytest.raises(ValueError):
        random_policy("CartPole-v1", "CartPole", seed=0)


@pytest.mark.parametrize("family", families.NAMES)
def test_floor_jobs_have_their_own_code_key(family):
    fam = families.get(family)
    specs = fam.grid(load_family(family, "smoke"))
    runs = [s for s in specs if ".jobs:" in s.fn]
    floors = [s for s in specs if ".jobs:" not in s.fn]  # the floors.py grid
    assert runs and floors
    # no run's code holds a floor's module: adding or editing a floor never moves a run's key
    for fn in {s.fn for s in runs}:
        assert not any("floors" in f or "random_policy" in f for f in job_files(fn)), fn
    assert {s.code for s in floors}.isdisjoint({s.code for s in runs})
    # and the runs stage's DVC deps cover the floors' code too
    assert {"src/memrl/agents/random_policy.py", f"src/memrl/families/{family}/floors.py"} & set(
        fam.job_sources()
    )


def test_split_and_floor_arm():
    recs = [{"env": "E", "seed": s, "score": float(s)} for s in range(3)]
    recs += [{"floor": "random", "env": "E", "seed": s, "score": 0.1 * s} for s in range(3)]
    runs, floors = split(recs)
    assert len(runs) == 3 and len(floors) == 3
    ((name, a),) = floor_arm(floors, "X", "E").items()
    assert name == "random · E" and a.n == 3 and a.ci_low <= a.iqm <= a.ci_high
    assert floor_arm(floors, "X", "other") == {} and floor_arm(None, "X", "E") == {}


def test_floors_join_the_plot_tables_and_figures():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from memrl.families.llm_memory_rl.tables import floor_iterations
    from memrl.plots import floor_band
    from memrl.stats.floors import FLOOR, env_floor, with_floor

    recs = [{"floor": "random", "env": "E", "seed": s, "score": 1.0 + s} for s in range(3)]
    _, floors = split(recs)
    band = env_floor(floors, "E")
    table = with_floor(pd.DataFrame({"step": [1, 2], "A": [0.5, 0.6]}), band)
    assert list(table.columns[-3:]) == [FLOOR, f"{FLOOR} ci_low", f"{FLOOR} ci_high"]
    assert table[FLOOR].tolist() == [band.iqm] * 2
    assert with_floor(table[["step", "A"]], None).columns.tolist() == ["step", "A"]
    fig, ax = plt.subplots()
    floor_band(ax, band)
    assert ax.get_legend() is not None and ax.lines[0].get_ydata()[0] == band.iqm
    plt.close(fig)
    shop = pd.DataFrame(
        [
            {
                "floor": "random search-then-buy",
                "env": "shop",
                "run": 0,
                "iter_score": [0.2, 0.4],
                "best_score": [0.2, 0.4],
            }
        ]
    )
    it = floor_iterations(shop)
    assert it.condition.unique().tolist() == ["random search-then-buy (floor)"]
    assert it.iteration.tolist() == [1, 2] and floor_iterations(None).empty
