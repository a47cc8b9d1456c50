"""How far the trained rankers sit below the generated data's Bayes rankings (issue 9, claim 4).

On the generated data (:func:`stochrank.datasets.synthetic.nonlinear_mslr`) every tuned comparison of
stochrank with its booster's LambdaMART ties within 0.0005 NDCG@5. Is the set saturated, every method at its
ceiling? The generator is known, so each document's expected gain given features is available in closed form
(:func:`~stochrank.datasets.synthetic.nonlinear_mslr_expected_gain`). Given a query's features, sorting by it
with the topic pooled over the query is the **Bayes ranking** (it maximises the expected DCG@5; for NDCG@5 a
near-optimum): what a model with query-level features could reach. A tree ensemble scores each document from
its own features; the best such score is not known in closed form (a query's documents share the topic). Two
per-document scores give lower bounds on it: the **posterior mean** (each document's own view of the topic,
shrunk by the posterior's 0.8) and the **shrunk view** (the same closed form with the view shrunk by 0.7,
which a review found on an independent draw, seed 99, to rank better). In expectation the rows' room below
the shrunk view is thus a lower bound on their room below the best per-document ranker; on the test queries
it is a point estimate.

Tables: (1) the rankings on the bench's own generated test and validation queries (``synthetic-nonlinear``
fold 1, the queries of every "synthetic-nonlinear comparison" section), beside a random order; (2) the tuned
comparisons' test NDCG@5 (read from RESULTS.md, four decimals) against the shrunk view and the plan's reading;
(3) on the generated data of "Quality levers" (data folds 1, 2; 4,000 test queries), its LambdaMART, default
stochrank and two other fixed-settings stochrank rows (learning rate 0.05, ≤ 600 trees; fits from the
``bench_runs/levers`` cache, trained if missing), paired per query against the shrunk view. NDCG@5 with
exponential gain, worst-case ties, queries without a relevant document skipped, as everywhere in the bench.

The reading was fixed before any number (plan of 2026-11-29 02:10 UTC): where the tuned methods sit within
twice their comparison's minimum detectable difference (MDD) of the ceiling, the generated data cannot show
one objective beating another by a margin the bench resolves; otherwise the ties are a property of the
objectives at this data size. (The plan took the posterior mean for the ceiling; the review showed it is
not one, so the reading is applied to the lower bound above.)

    nice -n 15 python benchmarks/synthetic_ceiling.py    # RESULTS.md (about 1 min with the fits cached)
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from _common import RESULTS, write_results_section
from quality_levers import BUDGET_ROWS, LEARNING_RATE, ROWS, load, p_text, row_runs, seed_mean_test
from scipy import stats

from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import minimum_detectable_difference, paired_t
from stochrank.bench.target import Target
from stochrank.bench.trainers import empty_queries
from stochrank.datasets import RankingSplit
from stochrank.datasets import load as load_dataset
from stochrank.datasets.synthetic import _expected_gain_given_topic, nonlinear_mslr_expected_gain

FOLDS, SEEDS = [1, 2], [0, 1]
ROUNDS, PATIENCE = 600, 60
NDCG5 = Target.parse("ndcg@5", gain="exp", max_grade=4.0)
# Rows of "Quality levers"' generated-data tables at learning rate 0.05: LambdaMART, the defaults, the
# training cut-off 10 and Newton leaves x 2 with it (the row furthest ahead of rank:ndcg at these settings).
FIT_ROWS = [ROWS[0], ROWS[1], BUDGET_ROWS[4], BUDGET_ROWS[6]]

Ranking = Callable[[RankingSplit], np.ndarray]
RANKINGS: dict[str, Ranking] = {
    "Bayes ranking (topic pooled over the query; needs query-level features)": lambda s: (
        nonlinear_mslr_expected_gain(s.X, s.group)
    ),
    "per-document: posterior mean (view × 0.8)": lambda s: nonlinear_mslr_expected_gain(s.X),
    "per-document: shrunk view (view × 0.7)": lambda s: shrunk_view_gain(s.X, 0.7),
    "random order": lambda s: np.random.default_rng(0).random(s.y.size),
}
REFERENCE = "per-document: shrunk view (view × 0.7)"  # room below it: in expectation a lower bound


def shrunk_view_gain(X: np.ndarray, shrink: float) -> np.ndarray:
    """Expected exponential gain with the topic taken as ``shrink`` × the document's own view (its
    one-view posterior variance, 0.2, kept): a per-document score."""
    x = X.astype(np.float64)
    return _expected_gain_given_topic(x, shrink * x[:, 8:11], 0.2, "exp")


def per_query(split: RankingSplit, scores: np.ndarray) -> np.ndarray:
    """NDCG@5 of each query with a relevant document, in query order (the bench's :class:`Target`)."""
    return NDCG5.per_query(split, scores)[~empty_queries(split)]


def ceiling_table() -> str:
    """Mean NDCG@5 of each of :data:`RANKINGS` on the bench's generated test and validation queries."""
    splits = {s: load_dataset("synthetic-nonlinear", 1, s) for s in ("test", "vali")}
    rows = [
        [name, *(f"{np.mean(per_query(split, rank(split))):.4f}" for split in splits.values())]
        for name, rank in RANKINGS.items()
    ]
    sizes = [f"{name} NDCG@5 ({int(np.sum(~empty_queries(s))):,} queries)" for name, s in splits.items()]
    return markdown_table(["ranking", *sizes], rows, "lrr")


def headroom_table(booster: str) -> str:
    """The fit rows on one booster against the shrunk view, per test query (data folds pooled)."""
    tests = [load("synthetic", f).test for f in FOLDS]
    reference, random = (
        np.concatenate([per_query(t, RANKINGS[name](t)) for t in tests])
        for name in (REFERENCE, "random order")
    )
    lambdamart = None
    rows = []
    for row in FIT_ROWS:
        runs = row_runs(row, booster, "synthetic", FOLDS, SEEDS, LEARNING_RATE, ROUNDS, PATIENCE)
        got = seed_mean_test(runs, FOLDS, SEEDS)
        lambdamart = got if lambdamart is None else lambdamart
        gap = got - reference
        half = stats.t.ppf(0.975, gap.size - 1) * np.std(gap, ddof=1) / np.sqrt(gap.size)
        closed = (got.mean() - random.mean()) / (reference.mean() - random.mean())
        mdd = "—" if got is lambdamart else f"{minimum_detectable_difference(got, lambdamart):.4f}"
        interval = f"{gap.mean():+.4f} ({gap.mean() - half:+.4f} … {gap.mean() + half:+.4f})"
        p = p_text(paired_t(got, reference))
        rows.append([row.name, f"{got.mean():.4f}", interval, p, f"{100 * closed:.1f} %", mdd])
    rows.append([REFERENCE, f"{reference.mean():.4f}", "—", "", "100 %", ""])
    rows.append(
        ["random order", f"{random.mean():.4f}", f"{np.mean(random - reference):+.4f}", "", "0 %", ""]
    )
    headers = ["row", "test NDCG@5", "Δ vs shrunk view (95 % CI)", "p (t)", "gap closed", "MDD vs LambdaMART"]
    title = (
        f'**generated data of "Quality levers", {booster}, learning rate {LEARNING_RATE}, ≤ {ROUNDS} trees '
        f"({reference.size:,} test queries; data folds {', '.join(map(str, FOLDS))} × seeds "
        f"{', '.join(map(str, SEEDS))})**"
    )
    return f"{title}\n\n" + markdown_table(headers, rows, "lrrrrr")


# The tuned comparisons on the bench's generated data (50 configurations x 3 seeds, L2 in documents' worth
# on [0.1, 300]): RESULTS.md section, stochrank method, its booster's LambdaMART.
TUNED = {
    "lightgbm": ("synthetic_nonlinear_lgb_l2_documents_300_50", "sr-lgb", "lgb-lambdarank"),
    "xgboost": ("synthetic_nonlinear_xgb_l2_documents_300_50", "sr-xgb", "xgb-ndcg"),
}


def tuned_verdict_row(section: str, method: str, baseline: str) -> tuple[float, float, float]:
    """(stochrank test, LambdaMART test, MDD) from a comparison section's same-booster verdict table."""
    text = RESULTS.read_text(encoding="utf-8")
    body = text[text.index(f"<!-- {section}:start -->") : text.index(f"<!-- {section}:end -->")]
    line = next(x for x in body.splitlines() if x.startswith(f"| `{method}` | `{baseline}` |"))
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    return float(cells[2]), float(cells[3]), float(cells[7])


def tuned_table() -> str:
    """The tuned comparisons' test NDCG@5 below the shrunk view, and the plan's reading of each method."""
    test = load_dataset("synthetic-nonlinear", 1, "test")
    reference = float(np.mean(per_query(test, RANKINGS[REFERENCE](test))))
    rows = []
    for booster, (section, method, baseline) in TUNED.items():
        ours, theirs, mdd = tuned_verdict_row(section, method, baseline)
        room = {name: reference - value for name, value in ((method, ours), (baseline, theirs))}
        within = [name for name, r in room.items() if r <= 2 * mdd]
        reading = "both within" if len(within) == 2 else f"only `{within[0]}` within" if within else "neither"
        rows.append([
            booster, f"`{method}` {ours:.4f}", f"`{baseline}` {theirs:.4f}", f"{reference:.4f}",
            f"{room[method]:.4f} / {room[baseline]:.4f}", f"{mdd:.4f} / {2 * mdd:.4f}", reading,
        ])  # fmt: skip
    headers = ["booster", "stochrank", "LambdaMART", "shrunk view", "room (stochrank / LambdaMART)",
               "MDD / 2 MDD", "room ≤ 2 MDD (the plan's reading)"]  # fmt: skip
    return markdown_table(headers, rows, "llrrrrl")


def main() -> None:
    start = time.perf_counter()
    paragraphs = __doc__.split("\n\n")
    parts = [
        section_header("The generated data's Bayes rankings: how far below them the rankers sit (issue 9)"),
        *(
            " ".join(paragraphs[i].split()).replace(":func:`~", "`").replace(":func:", "").replace("``", "`")
            for i in (1, 3)
        ),
        "**The bench's generated queries** (`synthetic-nonlinear` fold 1, the test and validation queries of "
        'every "synthetic-nonlinear comparison" section):',
        ceiling_table(),
        "**The tuned comparisons** (test NDCG@5 from the same-booster verdicts of the sections "
        + ", ".join(f"`{section}`" for section, _, _ in TUNED.values())
        + ", 50 configurations × 3 seeds, on the 9,000 test queries above, four decimals; room: the shrunk "
        "view's NDCG@5 minus the method's, a point estimate whose expectation bounds the room below the best "
        "per-document ranker from below; MDD: the comparison's own):",
        tuned_table(),
        *(headroom_table(b) for b in ("lightgbm", "xgboost")),
        "Δ vs shrunk view: the row's mean per-query NDCG@5 minus the shrunk view's on the same queries, with "
        "its paired 95 % interval; gap closed: (row − random) / (shrunk view − random); MDD: 80 % power, "
        f"two-sided 5 %. Wall time of this call {(time.perf_counter() - start) / 60:.0f} min (fits cached in "
        "`bench_runs/levers`).",
    ]
    body = "\n\n".join(parts)
    print(body)
    write_results_section("synthetic_ceiling", body)


if __name__ == "__main__":
    main()
