"""Cost of one exact SoftRank booster call against query length n, next to a StochasticRank CCS call.

Exact SoftRank computes every relevant document's rank distribution by the SoftRank recursion and
differentiates it: O(n_rel · n · k) per query with the cut-off k, O(n_rel · n²) for the whole list,
against O(n · k) per CCS sample. For each n, queries of exactly n documents (MSLR-skewed grades 0..4,
mid-training scores) are timed through the booster entry point ``obj(preds, lgb.Dataset)`` on 1 Numba
thread, the cases interleaved round-robin (median of ``--reps``). The number of documents per point is
chosen so that every point does a similar amount of work (at least two queries, at most ``--docs``).

Variants: ``softrank(k=10)``, ``softrank()`` (whole list, up to ``--max-full``), and ``ndcg(k=10)`` (the
CCS estimate, one sample; ``softrank(k=10, method='ccs')`` is the same kernel without SFA and costs the
same). Prints ms per query, µs per document, the ratio to CCS and the fitted log-log slopes; writes the
``softrank_cost`` section of ``benchmarks/RESULTS.md`` and ``benchmarks/softrank_cost.png``.

    python benchmarks/softrank_cost.py            # RESULTS.md section and the PNG
    python benchmarks/softrank_cost.py --quick    # smoke run, nothing written
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
    write_results_section,
)

import stochrank
from stochrank.bench.results import fmt, markdown_table, section_header
from stochrank.objectives import softrank

LENGTHS = [10, 30, 100, 300, 1_000, 3_000, 10_000]
PLOT = REPO / "benchmarks" / "softrank_cost.png"
VARIANTS = {
    "softrank(k=10)": (lambda: softrank(k=10), 10),
    "softrank() whole list": (lambda: softrank(), None),
    "ndcg(k=10) CCS": (lambda: stochrank.ndcg(k=10), 10),
}
# "Too slow" reference: a booster call over 100,000 documents (an MQ2008 fold has ~10k, an MSLR-WEB10K
# fold ~720k) taking longer than this many seconds, i.e. minutes per hundred boosting rounds.
SLOW_SECONDS_PER_100K_DOCS = 1.0


def make_case(variant: str, length: int, n_docs: int, seed: int):
    """A zero-argument callable doing one booster call of ``variant``, its documents and queries."""
    sizes, labels = fixed_length_data(n_docs, length, seed)
    scores = mid_training_scores(labels, np.random.default_rng(seed + 1))
    obj = VARIANTS[variant][0]()
    ds = lgb_ranking_dataset(labels, sizes)
    obj(scores, ds)  # encode the labels once (per-dataset state), outside the timing
    return (lambda: obj(scores, ds)), labels.size, sizes.size


def slope(xs, ys) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def plot(points: dict[str, list[tuple[int, float]]], path=PLOT) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for variant, pts in points.items():
        n = np.array([p[0] for p in pts])
        per_doc = np.array([p[1] for p in pts])
        style = "k--" if "CCS" in variant else "o-"
        axes[0].loglog(n, per_doc * 1e6, style, label=variant)
        axes[1].loglog(n, per_doc * 1e5, style, label=variant)
    axes[1].axhline(SLOW_SECONDS_PER_100K_DOCS, color="r", lw=0.8, ls=":", label="1 s per 100k docs")
    axes[0].set(xlabel="documents per query n", ylabel="µs per document", title="Cost per document")
    axes[1].set(xlabel="documents per query n", ylabel="s per call on 100k documents", title="Booster call")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle("Exact SoftRank vs StochasticRank CCS: one booster call, 1 thread")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=LENGTHS, help="documents per query")
    parser.add_argument("--docs", type=int, default=200_000, help="at most this many documents per point")
    parser.add_argument(
        "--work", type=float, default=3e8, help="pair-rank operations per point (n·k per doc)"
    )
    parser.add_argument("--max-full", type=int, default=1_000, help="largest n for the whole-list variant")
    parser.add_argument("--reps", type=int, default=3, help="timed round-robin repetitions (median reported)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick", action="store_true", help="tiny smoke run; RESULTS.md and the PNG untouched"
    )
    args = parser.parse_args()
    if args.quick:
        args.lengths, args.docs, args.work, args.max_full, args.reps = [10, 100, 1_000], 20_000, 1e7, 300, 2

    cases, sizes = {}, {}
    for n in args.lengths:
        for variant, (_, k) in VARIANTS.items():
            if k is None and n > args.max_full:
                continue
            kk = n if k is None else min(k, n)
            per_doc_work = 1.0 if "CCS" in variant else n * kk
            docs = int(max(2 * n, min(args.docs, args.work / per_doc_work)))
            cases[(variant, n)], n_docs, n_queries = make_case(variant, n, docs, args.seed)
            sizes[(variant, n)] = (n_docs, n_queries)
    with numba_threads(1):
        times = {key: median(t) for key, t in interleaved_times(cases, args.reps).items()}

    names = list(VARIANTS)
    per_doc = {key: t / sizes[key][0] for key, t in times.items()}
    points: dict[str, list[tuple[int, float]]] = {v: [] for v in names}
    rows = []
    for variant, n in sorted(times, key=lambda key: (names.index(key[0]), key[1])):
        n_docs, n_queries = sizes[(variant, n)]
        t = times[(variant, n)]
        points[variant].append((n, per_doc[(variant, n)]))
        ccs = per_doc.get(("ndcg(k=10) CCS", n))
        rows.append(
            [
                variant,
                f"{n:,}",
                f"{n_queries:,}",
                fmt(t / n_queries * 1e3),
                fmt(per_doc[(variant, n)] * 1e6),
                fmt(per_doc[(variant, n)] * 1e5),
                fmt(per_doc[(variant, n)] / ccs) if ccs else "–",
            ]
        )
    table = markdown_table(
        ["variant", "n", "queries timed", "ms per query", "µs per doc", "s per call, 100k docs", "× CCS"],
        rows,
        "lrrrrrr",
    )
    limits = []
    for variant in names[:2]:
        pts = points[variant]
        n = np.array([p[0] for p in pts], dtype=float)
        cost = np.array([p[1] for p in pts]) * 1e5
        big = n >= 100
        s = slope(n[big], cost[big]) if big.sum() >= 2 else float("nan")
        # interpolate (log-log) the n where a call on 100k documents reaches the "too slow" line
        above = np.flatnonzero(cost >= SLOW_SECONDS_PER_100K_DOCS)
        if above.size and above[0] > 0:
            i = above[0]
            frac = (np.log(SLOW_SECONDS_PER_100K_DOCS) - np.log(cost[i - 1])) / (
                np.log(cost[i]) - np.log(cost[i - 1])
            )
            crossing = f"≈ {np.exp(np.log(n[i - 1]) + frac * (np.log(n[i]) - np.log(n[i - 1]))):,.0f}"
        elif above.size:
            crossing = f"< {n[0]:,.0f}"
        else:
            crossing = f"> {n[-1]:,.0f}"
        limits.append([variant, fmt(s), crossing])
    limit_table = markdown_table(
        [
            "variant",
            "slope of cost per doc vs n (n ≥ 100)",
            f"n where a 100k-doc call passes {SLOW_SECONDS_PER_100K_DOCS:g} s",
        ],
        limits,
    )
    print(table)
    print()
    print(limit_table)
    if args.quick:
        return
    plot(points)
    body = "\n".join(
        [
            section_header("7. SoftRank: cost of exact SoftRank against query length"),
            (
                "Queries of exactly n documents (grades 0–4 MSLR-skewed, ~48% with positive gain, "
                f"mid-training scores), up to {args.docs:,} documents per point and about {args.work:.0e} "
                "pair-rank operations per point for SoftRank (at least two queries); 1 Numba thread; "
                "booster call `obj(preds, lgb.Dataset)` after the first (label encoding) call; median of "
                f"{args.reps} interleaved repetitions. Exact SoftRank is O(n_rel·n·k) per query, so its cost "
                "per document grows like n (k = 10) or n² (whole list); CCS (one sample) is O(n·k) per "
                "query, flat per document."
            ),
            "",
            table,
            "",
            limit_table,
            "",
            (
                f"Plot: `benchmarks/{PLOT.name}`. Reading: a booster call over 100k documents costs "
                f"{SLOW_SECONDS_PER_100K_DOCS:g} s (minutes per hundred rounds; a LightGBM iteration on such "
                "data takes a fraction of a second) at the n given in the last table. Beyond it use "
                "`method='ccs'`, or a cut-off k for the whole-list objective."
            ),
        ]
    )
    write_results_section("softrank_cost", body)


if __name__ == "__main__":
    main()
