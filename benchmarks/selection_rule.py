"""Which selection rule keeps the better configuration: the first seed's best, or the bench's rule (issue 9).

The bench (:mod:`stochrank.bench.protocol`, steps 3-4) retrains the first seed's ``finalists`` best
configurations with every seed and selects the best validation mean over the seeds; with
``finalists=1`` it is the rule it had before, the first seed's best. Both rules select here from the same
cached fits of each tuned comparison of ``benchmarks/RESULTS.md`` with several seeds (30 configurations
× 3 seeds); it trains nothing and stops with an error naming the comparison whose bench command has not
run. For every method the table gives the test target metric of each rule's selection (as the
comparison reports it: each run's mean over its queries, averaged over folds × seeds), the folds
where the two rules keep different configurations, and their paired difference (per query, seeds
averaged, folds pooled) with its paired t p-value. Validation chooses; test is reported, never used for a
choice. A deterministic method (LambdaMART without bagging) scores the same with every seed, so both rules
keep its configuration; LightGBM is not deterministic on the synthetic set, whose 350,000 training rows
exceed the 200,000 it samples to place its bins.

A second table asks whether a method leads configuration by configuration or only at the top of its
search: the methods on one booster draw the same booster parameters for configuration i (their own knobs
differ), so each stochrank method is paired with its booster's LambdaMART over every (fold,
configuration) of the first seed: how often its validation and its test figure are the higher, the
median validation and test differences, the mean test difference, and the difference of the two methods'
best first-seed validation figures (averaged over folds). Each fit's validation figure is its
early-stopped best, so it runs ahead of test. It describes the searches; it is not a test.

It writes the RESULTS.md section ``selection_rule_l2_documents_300``: the fits of the current spaces, whose
L2 is drawn in documents' worth on [0.1, 300]. The section ``selection_rule`` above it is the same tables
from the raw-unit L2 fits that came before (summary footnote 12), kept because the text cites it.

    python benchmarks/selection_rule.py            # after the bench commands it reads (RESULTS.md)
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np
from _common import L2_SPACE, L2_SPACE_SECTION, cached_comparison, run_mean, write_results_section

from stochrank.bench.cache import Run
from stochrank.bench.pairs import booster_pairs
from stochrank.bench.protocol import Outcome
from stochrank.bench.report import pooled_per_query
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import paired_t

NDCG_METHODS = "lgb-lambdarank,sr-lgb,xgb-ndcg,sr-xgb"
# The tuned comparisons of RESULTS.md with several seeds (with one seed both rules are the same): their
# bench arguments besides ``--preset full`` (30 configurations x 3 seeds).
COMPARISONS: tuple[tuple[str, ...], ...] = (
    ("--dataset", "mq2008", "--methods", NDCG_METHODS),
    ("--dataset", "catboost-querywise", "--methods", NDCG_METHODS),
    ("--dataset", "lightgbm-example", "--methods", NDCG_METHODS),
    ("--dataset", "synthetic-nonlinear", "--methods", NDCG_METHODS),
)


def compare(argv: Sequence[str]) -> tuple[str, list[list[str]], list[list[str]], int]:
    """Select with both rules from the cached fits of one comparison; one table row per method.

    Also returns the configuration-by-configuration rows of :func:`paired_configurations`.
    """
    protocol, methods, out, outcome = cached_comparison(argv)
    rules: dict[int, Outcome] = {1: cached_comparison(argv, finalists=1)[3], protocol.finalists: outcome}
    label, folds = protocol.target.label, protocol.folds
    rows = []
    for method in methods:
        first, best_mean = (
            [r for f in folds for r in rules[n].selected[method, f]] for n in (1, protocol.finalists)
        )
        changed = sum(
            rules[1].selected[method, f][0].config_index
            != rules[protocol.finalists].selected[method, f][0].config_index
            for f in folds
        )
        a, b = (pooled_per_query(runs, folds)[label] for runs in (best_mean, first))
        keep = ~np.isnan(a)
        rows.append([
            f"`{method}`", f"{run_mean(first, label):.4f}", f"{run_mean(best_mean, label):.4f}",
            f"{changed} / {len(folds)}", f"{np.mean(a[keep] - b[keep]):+.4f}",
            f"{paired_t(a[keep], b[keep]):.3f}",
        ])  # fmt: skip
    pairs = booster_pairs(methods)
    paired = paired_configurations(rules[protocol.finalists].runs, pairs, protocol.seeds[0], label)
    return f"{protocol.dataset}, {label} (`bench_runs/{out.name}`)", rows, paired, protocol.finalists


def paired_configurations(
    runs: Sequence[Run], pairs: Sequence[tuple[str, str]], seed: int, label: str
) -> list[list[str]]:
    """Pair each stochrank method with its booster's LambdaMART per (fold, configuration), first seed.

    ``pairs`` are the (stochrank method, same-booster baseline) pairs of the report
    (:func:`stochrank.bench.pairs.booster_pairs`).
    """
    if not pairs:
        raise RuntimeError(
            f"no stochrank method beside its booster's LambdaMART; use --methods {NDCG_METHODS}."
        )
    first = {(r.method, r.fold, r.config_index): r for r in runs if r.seed == seed}
    rows = []
    for method, baseline in pairs:
        keys = sorted((f, c) for m, f, c in first if m == method)
        missing = [key for key in keys if (baseline, *key) not in first]
        if not keys or missing:
            raise RuntimeError(
                f"{method} has {len(keys)} first-seed fit(s) and {baseline} lacks {len(missing)} of them; "
                f"run the comparison with --methods {NDCG_METHODS} first."
            )
        vali = np.array([first[method, f, c].vali - first[baseline, f, c].vali for f, c in keys])
        test = np.array([
            first[method, f, c].metric_means()[label] - first[baseline, f, c].metric_means()[label]
            for f, c in keys
        ])  # fmt: skip
        best = [
            max(first[method, f, c].vali for g, c in keys if g == f)
            - max(first[baseline, f, c].vali for g, c in keys if g == f)
            for f in sorted({f for f, _ in keys})
        ]
        rows.append([
            f"`{method}` − `{baseline}`", str(len(keys)), f"{int(np.sum(vali > 0))}",
            f"{int(np.sum(test > 0))}", f"{np.median(vali):+.4f}", f"{np.median(test):+.4f}",
            f"{np.mean(test):+.4f}", f"{np.mean(best):+.4f}",
        ])  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    """Print (and write to RESULTS.md) one table per comparison."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="MQ2008 NDCG@5 only, RESULTS.md untouched")
    args = parser.parse_args(argv)
    tables, paired_tables = [], []
    for comparison in COMPARISONS[:1] if args.quick else COMPARISONS:
        title, rows, paired, finalists = compare(comparison)
        header = [
            "method",
            "first seed's best",
            f"best mean of {finalists} finalists",
            "folds changed",
            "Δ",
            "p (t)",
        ]
        tables += [f"**{title}**", markdown_table(header, rows)]
        paired_header = [
            "pair (same booster)",
            "(fold, configuration) pairs",
            "stochrank higher on validation",
            "stochrank higher on test",
            "median Δ validation",
            "median Δ test",
            "mean Δ test",
            "Δ of the best validation",
        ]
        paired_tables += [f"**{title}**", markdown_table(paired_header, paired, "lrrrrrrr")]
    body = "\n\n".join(
        [
            section_header(
                f"Selection rule: the first seed's best or the best mean over seeds, {L2_SPACE} (issue 9)"
            ),
            "Test target metric of the configuration each rule keeps, from the same cached fits of the "
            "tuned comparisons above (`python -m stochrank.bench --preset full ...`, 30 configurations × 3 "
            "seeds): the rule before (the first seed's best validation) and the bench's rule now (the "
            "first seed's best configurations retrained with every seed, the best validation mean kept). "
            "Test means as in the comparisons (each run's mean over its queries, averaged over folds × "
            "seeds); Δ: the bench's rule minus the first seed's, per query with seeds averaged and folds "
            "pooled; p: paired t.",
            *tables,
            "**Configuration by configuration.** Each stochrank method against its booster's LambdaMART "
            "on the same drawn booster parameters (their own knobs differ), first seed, every fold: the "
            "number of (fold, configuration) pairs where stochrank's validation or test figure is the "
            "higher (ties count as not higher), the medians of the validation and test differences, the "
            "mean of the test differences (each run's mean over its queries) and the difference of the two "
            "methods' best first-seed validation figures, averaged over folds (the first seed's "
            "selection). A fit's validation figure is its early-stopped best, so it runs ahead of test; "
            "this describes the searches, it is not a significance test.",
            *paired_tables,
        ]
    )
    print(body)
    if not args.quick:
        write_results_section(f"selection_rule{L2_SPACE_SECTION}", body)


if __name__ == "__main__":
    main()
