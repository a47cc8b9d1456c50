"""How much does a random search of m configurations decide a tuned verdict? Subsets of the 50 (issue 9).

On the generated data (``--dataset synthetic-nonlinear``) the tuned same-booster verdicts moved with the
budget: at 30 configurations per method stochrank won on LightGBM trees (+0.0020 NDCG@5) and lost on
XGBoost trees (-0.0018), at 50 both were ties (benchmarks/RESULTS.md). The report's minimum detectable
difference (MDD) covers the test queries only; it does not cover which configuration each method's search
happened to draw. This script measures that second source from the cached first-seed fits of the
50-configuration comparison, without training: for each budget m it draws 10,000 random subsets of m of
the 50 configuration indices (one subset per search, shared by every method, as the bench's budget is),
lets each method keep the configuration of the subset with the best validation NDCG@5 (the bench's
first-seed rule), and records the test difference stochrank minus its booster's LambdaMART over the 9,000
test queries with its paired t-test, Holm-corrected over the two same-booster pairs as in the bench.

The pool is the 50 configurations that were drawn, not the whole space: subsets of it understate how much
a fresh search would vary, the more so as m nears 50 (two subsets of 40 share 32 configurations on
average), and at m = 50 there is one subset. The subsets select few distinct configurations (the table
counts them): a handful of configurations with the best validation scores drive the percentages. The bench
also asks its sign-flip randomization test to agree; it is not run here (10,000 x 100,000 sign patterns),
and with 9,000 queries its p-values agree with the t-test's to the third digit in the comparisons. The
bench's finalists rule (retraining the five best with more seeds) is not applied, so m = 50 reproduces the
50 x 1 row of RESULTS.md.

    python benchmarks/search_luck.py    # ~20 s; after the 50-configuration synthetic comparison
"""

from __future__ import annotations

import numpy as np
from _common import cached_comparison, write_results_section
from scipy import stats

from stochrank.bench.pairs import booster_pairs
from stochrank.bench.protocol import Outcome
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import holm

METHODS = "lgb-lambdarank,sr-lgb,xgb-ndcg,sr-xgb"
COMPARISON = ("--dataset", "synthetic-nonlinear", "--methods", METHODS, "--budget", "50", "--seeds", "1",
              "--threads", "1")  # fmt: skip
BUDGETS = (10, 20, 30, 40, 50)
SUBSETS = 10_000
ALPHA = 0.05


def first_seed_fits(method: str, outcome: Outcome, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Validation score per configuration index and test ``label`` per (configuration, query)."""
    runs = sorted(
        (r for r in outcome.runs if r.method == method and r.seed == 0),
        key=lambda r: r.config_index,
    )
    assert [r.config_index for r in runs] == list(range(len(runs))), f"{method}: configurations missing"
    return np.array([r.vali for r in runs]), np.array([r.test_metrics[label] for r in runs])


def pair_tables(base_test: np.ndarray, method_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean per-query difference and paired t p-value for every (stochrank config, baseline config)."""
    keep = ~np.isnan(base_test).any(axis=0) & ~np.isnan(method_test).any(axis=0)
    a, b = method_test[:, keep], base_test[:, keep]
    n = a.shape[1]
    mean = a.mean(axis=1)[:, None] - b.mean(axis=1)[None, :]
    ac, bc = a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)
    var = ((ac**2).sum(axis=1)[:, None] + (bc**2).sum(axis=1)[None, :] - 2 * ac @ bc.T) / (n - 1)
    t = mean / np.sqrt(var / n)
    return mean, 2 * stats.t.sf(np.abs(t), df=n - 1)


def main() -> None:
    """Print (and write to RESULTS.md) the spread of the tuned differences over random sub-searches."""
    protocol, methods, out, outcome = cached_comparison(COMPARISON)
    label = protocol.target.label
    pairs = booster_pairs(methods)
    fits = {m: first_seed_fits(m, outcome, label) for m in methods}
    tables = {(m, b): pair_tables(fits[b][1], fits[m][1]) for m, b in pairs}
    pool = fits[methods[0]][0].size
    rng = np.random.default_rng(0)
    rows: dict[tuple[str, str], list[list[str]]] = {pair: [] for pair in pairs}
    for m in BUDGETS:
        # One subset of configuration indices per search, shared by every method, as the bench's budget is.
        subsets = [np.arange(pool)] if m == pool else [rng.choice(pool, m, replace=False)
                                                         for _ in range(SUBSETS)]  # fmt: skip
        chosen = {k: np.array([s[np.argmax(fits[k][0][s])] for s in subsets]) for k in methods}
        d = {(k, b): tables[k, b][0][chosen[k], chosen[b]] for k, b in pairs}
        raw = np.column_stack([tables[k, b][1][chosen[k], chosen[b]] for k, b in pairs])
        adjusted = np.apply_along_axis(holm, 1, raw)  # Holm over the same-booster family, as the bench
        for column, pair in enumerate(pairs):
            significant = adjusted[:, column] < ALPHA
            win, loss = np.mean(significant & (d[pair] > 0)), np.mean(significant & (d[pair] < 0))
            lo, mid, hi = np.percentile(d[pair], [5, 50, 95])
            distinct = len(set(zip(chosen[pair[0]].tolist(), chosen[pair[1]].tolist(), strict=True)))
            rows[pair].append([
                f"`{pair[0]}` − `{pair[1]}`", str(m), f"{len(subsets):,}", str(distinct), f"{mid:+.4f}",
                f"{lo:+.4f} … {hi:+.4f}", f"{100 * np.mean(d[pair] > 0):.0f} %", f"{100 * win:.0f} %",
                f"{100 * (1 - win - loss):.0f} %", f"{100 * loss:.0f} %",
            ])  # fmt: skip
    header = ["pair (same booster)", "configurations m", "subsets", "distinct selections", "median Δ NDCG@5",
              "5–95 % of Δ", "Δ > 0", "win", "tie", "loss"]  # fmt: skip
    body = "\n\n".join(
        [
            section_header("Search luck: what m random configurations decide (issue 9)"),
            "From the cached first-seed fits of `python -m stochrank.bench --preset full "
            f"{' '.join(COMPARISON)}` (`bench_runs/{out.name}`; the 50 configurations of the synthetic "
            f"section above, one seed): for each budget m, {SUBSETS:,} random subsets of m of the 50 "
            "configuration indices, one per search, shared by every method (as the bench's budget is); "
            "each method keeps the subset's configuration with the best validation NDCG@5; Δ = its test "
            "NDCG@5 minus its booster's LambdaMART's, mean over the scoring test queries; distinct "
            "selections: how many different (stochrank, LambdaMART) configuration pairs the subsets "
            "selected; Δ > 0: the share of subsets where stochrank is ahead at all; win / loss: paired t "
            "p < 0.05 after Holm's correction over the two same-booster pairs, with Δ > 0 / < 0 (the bench "
            "also asks its randomization test, not run here). The pool is the 50 drawn configurations, so "
            "the spread understates a fresh search's, and the more so as m nears 50, where the subsets "
            "share most of the pool (a subset of m holds a given configuration with probability m/50) and "
            "the spread shrinks by construction; m = 50 is the one full set (the 50 × 1 row of the "
            "summary).",
            markdown_table(header, [r for pair in pairs for r in rows[pair]], "lrrrrrrrrr"),
        ]
    )
    print(body)
    write_results_section("search_luck", body)


if __name__ == "__main__":
    main()
