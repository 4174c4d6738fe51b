"""Notebook tooling: strict parameters, and ``notebooks/*.ipynb`` kept in step with their
jupytext ``.py`` twins.

    python -m memrl notebooks notebooks/experience_replay.py [...]

:func:`check_parameters` runs right after a notebook's ``parameters`` cell: papermill only
warns about a parameter the notebook does not declare (``-p seeds 3`` would change nothing),
so the notebook fails instead, naming it.

For each ``.py``: build the ``.ipynb`` (jupytext), execute it on its own
(smoke) defaults from the notebook's folder as nbval does, and keep only the
outputs of cells marked ``# NBVAL_CHECK_OUTPUT`` — the reference nbval
compares against. Everything else is stored without outputs, so diffs stay
reviewable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

CHECK_MARK = "# NBVAL_CHECK_OUTPUT"
_PARAMETER_TYPES = (str, int, float, bool, list, dict, type(None))  # what papermill injects


def check_parameters(namespace: Mapping[str, Any], declared: Iterable[str]) -> None:
    """Fail on a notebook parameter that is not ``declared``.

    Call it in the cell after the ``parameters`` cell (papermill's injected cell comes
    between them), before anything else is defined: every plain value in ``namespace``
    (``globals()``) then is a declared parameter or an injected one. IPython's own names
    are left out.

    :param namespace: the notebook's ``globals()``
    :param declared: the names its ``parameters`` cell defines
    :raises TypeError: naming each unknown parameter and what the notebook takes
    """
    declared = tuple(declared)
    hidden: set[str] = set()
    try:
        from IPython import get_ipython

        shell = get_ipython()
        hidden = set(shell.user_ns_hidden) if shell is not None else set()
    except ImportError:  # pragma: no cover - notebooks always run under IPython
        pass
    unknown = sorted(
        name
        for name, value in namespace.items()
        if not name.startswith("_")
        and name not in hidden
        and name not in declared
        and isinstance(value, _PARAMETER_TYPES)
    )
    if unknown:
        raise TypeError(
            f"unknown notebook parameter{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}: this notebook takes {', '.join(declared)}; "
            "hyperparameters go in `overrides`, e.g. papermill -p overrides '{seeds: 3}'"
        )


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
        extra_arguments=["--IPKernelApp.log_level=ERROR"],  # as memrl.pipeline.QUIET_KERNEL
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
