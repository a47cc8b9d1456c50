"""How much does a random search of m configurations decide a tuned verdict? Sub-searches (issue 9).

On the generated data (``--dataset synthetic-nonlinear``) the tuned same-booster verdicts moved with the
budget: with L2 in raw units, at 30 configurations per method stochrank won on LightGBM trees (+0.0020
NDCG@5) and lost on XGBoost trees (-0.0018); with L2 in documents' worth it won on both (+0.0014, +0.0009);
at 50 all four were ties (benchmarks/RESULTS.md). The report's minimum detectable
difference (MDD) covers the test queries only; it does not cover which configurations each method's search
happened to draw. This script measures that second source from the cached first-seed fits of the tuned
NDCG@5 comparisons (the synthetic one at 50 configurations, the three real ones at 30), without training:
for each budget m it draws 10,000 random subsets of m of the configuration indices (one subset per
search, shared by every method and fold, as the bench's budget is), lets each method keep on each fold the
configuration of the subset with the best validation NDCG@5 (the bench's first-seed rule), and records the
test difference stochrank minus its booster's LambdaMART over the scoring test queries of all folds, with
its paired t-test, Holm-corrected over the two same-booster pairs as in the bench.

The pool is the configurations that were drawn, not the whole space: subsets of it understate how much a
fresh search would vary, the more so as m nears the pool (two subsets of 40 of 50 share 32 configurations
on average), and at m = pool there is one subset. On the synthetic set (one fold) the subsets select few
distinct configuration pairs (the table counts them): a handful of configurations with the best validation
scores drive its percentages; on the five-fold real sets a selection is one choice per method and fold,
so the counts there are of 10-tuples and are not comparable with the synthetic set's. The real rows use
one seed and the first-seed rule, so their differences also carry stochrank's seed noise, which the
bench's finalists rule averages out: they are not centred on the three-seed sections' verdicts.
The bench also asks its sign-flip randomization test to agree; it is not run here (10,000 x 100,000 sign
patterns); in a sample of the subsets it called the same verdicts as the t-test. The
bench's finalists rule (retraining the five best with more seeds) is not applied, so m = pool reproduces
the comparisons with ``--seeds 1`` and the first seed's best, not their three-seed sections.

It writes the RESULTS.md section ``search_luck_l2_documents_300``: the fits of the current spaces, whose L2
is drawn in documents' worth on [0.1, 300]. The section ``search_luck`` above it is the same table from the
raw-unit L2 fits that came before (summary footnote 12), kept because the text cites it; those fits are gone.

    python benchmarks/search_luck.py    # ~30 s; after the four bench commands it reads (RESULTS.md)
"""

from __future__ import annotations

import numpy as np
from _common import L2_SPACE, L2_SPACE_SECTION, cached_comparison, write_results_section
from scipy import stats

from stochrank.bench.pairs import booster_pairs
from stochrank.bench.protocol import Outcome
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.selection import ranked_by_validation
from stochrank.bench.stats import holm

METHODS = "lgb-lambdarank,sr-lgb,xgb-ndcg,sr-xgb"
# (dataset, configurations in its comparison): the synthetic comparison was extended to 50 (RESULTS.md ⁹).
COMPARISONS = (
    ("synthetic-nonlinear", 50),
    ("mq2008", 30),
    ("catboost-querywise", 30),
    ("lightgbm-example", 30),
)
BUDGETS = (10, 20, 30, 40, 50)
SUBSETS = 10_000
ALPHA = 0.05


def first_seed_fits(outcome: Outcome, method: str, fold: int, label: str) -> tuple[np.ndarray, np.ndarray]:
    """The bench's validation rank per configuration index and test ``label`` per (configuration, query).

    Rank 0 is the configuration the bench would keep among all of them
    (:func:`stochrank.bench.selection.ranked_by_validation`: NaN last, ties to the earlier configuration);
    within any subset, the bench keeps the configuration of lowest rank.
    """
    runs = sorted(
        (r for r in outcome.runs if r.method == method and r.fold == fold and r.seed == 0),
        key=lambda r: r.config_index,
    )
    assert [r.config_index for r in runs] == list(range(len(runs))), f"{method}: configurations missing"
    rank = np.empty(len(runs), dtype=np.int64)
    rank[[r.config_index for r in ranked_by_validation(runs)[method, fold]]] = np.arange(len(runs))
    return rank, np.array([r.test_metrics[label] for r in runs])


