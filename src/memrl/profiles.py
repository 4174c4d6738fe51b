"""The profiles every family's parameters come in, and the check ``make`` runs first.

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
