"""What a claim's statement rests on, as data: a condition of the setup the paper states
(:class:`Condition`), the hardware it rests on (:class:`Hardware`) and the number it states
(:class:`PaperEffect`). :mod:`memrl.stats.claims` judges claims with them."""

from __future__ import annotations

from dataclasses import dataclass, replace

from memrl.stats.aggregate import Estimate
from memrl.stats.bootstrap import Arm


@dataclass(frozen=True)
class Condition:
    """What a claim's statement needs of the setup (hardware, domain, data source...) and
    whether our runs meet it. Only the paper's own statement may carry one: ``quote`` holds
    its words. An unmet condition narrows a hold and a fail alike (*partially* and
    *partially contradicted*); a condition of our own making is a deviation, not a scope."""

    condition: str
    met: bool
    quote: str
    note: str = ""

    def __post_init__(self) -> None:
        if not self.quote.strip():
            raise ValueError(
                f"condition {self.condition!r}: quote the paper's statement that carries it "
                "(a condition the paper does not state cannot narrow its claim)"
            )


@dataclass(frozen=True)
class Hardware:
    """The hardware a paper's statement rests on (a timing claim's accelerators: parallel
    scans are parallel work only where there are many cores), and the device kinds that
    cover it (``memrl.runtime.get_device``'s answers: ``cuda``). Run on another device, the
    setup does not cover the paper's: it narrows a hold and a fail alike (*coverage*), as a
    smaller model or one game does. ``quote`` holds the paper's words, ``source`` where."""

    needs: str
    covered_by: tuple[str, ...]
    quote: str
    source: str

    def __post_init__(self) -> None:
        if not self.quote.strip() or not self.covered_by:
            raise ValueError(
                f"hardware {self.needs!r}: quote the paper's statement it rests on and name "
                "the devices that cover it"
            )

    def covers(self, device: str) -> bool:
        """Whether runs on ``device`` (``cpu``, ``cuda``, ``cuda:1``) cover it."""
        return device.split(":")[0] in self.covered_by


@dataclass(frozen=True)
class PaperEffect:
    """The number a paper states for its claim, tested as the hypothesis: ``kind`` is
    ``ratio`` (A is ``value`` times better than B: faster, smaller), ``difference`` (A − B
    at least ``value``, in the better direction) or ``level`` (an arm at ``value`` or beyond:
    the comparison is against that constant). ``text``: the paper's words; ``source``:
    where it says them."""

    kind: str
    value: float
    text: str
    source: str

    def __post_init__(self) -> None:
        if self.kind not in ("ratio", "difference", "level"):
            raise ValueError(f"a paper effect is a ratio, a difference or a level: {self.kind!r}")
        if self.kind == "ratio" and not self.value > 0:
            raise ValueError("a ratio must be positive")

    def label(self, name: str) -> str:
        """The name of ``name`` moved by the effect: ``GRU ÷ 5``, ``DQN + 0.2``."""
        if self.kind == "ratio":
            return f"{name} ÷ {self.value:g}"
        return f"{name} + {self.value:g}" if self.kind == "difference" else name

    def apply(self, side, higher_is_better: bool):
        """``side`` moved by the effect, so that "A beats it" is "A beats B by the paper's
        number": a ratio divides it (lower is better: time) or multiplies it (higher is
        better); a difference shifts it the worse way. Values, items and CI move exactly."""
        if self.kind == "level":
            return side
        if self.kind == "ratio":
            f = 1 / self.value if not higher_is_better else self.value

            def move(x: float) -> float:
                return x * f
        else:
            step = self.value if higher_is_better else -self.value

            def move(x: float) -> float:
                return x + step

        if isinstance(side, Arm):  # pairing, per-seed items and repeats kept
            e = side.estimate
            lo, hi = sorted((move(e.ci_low), move(e.ci_high)))
            return replace(
                side,
                values=tuple(move(v) for v in side.values),
                estimate=Estimate(move(e.iqm), lo, hi, e.n),
                items=tuple(tuple(move(v) for v in run) for run in side.items),
            )
        lo, hi = sorted((move(side.ci_low), move(side.ci_high)))
        return Estimate(move(side.iqm), lo, hi, side.n)