def pair_sums(base_test: np.ndarray, method_test: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Sum and sum of squares of the per-query differences for every (stochrank, baseline) configuration.

    Over the fold's scoring queries (a skipped query is NaN for every fit: it depends on the labels only):
    sum_q (a_iq - b_jq) and sum_q (a_iq - b_jq)^2 = sum a_i^2 + sum b_j^2 - 2 a_i . b_j, and the count.
    """
    keep = ~np.isnan(base_test).any(axis=0) & ~np.isnan(method_test).any(axis=0)
    a, b = method_test[:, keep], base_test[:, keep]
    total = a.sum(axis=1)[:, None] - b.sum(axis=1)[None, :]
    squares = (a**2).sum(axis=1)[:, None] + (b**2).sum(axis=1)[None, :] - 2 * a @ b.T
    return total, squares, int(keep.sum())


def paired_t_from_sums(total: np.ndarray, squares: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean difference and two-sided paired-t p-value, elementwise, from :func:`pair_sums`' sums over n.

    The test of :func:`stochrank.bench.stats.paired_t` on the sums of the differences and of their squares;
    a zero spread (every difference equal) gives t = 0, p = 1 rather than a division by zero, even for a
    non-zero mean (where scipy's test would give p = 0; it does not arise between trained rankers).
    """
    mean = total / n
    sd = np.sqrt(np.maximum(squares - n * mean**2, 0.0) / (n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, mean / (sd / np.sqrt(n)), 0.0)
    return mean, 2 * stats.t.sf(np.abs(t), df=n - 1)


def draw_subsets(pool: int, m: int, rng: np.random.Generator) -> list[np.ndarray]:
    """:data:`SUBSETS` random subsets of m of the ``pool`` configuration indices (the whole pool at m = pool).

    One subset per search, shared by every method and fold, as the bench's budget is.
    """
    return [np.arange(pool)] if m == pool else [rng.choice(pool, m, replace=False) for _ in range(SUBSETS)]


def sub_searches(dataset: str, pool: int, rng: np.random.Generator) -> list[list[str]]:
    """The table rows of one comparison: each same-booster pair at each budget m <= pool."""
    budget = ("--budget", str(pool))
    argv = ("--dataset", dataset, "--methods", METHODS, *budget, "--seeds", "1", "--threads", "1")
    protocol, methods, _, outcome = cached_comparison(argv)
    label, folds, pairs = protocol.target.label, protocol.folds, booster_pairs(methods)
    fits = {(k, f): first_seed_fits(outcome, k, f, label) for k in methods for f in folds}
    sums = {(k, b, f): pair_sums(fits[b, f][1], fits[k, f][1]) for k, b in pairs for f in folds}
    rows: dict[tuple[str, str], list[list[str]]] = {pair: [] for pair in pairs}
    for m in (m for m in BUDGETS if m <= pool):
        subsets = draw_subsets(pool, m, rng)
        chosen = {(k, f): np.array([s[np.argmin(fits[k, f][0][s])] for s in subsets]) for k in methods
                  for f in folds}  # fmt: skip
        mean, p = {}, []
        for k, b in pairs:
            total = sum(sums[k, b, f][0][chosen[k, f], chosen[b, f]] for f in folds)
            squares = sum(sums[k, b, f][1][chosen[k, f], chosen[b, f]] for f in folds)
            mean[k, b], p_pair = paired_t_from_sums(total, squares, sum(sums[k, b, f][2] for f in folds))
            p.append(p_pair)
        adjusted = np.apply_along_axis(holm, 1, np.column_stack(p))  # Holm over the same-booster family
        for column, (k, b) in enumerate(pairs):
            d, significant = mean[k, b], adjusted[:, column] < ALPHA
            win, loss = np.mean(significant & (d > 0)), np.mean(significant & (d < 0))
            lo, mid, hi = np.percentile(d, [5, 50, 95])
            picks = zip(*(chosen[x, f].tolist() for x in (k, b) for f in folds), strict=True)
            rows[k, b].append([
                dataset, f"`{k}` − `{b}`", f"{m} of {pool}", f"{len(subsets):,}", str(len(set(picks))),
                f"{mid:+.4f}", f"{lo:+.4f} … {hi:+.4f}", f"{100 * np.mean(d > 0):.0f} %",
                f"{100 * win:.0f} %", f"{100 * (1 - win - loss):.0f} %", f"{100 * loss:.0f} %",
            ])  # fmt: skip
    return [r for pair in pairs for r in rows[pair]]


def main() -> None:
    """Print (and write to RESULTS.md) the spread of the tuned differences over random sub-searches."""
    rows = [r for dataset, pool in COMPARISONS for r in sub_searches(dataset, pool, np.random.default_rng(0))]
    header = ["dataset", "pair (same booster)", "configurations m", "subsets", "distinct selections",
              "median Δ NDCG@5", "5–95 % of Δ", "Δ > 0", "win", "tie", "loss"]  # fmt: skip
    commands = "; ".join(f"`--dataset {d} --budget {pool}`" for d, pool in COMPARISONS)
    body = "\n\n".join(
        [
            section_header(f"Search luck: what m random configurations decide, {L2_SPACE} (issue 9)"),
            "From the cached first-seed fits of the tuned NDCG@5 comparisons above (`python -m "
            f"stochrank.bench --preset full --methods {METHODS} --seeds 1 --threads 1` with {commands}): "
            f"for each budget m, {SUBSETS:,} random subsets of m of the drawn configuration indices, one "
            "per search, shared by every method and fold (as the bench's budget is); each method keeps on "
            "each fold the subset's configuration with the best validation NDCG@5; Δ = its test NDCG@5 "
            "minus its booster's LambdaMART's, mean over the scoring test queries of all folds; distinct "
            "selections: how many different choices (both methods, every fold: pairs on the one-fold "
            "synthetic set, 10-tuples on the five-fold real sets, not comparable across them) the subsets "
            "made; Δ > 0: "
            "the share of subsets where stochrank is ahead at all; win / loss: paired t p < 0.05 after "
            "Holm's correction over the two same-booster pairs, with Δ > 0 / < 0 (the bench also asks its "
            "randomization test, not run here). The pool is the drawn configurations, so the spread "
            "understates a fresh search's, and the more so as m nears the pool, where the subsets share "
            "most of it (a subset of m holds a given configuration with probability m / pool) and the "
            "spread shrinks by construction; m = pool is the one full set (the comparison with one seed "
            "and the first seed's best). One seed and the first-seed rule: the real rows also "
            "carry stochrank's seed noise, which the sections' finalists rule averages over three seeds, "
            "and are not centred on those sections' verdicts.",
            markdown_table(header, rows, "llrrrrrrrrr"),
        ]
    )
    print(body)
    write_results_section(f"search_luck{L2_SPACE_SECTION}", body)


if __name__ == "__main__":
    main()
