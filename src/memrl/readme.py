"""README.md's generated blocks: text between a start and an end marker that a command
rewrites and a test keeps equal (the verdict table, the tally, the price). The README decides
where each block goes; the command only replaces what its markers hold."""

from __future__ import annotations


def replace_block(readme: str, name: str, start: str, end: str, body: str) -> str:
    """``readme`` with the text between ``start`` and ``end`` replaced by ``body`` (one clear
    error naming the markers to add when they are missing)."""
    if start not in readme or end not in readme:
        raise ValueError(f"README.md has no {name} block: add {start} ... {end}")
    head, rest = readme.split(start, 1)
    return f"{head}{start}\n{body}\n{end}{rest.split(end, 1)[1]}"


def block(readme: str, start: str, end: str) -> str | None:
    """The text a block holds (without its markers' newlines), or None when it is missing."""
    if start not in readme or end not in readme:
        return None
    return readme.split(start, 1)[1].split(end, 1)[0].strip("\n")
