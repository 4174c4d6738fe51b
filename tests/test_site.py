"""The offline results site: built from fabricated results (no training), checked for
broken links and network loads, then loaded in headless Chromium with the network cut."""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess

import matplotlib
import nbformat
import numpy as np
import pytest

from memrl import report
from memrl.families import FAMILIES
from memrl.families.recurrent_off_policy.card import card as memory_card
from memrl.site import build, check
from memrl.stats.bootstrap import arm
from memrl.stats.claims import Budget, Claim, ClaimResult, Comparison

matplotlib.use("Agg")
FAMILY = "experience_replay"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _png(path) -> bytes:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [0, 1, 4], label="a")
    ax.set(xlabel="env steps", ylabel="return")
    ax.legend()
    fig.savefig(path)
    plt.close(fig)
    return path.read_bytes()


def wordy_claim() -> dict:
    """A claim written as the published ones are (RO-1's row was ~650 px tall at 1366 px and
    its verdict, in the last column, off-screen): long arm names, six comparisons, a long
    statement, value and verdict."""
    rng = np.random.default_rng(3)
    envs = ("Pendulum-V", "Pendulum-P")
    names = [f"{m} · {e}" for e in envs for m in ("RSAC-LSTM", "SAC", "SAC-prev")]
    est = {n: arm(rng.normal(10 if "RSAC" in n else 0, 1, 6), "X-2", n) for n in names}
    est |= {f"random · {e}": arm(rng.normal(-5, 1, 6), "X-2", f"random · {e}") for e in envs}
    comps = [
        Comparison(f"RSAC-LSTM · {e}", f"{m} · {e}", floor=f"random · {e}")
        for e in envs
        for m in ("SAC", "SAC-prev")
    ]
    claim = Claim(
        family=FAMILY,
        claim_id="X-2",
        paper="Yang & Nguyen 2021, Recurrent Off-policy Baselines for Memory-based Control",
        source="Sec. 5, Fig. 2 (Pendulum-P / -V learning curves)",
        statement="Recurrent SAC reaches near-optimal return on Pendulum with only positions "
        "(-P) or only velocities (-V) observed, where SAC with an MLP (no memory) fails.",
        paper_value="qualitative: RSAC near-optimal (~-150 to -200) within 50k steps; MLP SAC "
        "fails",
        metric="mean return of 10 deterministic-policy episodes after training",
        higher_is_better=True,
        regime="final",
        paper_budget=Budget(50_000, "env steps"),
    )
    return ClaimResult(
        claim=claim,
        estimates=est,
        ours=names[0],
        comparisons=comps,
        budget="Pendulum-V: 18,000 steps, Pendulum-P: 18,000 steps; 6 seeds",
        used=Budget(18_000, "env steps"),
        deviations=["recurrent SAC/TD3: hidden_size 64 (paper 128), head [64, 64] " * 3],
    ).to_row()


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A results folder as the pipeline leaves it: claims.json, an executed notebook with
    a figure output and a "## Claims" section, and figures/."""
    root = tmp_path_factory.mktemp("results")
    fam = root / FAMILY
    (fam / "figures").mkdir(parents=True)
    est = {
        n: arm(v, "X-1", n)
        for n, v in {
            "a": [9, 10, 11, 10, 10],
            "b": [4, 5, 6, 5, 5],
            "floor": [0, 1, 0, 1, 0],
        }.items()
    }
    claim = Claim(
        family=FAMILY,
        claim_id="X-1",
        paper="Paper 2020",
        source="Fig. 1",
        statement="a beats b <early>",
        paper_value="qualitative",
        metric="score",
        higher_is_better=True,
        regime="final",
        paper_budget=None,
    )
    row = ClaimResult(
        claim=claim,
        estimates=est,
        ours="a",
        comparisons=[Comparison("a", "b", floor="floor")],
        budget="10 steps",
        deviations=["smaller"],
    ).to_row()
    (fam / "claims.json").write_text(json.dumps([row, wordy_claim()]))
    png = _png(fam / "figures" / "claims.png")
    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("plot()")
    data = {"image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"}
    code.outputs = [nbformat.v4.new_output("display_data", data)]
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Experience replay"),
        code,
        nbformat.v4.new_markdown_cell("## Claims"),
    ]
    nbformat.write(nb, fam / f"{FAMILY}.ipynb")
    card_runs = [
        {"core": c, "K": 4, "seed": s, "success": {"2": 1.0, "4": 1.0, "8": v}, "losses": [0.1]}
        for c, v in (("dt", 0.5), ("rate", 1.0))
        for s in range(5)
    ]
    (root / "recurrent_off_policy").mkdir()
    (root / "recurrent_off_policy" / "memory_card.json").write_text(
        json.dumps(memory_card(card_runs, reps=500))
    )
    report.write(root, list(FAMILIES))  # the report stage runs before the site
    return root


@pytest.fixture(scope="module")
def site(results):
    build(results, results / "site")
    return results / "site"


def test_index_lists_every_claim_with_a_link_to_its_page(site):
    index = (site / "index.html").read_text()
    assert "<strong id='X-1'><a href='X-1.html'>X-1</a></strong>" in index
    assert "reproduced" in index and "10 [9, 11]" in index
    assert "a beats b &lt;early&gt;" in index  # claim texts are escaped
    assert "2 claims: 1 reproduced, 1 partially." in index  # the tally
    heads = re.findall(r"<th>([^<]*)</th>", index.split("</thead>")[0])
    assert heads.index("verdict") == 1  # the verdict second, not twelfth
    assert (site / f"{FAMILY}.html").is_file() and (
        site / "figures" / FAMILY / "claims.png"
    ).is_file()
    assert check(site) == []


def test_each_claim_has_a_page_with_its_evidence(site):
    """A claim's own page: the paper's statement and number, every arm (its seeds drawn),
    each comparison's difference against its threshold and floor, its curves, the budget
    and coverage, the deviations, and links to its notebook and figures."""
    page = (site / "X-2.html").read_text()
    assert "Recurrent SAC reaches near-optimal return" in page and "qualitative: RSAC" in page
    for name in ("RSAC-LSTM · Pendulum-V", "SAC-prev · Pendulum-P", "random · Pendulum-P"):
        assert name in page
    assert page.count("<td>random · Pendulum-V: ") == 2  # A at its floor, per comparison
    assert "<td>0</td>" in page  # a beats test's threshold
    assert "Pendulum-V: 18,000 steps, Pendulum-P: 18,000 steps; 6 seeds" in page
    assert "36% (18,000 of 50,000 env steps)" in page and "hidden_size 64" in page
    assert "6 seeds per arm" in page
    for kind in ("arms", "comparisons"):
        assert (
            f"src='claims/X-2-{kind}.png'" in page
            and (site / "claims" / f"X-2-{kind}.png").is_file()
        )
    assert f'href="{FAMILY}.html#Claims"' in page
    assert f'href="figures/{FAMILY}/claims.png">claims figure</a>' in page
    assert "href='X-2.html'" in (site / "index.html").read_text()
    assert check(site) == []


def test_the_report_and_the_site_publish_the_memory_card(results, site):
    card = json.loads((results / "memory_card.json").read_text())  # beside the report
    assert [c["class"] for c in card["classes"]] == ["short-term", "long-term"]
    assert "## The memory card" in (results / "REPORT.md").read_text()
    assert card["section"]["head"][0] == "core"  # its table as data: readers import no family
    listed = report.contents(results)["families"]  # the registry's order, for the site
    assert [f["name"] for f in listed] == [f.name for f in FAMILIES]
    index = (site / "index.html").read_text()
    assert "id='memory-card'" in index and "<td>long-term</td>" in index
    assert "<th>ms per training step</th>" in index and "<td>not timed</td>" in index


def test_nothing_is_loaded_from_the_network(site):
    for page in site.glob("*.html"):
        text = page.read_text()
        assert not re.search(r"""src\s*=\s*["'](https?:)?//""", text), page.name
        assert "<script" not in text, page.name
        assert "@import" not in text and "url(http" not in text, page.name


