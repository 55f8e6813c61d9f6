"""benchmarks/plot.py: raw timings stay small and exact at the ends, every metric kind draws a
PNG, the reports' links name the files drawn, and the documentation shows only plots that
exist."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import plot  # noqa: E402


@pytest.mark.parametrize("n", [1, 7, 1000, 1001, 25_000])
def test_reduce_keeps_the_ends_and_the_quantiles(n):
    values = [float((k * 7919) % n) for k in range(n)]  # a permutation of 0 .. n-1
    reduced = plot.reduce(values)
    assert len(reduced) == min(n, plot.MAX_POINTS)
    assert reduced[0] == 0 and reduced[-1] == float(f"{n - 1:.4g}")
    assert reduced == sorted(reduced)
    # each stored point is the series' quantile at its rank, within the 4-digit rounding
    for k, v in enumerate(reduced):
        q = k / (len(reduced) - 1) if len(reduced) > 1 else 0
        assert abs(v - q * (n - 1)) <= 0.5 + 1e-3 * (n - 1)


def test_every_metric_kind_draws_and_the_links_name_the_files(tmp_path):
    pytest.importorskip("matplotlib")
    report = tmp_path / "RESULTS_x.md"
    metrics = {
        "ttfm": plot.metric("time to first mask", "ms", {"tokamata": {"a": [0.3, 0.4, 0.5], "b": [1, 2]},
                                                         "llguidance": {"a": [1.0, 1.1], "b": [2, 3]}}),
        "mask": plot.metric("mask fill", "us", {"tokamata": {"all": list(range(1, 5000))},
                                                "llguidance": {"all": [5.0, 6.0, 7.0]}}),
        "growth": plot.line_metric("RSS growth", "MB", "schemas", {"tokamata": ([0, 10, 20], [0.0, 5.0, 6.0])}),
    }
    raw = plot.save_raw(str(report), "x", "Test", metrics)
    stored = json.loads(Path(raw).read_text())
    assert stored["metrics"]["mask"]["counts"]["tokamata"]["all"] == 4999
    assert len(stored["metrics"]["mask"]["by"]["tokamata"]["all"]) == plot.MAX_POINTS
    links = plot.markdown_links("x", {m: m for m in metrics})
    for target in re.findall(r"\]\((plots/[^)]+)\)", "\n".join(links)):
        png = tmp_path / target
        assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # redrawn from the raw file alone, the same bytes
    first = (tmp_path / "plots" / "x_ttfm.png").read_bytes()
    plot.draw(raw, str(tmp_path / "again"))
    assert (tmp_path / "again" / "x_ttfm.png").read_bytes() == first


def test_the_performance_page_shows_only_plots_that_exist():
    page = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", page)
    assert images, "the performance page shows no plots"
    missing = [i for i in images if not (ROOT / "docs" / i).is_file()]
    assert not missing, f"run `make plots`: {missing}"
