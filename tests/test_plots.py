"""The verdicts' forest plot lays out whatever a verdict says."""

import io
import warnings

import matplotlib

matplotlib.use("Agg")

from memrl import plots  # noqa: E402  (after the backend)


def _row(claim_id: str, verdict: str, n: int) -> dict:
    comparison = {
        "text": "A > B",
        "outcome": "undecided",
        "reason": "power",
        "difference": {"iqm": 0.1, "ci_low": -0.2, "ci_high": 0.4},
    }
    return {
        "claim_id": claim_id,
        "verdict": verdict,
        "category": "inconclusive",
        "higher_is_better": True,
        "estimates": {},
        "comparisons": [comparison] * n,
    }


def test_a_long_verdict_leaves_the_forest_its_axes():
    # RO-11's smoke verdict names four copies (~400 characters): as one title line it left
    # constrained layout no room, the axes collapsed, and the warning (with this machine's
    # paths) went into the published notebook
    long = "inconclusive (identical: " + "; ".join(["GRU truncated · xi=4 equals RTRL"] * 12) + ")"
    rows = [_row("RO-1", "inconclusive (budget)", 3), _row("RO-11", long, 4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the collapse is a UserWarning
        fig = plots.forest(rows)
        fig.savefig(io.BytesIO(), format="png", bbox_inches="tight")
    title = fig.axes[1].get_title(loc="left")
    assert title.replace("\n", " ") == f"RO-11: {long}" and title.count("\n") >= 2
