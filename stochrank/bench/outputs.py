"""The files of a benchmark run: CSV tables, per-query metrics, every fit, learning curves, the report."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from ..conventions import offsets_from_sizes
from .methods import BASELINE, METHODS
from .protocol import Outcome
from .report import Summary, markdown
from .results import section_header

__all__ = ["plot_curves", "write_csv", "write_outputs", "write_per_query", "write_runs"]


def write_csv(summary: Summary, path: Path) -> None:
    """Write the report's table: per method, every metric's mean, std, difference, p-values and timing.

    The p-values are raw and Holm-adjusted (``p_t_holm``, ``p_rand_holm``; the verdicts use the latter).
    """
    fields = ["method", "booster", "runs"]
    for m in summary.metrics:
        fields += [f"{m} mean", f"{m} std", f"{m} diff", f"{m} p_t", f"{m} p_rand", f"{m} p_t_holm",
                   f"{m} p_rand_holm"]  # fmt: skip
    fields += ["trees", "fit_seconds", "all_fits_seconds"]
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(fields)
        for s in summary.methods:
            row: list[Any] = [s.name, METHODS[s.name].booster, len(s.runs)]
            for m in summary.metrics:
                row += [s.means[m], s.stds[m], s.diffs.get(m, ""), s.p_t.get(m, ""), s.p_rand.get(m, ""),
                        s.holm_t.get(m, ""), s.holm_rand.get(m, "")]  # fmt: skip
            row += [s.trees, s.fit_seconds, s.total_seconds]
            writer.writerow(row)


def write_per_query(summary: Summary, path: Path) -> None:
    """Write every selected run's per-query test metrics (empty cell = query skipped)."""
    p = summary.outcome.protocol
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["method", "fold", "seed", "query", "qid", *summary.metrics])
        for s in summary.methods:
            for run in s.runs:
                test = p.data(run.fold).test
                first_rows = offsets_from_sizes(test.group, test.y.size)[:-1]
                for q in range(test.n_queries):
                    values = [run.test_metrics[m][q] for m in summary.metrics]
                    writer.writerow([s.name, run.fold, run.seed, q, int(test.qid[first_rows[q]]),
                                     *("" if np.isnan(v) else repr(v) for v in values)])  # fmt: skip


def write_runs(outcome: Outcome, path: Path) -> None:
    """Write every fit, tuning included, with its configuration and whether it was selected."""
    chosen = {(r.method, r.fold, r.config_index) for runs in outcome.selected.values() for r in runs}
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        columns = ["method", "fold", "seed", "config", "selected", "vali", "trees", "rounds", "seconds"]
        writer.writerow([*columns, "threads", "jobs", "params"])
        for r in sorted(
            outcome.runs, key=lambda r: (outcome.methods.index(r.method), r.fold, r.config_index, r.seed)
        ):
            selected = (r.method, r.fold, r.config_index) in chosen
            writer.writerow([r.method, r.fold, r.seed, r.config_index, selected, r.vali, r.best_iteration,
                             r.rounds, f"{r.seconds:.3f}", _blank(r.threads), _blank(r.jobs),
                             json.dumps(r.config, sort_keys=True)])  # fmt: skip


def _blank(value: int | None) -> int | str:
    return "" if value is None else value


def plot_curves(summary: Summary, path: Path) -> None:
    """Plot the validation target metric per iteration of each selected fit (first seed), per fold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = summary.outcome.protocol
    ncols = min(3, len(p.folds))
    nrows = -(-len(p.folds) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.8 * nrows), squeeze=False)
    # One colour per method (tab20 has 20; the default cycle repeats after 10); StochasticRank methods solid,
    # the others dashed, the baseline thick.
    colours = plt.get_cmap("tab20")
    for ax, fold in zip(axes.flat, p.folds, strict=False):
        for i, s in enumerate(summary.methods):
            run = summary.outcome.selected[s.name, fold][0]
            ours = METHODS[s.name].stochrank
            ax.plot(np.arange(1, len(run.curve) + 1), run.curve, label=s.name, color=colours(i % 20),
                    lw=2.0 if s.name == BASELINE else 1.1, ls="-" if ours else "--")  # fmt: skip
            ax.plot(
                [run.best_iteration], [run.curve[run.best_iteration - 1]], "o", ms=3, color=colours(i % 20)
            )
        ax.set_xscale("log")
        ax.set_title(f"{p.dataset} fold {fold}")
        ax.set_xlabel("trees")
        ax.set_ylabel(f"validation {summary.primary}")
        ax.grid(alpha=0.3)
    spare = list(axes.flat)[len(p.folds) :]
    for ax in spare:
        ax.axis("off")
    if spare:  # the legend gets an empty panel of its own instead of covering fold 1's curves
        spare[0].legend(*axes.flat[0].get_legend_handles_labels(), loc="center", fontsize=8)
    else:
        axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(summary: Summary, out: Path) -> dict[str, Path]:
    """Write every file of a run into ``out`` and return their paths by name.

    ``results.md``, ``results.csv``, ``per_query.csv``, ``runs.csv``, ``learning_curves.png`` and
    ``protocol.json``.
    """
    out.mkdir(parents=True, exist_ok=True)
    names = ("results.md", "results.csv", "per_query.csv", "runs.csv", "learning_curves.png", "protocol.json")
    paths = {name: out / name for name in names}
    plot_curves(summary, paths["learning_curves.png"])
    title = f"{summary.outcome.protocol.dataset} comparison"
    paths["results.md"].write_text(
        section_header(title, level=1, runner=True) + "\n" + markdown(summary, "learning_curves.png")
    )
    write_csv(summary, paths["results.csv"])
    write_per_query(summary, paths["per_query.csv"])
    write_runs(summary.outcome, paths["runs.csv"])
    p = summary.outcome.protocol
    paths["protocol.json"].write_text(
        json.dumps({**p.__dict__, "methods": summary.outcome.methods}, indent=1)
    )
    return paths
