#!/usr/bin/env python3
"""The benchmarks' raw timings and their plots: every benchmark saves its per-case timings as a
small JSON file (``benchmarks/raw/NAME.json``) next to its report, and this script draws them
(``benchmarks/plots/NAME_METRIC.png``) without rerunning anything.

    .venv/bin/python benchmarks/plot.py                 # every benchmarks/raw/*.json
    .venv/bin/python benchmarks/plot.py raw/grammar.json --out /tmp/plots

A raw file is ``{"benchmark", "title", "source", "metrics": {METRIC: {"label", "unit", "by":
{ENGINE: {CASE: [values]}}}}}`` (a line metric, ``"kind": "line"``: ``by`` = {ENGINE: {"x", "y"}},
drawn as lines on linear axes). A metric with one case per engine (MaskBench: TTFM over
schemas) is drawn as empirical CDFs, one line per engine, on a log x axis; a metric with several
cases (regexes, grammars) as box plots per case, engines side by side, on a log y axis (whiskers
at the 1st and 99th percentiles, the points past them drawn). Tokamata is always the first colour.

Invariants

* Raw files stay small: a series longer than ``MAX_POINTS`` is stored as ``MAX_POINTS`` evenly
  spaced quantiles (its first and last are the minimum and the maximum), with its true count
  in ``counts``; an ECDF or a box plot of the quantiles is the one of the series within
  1 / ``MAX_POINTS`` in probability.
* The plots depend only on the raw file: the same file gives the same PNG (fixed size, the
  engines and cases in the file's order, the known engines first; no timestamps in the image).
* Reports link plots by the relative path ``plots/NAME_METRIC.png`` (:func:`markdown_links`),
  so a report written to another folder gets its own ``plots/`` and ``raw/`` there.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import sys
from typing import Any, Iterable

HERE = os.path.dirname(os.path.abspath(__file__))

#: a stored series has at most this many values (quantiles of the series when it is longer)
MAX_POINTS = 500
#: engines in plotting order, then any other engine (strategies, front ends) in the raw file's order
ENGINE_ORDER = ("tokamata", "llguidance", "xgrammar", "outlines-core")
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def reduce(values: Iterable[float], max_points: int = MAX_POINTS) -> list[float]:
    """``values`` sorted, as ``max_points`` evenly spaced quantiles when there are more
    (nearest rank; the minimum and the maximum kept), rounded to 4 significant digits."""
    data = sorted(float(v) for v in values if v is not None and not math.isnan(float(v)))
    if len(data) > max_points:
        last = len(data) - 1
        data = [data[round(k * last / (max_points - 1))] for k in range(max_points)]
    return [float(f"{v:.4g}") for v in data]


def metric(label: str, unit: str, by: dict[str, dict[str, Iterable[float]]]) -> dict[str, Any]:
    """One metric of a raw file: ``by[engine][case]`` = the measured values (any length)."""
    out: dict[str, Any] = {"label": label, "unit": unit, "by": {}, "counts": {}}
    for engine, cases in by.items():
        values = {case: list(v) for case, v in cases.items()}
        out["by"][engine] = {case: reduce(v) for case, v in values.items() if v}
        out["counts"][engine] = {case: len(v) for case, v in values.items() if v}
    return out


def line_metric(label: str, unit: str, xlabel: str, by: dict[str, tuple[list[float], list[float]]]) -> dict[str, Any]:
    """A metric drawn as lines (one per engine): ``by[engine]`` = (xs, ys), stored as given."""
    return {"kind": "line", "label": label, "unit": unit, "xlabel": xlabel,
            "by": {e: {"x": list(xs), "y": [float(f"{y:.4g}") for y in ys]} for e, (xs, ys) in by.items()}}


def save_raw(report_path: str, name: str, title: str, metrics: dict[str, dict[str, Any]],
             source: str = "") -> str:
    """Write ``raw/NAME.json`` next to ``report_path`` and draw its plots into ``plots/`` there
    (when matplotlib is installed; else say so); returns the raw file's path."""
    folder = os.path.dirname(os.path.abspath(report_path))
    os.makedirs(os.path.join(folder, "raw"), exist_ok=True)
    path = os.path.join(folder, "raw", f"{name}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"benchmark": name, "title": title, "source": source, "metrics": metrics}, f,
                  separators=(",", ":"))
        f.write("\n")
    try:
        draw(path, os.path.join(folder, "plots"))
    except ImportError:
        print("matplotlib is not installed: no plots drawn (pip install 'tokamata[bench]', then "
              f"python benchmarks/plot.py {path})", file=sys.stderr)
    return path


