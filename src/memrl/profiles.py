"""The profiles every family's parameters come in, where each one's pipeline and results
live, and the check ``make`` runs first.

    python src/memrl/profiles.py NAME     # exit 2 naming the profiles, unless NAME is one

Standard library only, and free of package imports, so ``make repro`` can refuse an unknown
``PROFILE`` in a fraction of a second, before it installs or touches anything.
"""

from __future__ import annotations

import sys

PROFILES = ("smoke", "default", "paper")


def unknown(name: str) -> str:
    """The message for a profile that is not one of :data:`PROFILES`."""
    return f"unknown profile '{name}'; choose one of {', '.join(PROFILES)}"


def results_root(profile: str) -> str:
    """The profile's results tree (repo-relative): each profile has its own."""
    return f"results/{profile}"


def pipeline_file(profile: str) -> str:
    """The profile's ``dvc.yaml`` (repo-relative): the root one for ``default``."""
    return "dvc.yaml" if profile == "default" else f"{results_root(profile)}/dvc.yaml"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: profiles.py NAME", file=sys.stderr)
        return 2
    if argv[0] not in PROFILES:
        print(f"memrl: {unknown(argv[0])}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
