"""Which selection rule keeps the better configuration: the first seed's best, or the bench's rule (issue 9).

The bench (:mod:`stochrank.bench.protocol`, steps 3-4) retrains the first seed's ``finalists`` best
configurations with every seed and selects the best validation mean over the seeds; with
``finalists=1`` it is the rule it had before, the first seed's best. Both rules select here from the same
cached fits of each tuned comparison of ``benchmarks/RESULTS.md`` (30 configurations × 3 seeds), so
nothing is trained when the bench commands have run. For every method the table gives the test target
metric of each rule's selection (mean over folds × seeds, queries with a relevant document), the folds
where the two rules keep different configurations, and their paired difference (per query, seeds
averaged, folds pooled) with its paired t p-value. Validation chooses; test is reported, never used for a
choice. A deterministic method (LambdaMART without bagging) scores the same with every seed, so both rules
keep its configuration.

    python benchmarks/selection_rule.py            # after the bench commands it reads (RESULTS.md)
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

import numpy as np
from _common import write_results_section

from stochrank.bench.__main__ import parse_args
from stochrank.bench.cache import Run
from stochrank.bench.protocol import Outcome, run_protocol
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import paired_t

NDCG_METHODS = "lgb-lambdarank,sr-lgb,xgb-ndcg,sr-xgb"
# The tuned comparisons of RESULTS.md at 30 configurations x 3 seeds: their bench arguments.
COMPARISONS: tuple[tuple[str, ...], ...] = (
    ("--dataset", "mq2008", "--methods", NDCG_METHODS),
    ("--dataset", "catboost-querywise", "--methods", NDCG_METHODS),
    ("--dataset", "lightgbm-example", "--methods", NDCG_METHODS),
    ("--metric", "mrr", "--methods", "lgb-lambdarank,sr-lgb,xgb-ndcg,xgb-map,sr-xgb"),
    ("--metric", "err@10", "--methods", NDCG_METHODS),
    ("--metric", "ndcg@1", "--methods", NDCG_METHODS),
)


def per_query(runs: Sequence[Run], label: str, folds: Sequence[int]) -> np.ndarray:
    """Test ``label`` per query, seeds averaged, folds pooled (NaN: a query without a relevant document)."""
    by_fold = [np.mean([r.test_metrics[label] for r in runs if r.fold == f], axis=0) for f in folds]
    return np.concatenate(by_fold)


def compare(argv: Sequence[str]) -> tuple[str, list[list[str]]]:
    """Select with both rules from the cached fits of one comparison; one table row per method."""
    protocol, methods, out, _ = parse_args(["--preset", "full", "--jobs", "2", "--no-progress", *argv])
    rules: dict[int, Outcome] = {
        n: run_protocol(dataclasses.replace(protocol, finalists=n), methods, out / "runs")
        for n in (1, protocol.finalists)
    }
    label, folds = protocol.target.label, protocol.folds
    rows = []
    for method in methods:
        first, mean = (
            [r for f in folds for r in rules[n].selected[method, f]] for n in (1, protocol.finalists)
        )
        changed = sum(
            first[i].config_index != mean[i].config_index for i in range(0, len(first), len(protocol.seeds))
        )
        a, b = per_query(mean, label, folds), per_query(first, label, folds)
        keep = ~np.isnan(a)
        rows.append([
            f"`{method}`", f"{np.nanmean(b):.4f}", f"{np.nanmean(a):.4f}", f"{changed} / {len(folds)}",
            f"{np.mean(a[keep] - b[keep]):+.4f}", f"{paired_t(a[keep], b[keep]):.3f}",
        ])  # fmt: skip
    trained = sum(o.trained for o in rules.values())
    title = f"{protocol.dataset}, {label} ({out.name}; {trained} fit(s) trained by this script)"
    return title, rows


def main(argv: Sequence[str] | None = None) -> None:
    """Print (and write to RESULTS.md) one table per comparison."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="MQ2008 NDCG@5 only, RESULTS.md untouched")
    args = parser.parse_args(argv)
    header = ["method", "first seed's best", "best mean of 5 finalists", "folds changed", "Δ", "p (t)"]
    tables = []
    for comparison in COMPARISONS[:1] if args.quick else COMPARISONS:
        title, rows = compare(comparison)
        tables += [f"**{title}**", markdown_table(header, rows)]
    body = "\n\n".join(
        [
            section_header("Selection rule: the first seed's best or the best mean over seeds (issue 9)"),
            "Test target metric of the configuration each rule keeps, from the same cached fits of the "
            "tuned comparisons above (`python -m stochrank.bench --preset full ...`, 30 configurations × 3 "
            "seeds): the rule before (the first seed's best validation) and the bench's rule now (the "
            "first seed's 5 best retrained with every seed, the best validation mean kept). Δ: bench's "
            "rule minus the first seed's, per query with seeds averaged and folds pooled; p: paired t.",
            *tables,
        ]
    )
    print(body)
    if not args.quick:
        write_results_section("selection_rule", body)


if __name__ == "__main__":
    main()
