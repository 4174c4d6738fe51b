"""``dvc plots``, drawn offline: one static page of SVGs per profile.

DVC's own HTML (``dvc plots show``) loads Vega from a CDN, so without a network it is a
blank page. This asks DVC for the same filled specs (our template
``.dvc/plots/memrl_lines.json``: a colour per method, its 95% CI as a band, a dash per
revision), renders each to SVG in-process with vl-convert (Vega without a browser or a
network) and writes ``results/<profile>/dvc_plots.html``::

    make plots                                        # the workspace's default results
    make plots PROFILE=smoke REVS="HEAD~3 main"       # revisions overlaid (dvc plots diff)
    python -m memrl plots --profile default HEAD~3 main
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

from memrl import families
from memrl.config import check_profile
from memrl.runtime import atomic_write_text, repo_root


def plot_files(profile: str) -> list[str]:
    """The profile's declared plot CSVs (repo-relative), in report order."""
    return [f.plot_path(profile, p) for f in families.FAMILIES for p in f.plots]


def filled_specs(revs: list[str]) -> tuple[dict[str, dict], list[dict]]:
    """``{plot file: Vega-Lite spec with its data}`` for every plot DVC knows, and DVC's errors
    (e.g. a profile not run yet), from ``dvc plots show`` or, given revisions, ``dvc plots diff``."""
    cmd = ["dvc", "plots", "diff", *revs, "--json"] if revs else ["dvc", "plots", "show", "--json"]
    done = subprocess.run(  # this interpreter's dvc, also when the venv is not on PATH
        [sys.executable, "-m", *cmd], cwd=repo_root(), capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"`{' '.join(cmd)}` failed:\n{done.stderr.strip()}")
    out = json.loads(done.stdout)
    specs = {
        k: v[0]["content"] for k, v in out.get("data", {}).items() if v and v[0].get("content")
    }
    return specs, out.get("errors") or []


def page(profile: str, revs: list[str], svgs: dict[str, str], missing: list[str]) -> str:
    """The static page: per family, its plots' SVGs; then what could not be drawn."""
    sections = []
    for fam in families.FAMILIES:
        drawn = [f for f in (fam.plot_path(profile, p) for p in fam.plots) if f in svgs]
        figs = [
            f'<figure id="{html.escape(Path(f).stem)}">{svgs[f]}<figcaption>{html.escape(f)}</figcaption></figure>'
            for f in drawn
        ]
        if figs:
            sections.append(f"<h2>{html.escape(fam.title)}</h2>\n" + "\n".join(figs))
    if missing:
        items = "".join(f"<li>{html.escape(m)}</li>" for m in missing)
        sections.append(f"<h2>Not drawn</h2><ul>{items}</ul>")
    what = f"revisions {', '.join(revs)}" if revs else "the workspace"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>memrl · dvc plots · {html.escape(profile)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1400px}}
figure{{display:inline-block;margin:0 1.5em 1.5em 0;vertical-align:top}}
figcaption{{font-size:.8em;color:#555}}</style></head>
<body><h1>dvc plots · profile {html.escape(profile)} · {html.escape(what)}</h1>
<p>IQM over seeds with 95% bootstrap CIs as bands (where the table has them). Rendered
offline with vl-convert from DVC's plot definitions (<code>dvc.yaml</code>'s <code>plots:</code>);
the same data as <code>dvc plots show</code>.</p>
{chr(10).join(sections)}
</body></html>
"""


def render(profile: str, revs: list[str] = (), out: Path | None = None) -> Path:
    """Write the profile's plots page; returns its path."""
    import vl_convert

    check_profile(profile)
    revs = list(revs)
    specs, errors = filled_specs(revs)
    wanted = plot_files(profile)
    svgs = {f: vl_convert.vegalite_to_svg(specs[f]) for f in wanted if f in specs}
    failed = {e.get("name") or e.get("source"): e for e in errors}
    missing = [
        f"{f}: {failed[f].get('msg', failed[f].get('type', 'error')) if f in failed else 'no data'}"
        for f in wanted
        if f not in svgs
    ]
    if not svgs:  # nothing to draw: say so, write no page of missing files
        raise RuntimeError(
            f"no plot data for profile {profile}: `PROFILE={profile} make repro` makes it"
        )
    out = out or repo_root() / "results" / profile / "dvc_plots.html"
    atomic_write_text(out, page(profile, revs, svgs, missing))
    return out
