"""Cost of one stochrank gradient against query length n, at a fixed total number of documents.

For each n in 10 … 100k, about ``--docs`` documents (default 1e6) are split into queries of exactly n
documents (MSLR-skewed grades 0..4, mid-training scores), so every point does the same total work
for a cost linear in n. One booster call (``obj(preds, lgb.Dataset)``: labels encoded once, then
one CCS sample per query) is timed on 1 thread, the points interleaved round-robin. Variants:

* ``ndcg@10``: a sample costs O(n (k + 1)) plus an O(n) top-(k+1) selection, so the cost per
  document should stay nearly flat in n (it grows like k + log n at worst);
* ``mrr``: the cascade stops at the first relevant document, so per document it is cheaper still;
* ``ndcg (whole list)``: k = None, the O(n²) case, only up to ``--max-full`` (3k) and with fewer
  documents (``--full-budget`` / n, at least a few queries) to keep it affordable;
* ``argsort``: the segmented Numba argsort of the same scores, O(n log n).

Prints a table of time per document and per query, the fitted log-log slopes, and saves the plot
``benchmarks/query_length.png``.

    python benchmarks/query_length.py            # RESULTS.md table and the PNG
    python benchmarks/query_length.py --quick    # smoke run
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from _common import (
    REPO,
    fixed_length_data,
    interleaved_times,
    lgb_ranking_dataset,
    median,
    mid_training_scores,
    numba_threads,
    segmented_argsort,
    write_results_section,
)

import stochrank
from stochrank.bench.results import fmt, markdown_table, section_header

LENGTHS = [10, 30, 100, 300, 1_000, 3_000, 10_000, 30_000, 100_000]
PLOT = REPO / "benchmarks" / "query_length.png"
VARIANTS = ("ndcg@10", "mrr", "ndcg (whole list)", "argsort")


def make_case(variant: str, length: int, n_docs: int, seed: int):
    """A zero-argument callable timing one call of ``variant`` on queries of ``length`` docs,
    and the number of documents and queries it covers."""
    sizes, labels = fixed_length_data(n_docs, length, seed)
    scores = mid_training_scores(labels, np.random.default_rng(seed + 1))
    if variant == "argsort":
        offsets = np.concatenate(([0], np.cumsum(sizes)))
        index = np.empty(labels.size, np.int64)
        return (lambda: segmented_argsort(scores, offsets, index)), labels.size, sizes.size
    obj = {"ndcg@10": stochrank.ndcg(k=10), "mrr": stochrank.mrr(), "ndcg (whole list)": stochrank.ndcg()}[
        variant
    ]
    ds = lgb_ranking_dataset(labels, sizes)
    return (lambda: obj(scores, ds)), labels.size, sizes.size


def slope(lengths, values) -> float:
    """Least-squares slope of log(value) against log(n)."""
    return float(np.polyfit(np.log(lengths), np.log(values), 1)[0])


def plot(points: dict[str, list[tuple[int, float]]], n_docs: int, path=PLOT) -> None:
    """Log-log plot of ns per document and µs per query against n, one line per variant."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for variant, pts in points.items():
        n = np.array([p[0] for p in pts])
        per_doc = np.array([p[1] for p in pts])
        style = "k--" if variant == "argsort" else "o-"
        axes[0].loglog(n, per_doc * 1e9, style, label=variant)
        axes[1].loglog(n, per_doc * n * 1e6, style, label=variant)
    axes[0].set(xlabel="documents per query n", ylabel="ns per document", title="Cost per document")
    axes[1].set(xlabel="documents per query n", ylabel="µs per query", title="Cost per query")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(f"stochrank gradient (one sample), ~{n_docs:,} docs per point, 1 thread")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    """Time every (variant, n) point, print the tables, save the plot and refresh RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=LENGTHS, help="documents per query")
    parser.add_argument("--docs", type=int, default=1_000_000, help="total documents per point")
    parser.add_argument("--max-full", type=int, default=3_000, help="largest n for k=None (whole list)")
    parser.add_argument(
        "--full-budget",
        type=float,
        default=1e8,
        help="k=None uses min(docs, full_budget / n) documents (n² work per query)",
    )
    parser.add_argument("--reps", type=int, default=7, help="timed round-robin repetitions (median reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick", action="store_true", help="tiny smoke run; RESULTS.md and the PNG untouched"
    )
    args = parser.parse_args()
    if args.quick:
        args.lengths, args.docs, args.max_full, args.full_budget, args.reps = (
            [10, 100, 1_000],
            20_000,
            1_000,
            2e6,
            3,
        )

    cases, sizes = {}, {}
    for n in args.lengths:
        for variant in VARIANTS:
            docs = args.docs
            if variant == "ndcg (whole list)":
                if n > args.max_full:
                    continue
                docs = max(4 * n, min(args.docs, int(args.full_budget / n)))
            cases[(variant, n)], n_docs, n_queries = make_case(variant, n, docs, args.seed)
            sizes[(variant, n)] = (n_docs, n_queries)
    with numba_threads(1):
        times = {key: median(t) for key, t in interleaved_times(cases, args.reps).items()}

    rows = []
    points: dict[str, list[tuple[int, float]]] = {v: [] for v in VARIANTS}
    for (variant, n), t in sorted(times.items(), key=lambda kv: (VARIANTS.index(kv[0][0]), kv[0][1])):
        n_docs, n_queries = sizes[(variant, n)]
        per_doc = t / n_docs
        points[variant].append((n, per_doc))
        rows.append(
            [
                variant,
                f"{n:,}",
                f"{n_queries:,}",
                f"{n_docs:,}",
                fmt(t * 1e3),
                fmt(per_doc * 1e9),
                fmt(t / n_queries * 1e6),
            ]
        )
    table = markdown_table(
        ["variant", "n (docs/query)", "queries", "docs", "ms per call", "ns per doc", "µs per query"],
        rows,
        "lrrrrrr",
    )
    slope_rows = []
    for variant, pts in points.items():
        n = [p[0] for p in pts]
        per_doc = [p[1] for p in pts]
        per_query = [p[1] * p[0] for p in pts]
        big = [i for i, x in enumerate(n) if x >= 100]
        tail = fmt(slope([n[i] for i in big], [per_query[i] for i in big])) if len(big) >= 2 else "–"
        slope_rows.append(
            [
                variant,
                f"{min(n):,}–{max(n):,}",
                fmt(slope(n, per_query)),
                tail,
                fmt(slope(n, per_doc)),
                fmt(max(per_doc) / min(per_doc)),
            ]
        )
    slopes = markdown_table(
        [
            "variant",
            "n range",
            "slope per query",
            "slope per query, n ≥ 100",
            "slope per doc",
            "max / min ns per doc",
        ],
        slope_rows,
    )

    body = "\n".join(
        [
            section_header("3. Cost against query length (ndcg@10, mrr, whole-list ndcg)"),
            (
                f"Queries of exactly n documents, ~{args.docs:,} documents per point (whole-list ndcg: "
                f"min({args.docs:,}, {args.full_budget:.0e} / n), at least 4 queries), grades 0–4 "
                "MSLR-skewed, mid-training scores, no features; 1 Numba thread; booster call `obj(preds, "
                f"lgb.Dataset)`, one sample; median of {args.reps} interleaved repetitions. Expected "
                "per-query slopes: 1 for ndcg@10 and mrr (O(n·k) work plus an O(n) selection), 2 for the "
                "whole list (O(n²)), ~1.1 for argsort (O(n log n))."
            ),
            "",
            table,
            "",
            "Log-log least-squares slopes (time per query against n; time per document against n):",
            "",
            slopes,
            "",
            f"![cost against query length]({PLOT.name})",
        ]
    )
    print("\n" + body)
    if not args.quick:
        plot({v: p for v, p in points.items() if p}, args.docs)
        write_results_section("query_length", body)
        print(f"plot saved to {PLOT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