def test_check_finds_broken_links_anchors_and_remote_loads(site, tmp_path):
    bad = tmp_path / "site"
    shutil.copytree(site, bad)
    page = bad / "index.html"
    page.write_text(
        page.read_text().replace(
            "</body>",
            '<a href="gone.html">x</a><a href="index.html#nowhere">y</a>'
            '<img src="https://cdn.example/x.png"></body>',
        )
    )
    problems = "\n".join(check(bad))
    assert "gone.html does not exist" in problems
    assert "no element with id 'nowhere'" in problems
    assert "loaded from elsewhere" in problems


def test_build_replaces_the_site_whole_and_fails_on_missing_results(results, tmp_path):
    stale = results / "site" / "stale.html"
    stale.write_text("old")
    build(results, results / "site")
    assert not stale.exists()
    assert not list(results.glob(".site*"))  # no staging left behind
    with pytest.raises(FileNotFoundError):
        build(tmp_path, tmp_path / "site")


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND",  # offline: every host name fails
            "--enable-logging=stderr",
            "--v=0",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)"
)
def test_every_page_loads_offline_in_chromium_without_console_errors(site):
    for page in sorted(site.glob("*.html")):
        out = _chromium("--dump-dom", page.as_uri())
        assert out.returncode == 0, out.stderr[-2000:]
        console = [ln for ln in out.stderr.splitlines() if ":CONSOLE" in ln]
        assert not console, f"{page.name}: {console}"
        assert "</table>" in out.stdout if page.name == "index.html" else "Claims" in out.stdout


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)"
)
def test_a_screenshot_of_the_index_shows_the_table(site, tmp_path):
    from matplotlib.image import imread

    shot = tmp_path / "index.png"
    out = _chromium(
        f"--screenshot={shot}", "--window-size=1366,768", (site / "index.html").as_uri()
    )
    assert out.returncode == 0 and shot.is_file(), out.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    dark = (pixels.mean(-1) < 0.5).mean()  # text and table borders on a white page
    assert pixels.std() > 0.05 and 0.005 < dark < 0.5
    rows = np.abs(np.diff(pixels.mean(axis=(1, 2)))) > 0.02  # horizontal rules of the table
    assert rows.sum() >= 3


