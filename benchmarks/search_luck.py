"""How much does a random search of m configurations decide a tuned verdict? Subsets of the 50 (issue 9).

On the generated data (``--dataset synthetic-nonlinear``) the tuned same-booster verdicts moved with the
budget: at 30 configurations per method stochrank won on LightGBM trees (+0.0020 NDCG@5) and lost on
XGBoost trees (-0.0018), at 50 both were ties (benchmarks/RESULTS.md). The report's minimum detectable
difference (MDD) covers the test queries only; it does not cover which configuration each method's search
happened to draw. This script measures that second source from the cached first-seed fits of the
50-configuration comparison, without training: for each budget m it draws 10,000 random subsets of m of
the 50 configuration indices (the same subset for both methods of a booster, as the bench gives every
method on a booster the same configurations), lets each method keep the configuration of the subset with
the best validation NDCG@5 (the bench's first-seed rule), and records the test difference stochrank minus
its booster's LambdaMART over the 9,000 test queries with its paired t-test.

The pool is the 50 configurations that were drawn, not the whole space: subsets of it understate how much
a fresh search would vary, the more so as m nears 50 (subsets of 40 share four fifths of the pool), and at
m = 50 there is one subset. The verdict counted here is the paired t
p < 0.05 without Holm's correction or the randomization test (with 9,000 queries the two tests agree to the
third digit in the comparisons); the bench's finalists rule (retraining the five best with more seeds) is
not applied, so m = 50 reproduces the 50 x 1 row of RESULTS.md.

    python benchmarks/search_luck.py    # ~1 min; after the 50-configuration synthetic comparison
"""

from __future__ import annotations

import numpy as np
from _common import cached_comparison, write_results_section
from scipy import stats

from stochrank.bench.pairs import booster_pairs
from stochrank.bench.protocol import Outcome
from stochrank.bench.results import markdown_table, section_header

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
    rng = np.random.default_rng(0)
    rows = []
    for method, baseline in booster_pairs(methods):
        vali_m, test_m = first_seed_fits(method, outcome, label)
        vali_b, test_b = first_seed_fits(baseline, outcome, label)
        mean, p = pair_tables(test_b, test_m)
        pool = vali_m.size
        for m in BUDGETS:
            subsets = [np.arange(pool)] if m == pool else [rng.choice(pool, m, replace=False)
                                                             for _ in range(SUBSETS)]  # fmt: skip
            chosen_m = np.array([s[np.argmax(vali_m[s])] for s in subsets])
            chosen_b = np.array([s[np.argmax(vali_b[s])] for s in subsets])
            d, pv = mean[chosen_m, chosen_b], p[chosen_m, chosen_b]
            win, loss = np.mean((pv < ALPHA) & (d > 0)), np.mean((pv < ALPHA) & (d < 0))
            lo, mid, hi = np.percentile(d, [5, 50, 95])
            rows.append([
                f"`{method}` − `{baseline}`", str(m), f"{len(subsets):,}", f"{mid:+.4f}",
                f"{lo:+.4f} … {hi:+.4f}", f"{100 * win:.0f} %", f"{100 * (1 - win - loss):.0f} %",
                f"{100 * loss:.0f} %", f"{100 * np.mean(d > 0):.0f} %",
            ])  # fmt: skip
    header = ["pair (same booster)", "configurations m", "subsets", "median Δ NDCG@5", "5–95 % of Δ",
              "win", "tie", "loss", "Δ > 0"]  # fmt: skip
    body = "\n\n".join(
        [
            section_header("Search luck: what m random configurations decide (issue 9)"),
            "From the cached first-seed fits of `python -m stochrank.bench --preset full "
            f"{' '.join(COMPARISON)}` (`bench_runs/{out.name}`; the 50 configurations of the synthetic "
            f"section above, one seed): for each budget m, {SUBSETS:,} random subsets of m of the 50 "
            "configuration indices, the same subset for both methods of a booster; each method keeps the "
            "subset's configuration with the best validation NDCG@5; Δ = its test NDCG@5 minus its "
            "booster's LambdaMART's, mean over the scoring test queries; win / loss = paired t p < 0.05 "
            "(uncorrected) with Δ > 0 / < 0; Δ > 0: the share of subsets where stochrank is ahead at all. "
            "The pool is the 50 drawn configurations, so the spread understates a fresh search's, and the "
            "more so as m nears 50, where the subsets share most of the pool (a subset of m holds a given "
            "configuration with probability m/50) and the spread shrinks by construction; m = 50 is the "
            "one full set (the 50 × 1 row of the summary).",
            markdown_table(header, rows, "lrrrrrrrr"),
        ]
    )
    print(body)
    write_results_section("search_luck", body)


if __name__ == "__main__":
    main()
