"""Keep ``notebooks/*.ipynb`` in step with their jupytext ``.py`` twins.

    python -m memrl.nbtools notebooks/experience_replay.py [...]

For each ``.py``: build the ``.ipynb`` (jupytext), execute it on its own
(smoke) defaults from the notebook's folder as nbval does, and keep only the
outputs of cells marked ``# NBVAL_CHECK_OUTPUT`` — the reference nbval
compares against. Everything else is stored without outputs, so diffs stay
reviewable.
"""

from __future__ import annotations

import sys
from pathlib import Path

CHECK_MARK = "# NBVAL_CHECK_OUTPUT"


def refresh(py_path: Path) -> Path:
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    nb = jupytext.read(py_path)
    NotebookClient(
        nb,
        timeout=3600,
        kernel_name="python3",
        resources={"metadata": {"path": str(py_path.parent)}},
    ).execute()
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:02d}"  # stable ids keep regenerated notebooks' diffs small
        if cell.cell_type != "code":
            continue
        if CHECK_MARK in cell.source:
            # nbval skips a reference cell without an execution count as "unrun"
            cell.outputs = [o for o in cell.outputs if o.get("name") != "stderr"]
        else:
            cell.execution_count = None
            cell.outputs = []
        cell.metadata.pop("execution", None)
    nb.metadata.pop("papermill", None)
    out = py_path.with_suffix(".ipynb")
    tmp = out.with_suffix(".ipynb.tmp")
    nbformat.write(nb, tmp)
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> None:
    paths = [Path(p) for p in (argv if argv is not None else sys.argv[1:])]
    if not paths:
        raise SystemExit("usage: python -m memrl.nbtools notebooks/NAME.py [...]")
    for p in paths:
        if p.suffix != ".py" or not p.is_file():
            raise SystemExit(f"not a jupytext .py notebook: {p}")
        print(f"refreshed {refresh(p)}", flush=True)


if __name__ == "__main__":
    main()