MEASURE = """<script>window.addEventListener('load', () => {
  const box = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.right]; };
  const out = {width: innerWidth, scroll: document.documentElement.scrollWidth,
               verdicts: [...document.querySelectorAll('td.verdict')].map(box),
               titles: [...document.querySelectorAll('h1, h2')].map(box)};
  const p = document.createElement('pre'); p.id = 'measure';
  p.textContent = JSON.stringify(out); document.body.appendChild(p); });</script>"""


def _measured(site, name: str, tmp_path, width: int = 1366) -> dict:
    """A page laid out by Chromium at ``width`` px: the page's scroll width and the boxes of
    its verdict cells and headings (a measuring script added to a copy of the page)."""
    copy = tmp_path / "measured"
    if not copy.exists():
        shutil.copytree(site, copy)
    page = copy / name
    page.write_text((site / name).read_text().replace("</body>", MEASURE + "</body>"))
    out = _chromium(f"--window-size={width},768", "--dump-dom", page.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    found = re.search(r"<pre id=\"measure\">(.*?)</pre>", out.stdout, re.S)
    assert found, out.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)"
)
def test_at_1366_px_every_verdict_is_on_screen_and_nothing_scrolls_sideways(site, tmp_path):
    got = _measured(site, "index.html", tmp_path)
    assert len(got["verdicts"]) == 2
    assert got["scroll"] <= got["width"], got  # no sideways scrolling
    assert all(0 <= left and right <= got["width"] for left, right in got["verdicts"]), got
    for name in ("X-1.html", "X-2.html"):  # a claim's page fits too
        page = _measured(site, name, tmp_path)
        assert page["scroll"] <= page["width"], (name, page)


def test_the_smoke_site_says_what_smoke_is(results):
    """Smoke's index reads as the wiring check it is, with the claims it lacks and why; the
    default's has no such note."""
    from memrl.site import index

    rows = report.load_rows(results)
    smoke = index(rows, {}, {}, profile="smoke", missing={"X-9": "not built: no runs"})
    assert "checks the wiring" in smoke and "expected to be inconclusive" in smoke
    assert "X-9 is missing: not built: no runs." in smoke
    assert "checks the wiring" not in index(rows, {}, {}, profile="default")