def plot_names(name: str, metrics: Iterable[str]) -> list[str]:
    return [f"{name}_{m}.png" for m in metrics]


def markdown_links(name: str, metrics: dict[str, str], prefix: str = "plots/") -> list[str]:
    """The report's "Plots" section: one image per metric (``metrics``: name -> caption)."""
    lines = ["## Plots", "",
             f"Drawn by `benchmarks/plot.py` from `raw/{name}.json` (the per-case timings of this run; "
             "rerun the script to redraw them without rerunning the benchmark). Log scale.", ""]
    for m, caption in metrics.items():
        lines += [f"![{caption}]({prefix}{name}_{m}.png)", ""]
    return lines


def _engines(by: dict[str, Any]) -> list[str]:
    known = [e for e in ENGINE_ORDER if e in by]
    return known + [e for e in by if e not in ENGINE_ORDER]


def _cases(by: dict[str, dict[str, list[float]]]) -> list[str]:
    seen: list[str] = []
    for cases in by.values():
        for c in cases:
            if c not in seen:
                seen.append(c)
    return seen


def draw(raw_path: str, out_dir: str) -> list[str]:
    """Draw every metric of one raw file into ``out_dir``; returns the PNG paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(raw_path, encoding="utf-8") as f:
        raw = json.load(f)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, m in raw["metrics"].items():
        by, counts = m["by"], m.get("counts", {})
        engines, cases = _engines(by), _cases(by)
        if not engines or not cases:
            continue
        fig, ax = plt.subplots(figsize=(8, 4.2), dpi=100)
        colours = {e: COLOURS[k % len(COLOURS)] for k, e in enumerate(engines)}
        if m.get("kind") == "line":
            for e in engines:
                ax.plot(by[e]["x"], by[e]["y"], marker=".", color=colours[e], label=e)
            ax.set_xlabel(m["xlabel"])
            ax.set_ylabel(f"{m['label']} ({m['unit']})")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=8)
        elif len(cases) == 1:
            case = cases[0]
            for e in engines:
                values = by[e].get(case)
                if not values:
                    continue
                n = len(values)
                ys = [(k + 1) / n for k in range(n)]
                median = values[n // 2]
                ax.step(values, ys, where="post", color=colours[e],
                        label=f"{e} (n={counts.get(e, {}).get(case, n):,}, median {median:.3g} {m['unit']})")
            ax.set_xscale("log")
            ax.set_xlabel(f"{m['label']} ({m['unit']}, log scale)")
            ax.set_ylabel("fraction at or below")
            ax.set_ylim(0, 1.02)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(loc="lower right", fontsize=8)
        else:
            width = 0.8 / len(engines)
            for k, e in enumerate(engines):
                positions, data = [], []
                for i, case in enumerate(cases):
                    values = by[e].get(case)
                    if values:
                        positions.append(i + (k - (len(engines) - 1) / 2) * width)
                        data.append(values)
                if not data:
                    continue
                parts = ax.boxplot(data, positions=positions, widths=width * 0.9, whis=(1, 99), patch_artist=True,
                                   manage_ticks=False, flierprops={"markersize": 2, "alpha": 0.4,
                                                                   "markeredgecolor": colours[e]})
                for box in parts["boxes"]:
                    box.set_facecolor(colours[e])
                    box.set_alpha(0.6)
                for line in parts["medians"]:
                    line.set_color("black")
                ax.plot([], [], color=colours[e], linewidth=6, alpha=0.6, label=e)
            ax.set_xticks(range(len(cases)))
            ax.set_xticklabels(cases, rotation=20 if len(cases) > 5 else 0, fontsize=8)
            ax.set_yscale("log")
            ax.set_ylabel(f"{m['label']} ({m['unit']}, log scale)")
            ax.grid(True, axis="y", which="both", alpha=0.3)
            ax.legend(fontsize=8)
        ax.set_title(f"{raw['title']}: {m['label']}", fontsize=10)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{raw['benchmark']}_{name}.png")
        fig.savefig(path, metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw", nargs="*", help="raw files (default: every benchmarks/raw/*.json)")
    ap.add_argument("--out", help="folder of the PNGs (default: plots/ next to each raw/ folder)")
    args = ap.parse_args(argv)
    paths = args.raw or sorted(glob.glob(os.path.join(HERE, "raw", "*.json")))
    if not paths:
        print("no raw files: run a benchmark with --write first", file=sys.stderr)
        return 1
    for path in paths:
        out = args.out or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(path))), "plots")
        for png in draw(path, out):
            print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
