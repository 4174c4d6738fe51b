"""``make plots``: DVC's plot definitions drawn to SVG offline (no CDN, no browser)."""

from __future__ import annotations

import re

import pytest

from memrl import dvc_plots, families


def test_every_declared_plot_of_the_published_results_is_drawn_with_legend_and_bands(tmp_path):
    """On the committed default results: one SVG per declared plot, in report order, each
    with its title, axis titles, a legend naming its methods, and its CI bands; nothing on
    the page refers to the network (once the published results are this code's: a plot
    declared since they were published has no data until the republish)."""
    from test_report_consistency import stale_sources

    if stale := stale_sources():
        pytest.skip(f"the published default results predate {len(stale)} changed sources")
    out = dvc_plots.render("default", out=tmp_path / "plots.html")
    text = out.read_text()
    plots = [p for f in families.FAMILIES for p in f.plots]
    assert text.count("<svg") == len(plots)
    assert "Not drawn" not in text
    svgs = re.findall(r"<figure.*?</figure>", text, flags=re.S)
    for p, svg in zip(plots, svgs, strict=True):
        assert p.file in svg
        for label in (p.title, p.x_label, p.y_label, *p.y):
            assert label.replace("&", "&amp;") in svg, (p.file, label)
    bands = [p for p, svg in zip(plots, svgs, strict=True) if "mark-area" in svg]
    assert bands == plots  # every table carries the IQM's 95% CI
    assert not re.search(r"""(src|href)=["']?https?://""", text)


def test_a_plot_without_data_is_named_not_dropped(tmp_path, monkeypatch):
    files = dvc_plots.plot_files("smoke")
    err = [{"name": files[0], "msg": "No such file or directory"}]
    drawn = {  # one plot with data: the page draws it and names the others
        files[1]: {
            "mark": "point",
            "data": {"values": [{"x": 1, "y": 2}]},
            "encoding": {"x": {"field": "x", "type": "quantitative"}},
        }
    }
    monkeypatch.setattr(dvc_plots, "filled_specs", lambda revs: (drawn, err))
    text = dvc_plots.render("smoke", out=tmp_path / "p.html").read_text()
    assert text.count("<svg") >= 1
    assert f"{files[0]}: No such file or directory" in text
    assert all(f in text for f in files[2:])
    # nothing to draw at all: one clear error, no page of missing files
    monkeypatch.setattr(dvc_plots, "filled_specs", lambda revs: ({}, err))
    with pytest.raises(RuntimeError, match="make repro"):
        dvc_plots.render("smoke", out=tmp_path / "q.html")
    assert not (tmp_path / "q.html").exists()
