"""Every real test query at once: the same-booster verdicts pooled over the three real datasets (issue 9).

Each real dataset of the repository alone cannot resolve the differences the tuned comparisons measure
(minimum detectable differences 0.016 on MQ2008's 564 scoring test queries, 0.025 on LightGBM's example,
0.06 on CatBoost's query-wise set). This script asks the question a user with real data asks -- on the
booster I use, is stochrank better than its LambdaMART? -- of all of them together, from the cached fits
of the three tuned NDCG@5 comparisons of benchmarks/RESULTS.md (30 configurations x 3 seeds; it trains
nothing and stops with an error naming the comparison whose bench command has not run). For each stochrank
method against its booster's LambdaMART:

* per dataset: the comparison's own figures (mean per-query Δ, paired t p-value, MDD);
* **pooled**: the per-query differences of the three datasets concatenated (every test query with a
  relevant document counts once, so MQ2008 weighs most), with the bench's paired t and sign-flip
  randomization tests and MDD; queries are independent across datasets, so the tests stay valid, but the
  per-query differences of the sets have different spreads;
* how many test queries with the pooled spread it would take to detect the pooled Δ at 80 % power, were
  the true difference the observed one (a post-hoc figure, for scale);
* **Stouffer**: the three per-dataset one-sided t-tests (difference > 0) combined with weights
  sqrt(queries) (:func:`scipy.stats.combine_pvalues`), made two-sided, which standardises each dataset by
  its own spread.

Holm's correction runs over the two pairs for each test. The pooling was chosen as the natural question
after the per-dataset verdicts were ties; it is reported as a summary of all the real data, never to pick
a dataset.

    python benchmarks/pooled_real.py    # ~1 min; after the three bench commands it reads (RESULTS.md)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from _common import cached_comparison, write_results_section
from scipy import stats

from stochrank.bench.pairs import booster_pairs, verdict
from stochrank.bench.report import pooled_per_query
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import holm, minimum_detectable_difference, paired_randomization, paired_t

METHODS = "lgb-lambdarank,sr-lgb,xgb-ndcg,sr-xgb"
DATASETS = ("mq2008", "catboost-querywise", "lightgbm-example")


def differences(dataset: str) -> dict[tuple[str, str], np.ndarray]:
    """Per-query test NDCG@5 differences of each same-booster pair of one comparison (NaN pairs dropped)."""
    protocol, methods, _, outcome = cached_comparison(["--dataset", dataset, "--methods", METHODS])
    label = protocol.target.label
    per_query = {
        m: pooled_per_query([r for f in protocol.folds for r in outcome.selected[m, f]], protocol.folds)[
            label
        ]
        for m in methods
    }
    out = {}
    for method, baseline in booster_pairs(methods):
        d = per_query[method] - per_query[baseline]
        out[method, baseline] = d[~np.isnan(d)]
    return out


def stouffer(parts: Sequence[np.ndarray]) -> float:
    """Two-sided p-value of the sqrt(n)-weighted Stouffer combination of the per-dataset paired t-tests.

    Each dataset's one-sided p-value (mean difference > 0) is combined by :func:`scipy.stats.combine_pvalues`
    into one z-score; the two-sided p-value doubles its smaller tail.
    """
    # A dataset whose differences are all zero carries no evidence either way: one-sided p = 1/2.
    one_sided = [
        0.5 if np.all(d == 0) else float(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
        for d in parts
    ]
    weights = np.sqrt([d.size for d in parts])
    combined = float(stats.combine_pvalues(one_sided, method="stouffer", weights=weights).pvalue)
    return min(1.0, 2 * min(combined, 1 - combined))


def queries_to_detect(d: np.ndarray) -> str:
    """Test queries at this spread whose MDD would equal |mean(d)|: ((z_0.975 + z_0.8) sd / mean)^2.

    Post-hoc: 80 % power holds only if the true difference is the observed one. "-" for a zero mean.
    """
    if d.mean() == 0:
        return "-"
    factor = float(stats.norm.isf(0.025) + stats.norm.isf(0.2))
    return f"{int(np.ceil((factor * np.std(d, ddof=1) / abs(d.mean())) ** 2)):,}"


def mdd(d: np.ndarray) -> float:
    """The minimum detectable difference of a paired comparison with these per-query differences."""
    return minimum_detectable_difference(d, np.zeros_like(d))


def main() -> None:
    """Print (and write to RESULTS.md) the per-dataset and pooled same-booster comparisons."""
    by_dataset = {dataset: differences(dataset) for dataset in DATASETS}
    pairs = list(by_dataset[DATASETS[0]])
    pooled = {pair: np.concatenate([by_dataset[d][pair] for d in DATASETS]) for pair in pairs}
    p_t = [paired_t(pooled[pair], np.zeros_like(pooled[pair])) for pair in pairs]
    p_rand = [paired_randomization(pooled[pair], np.zeros_like(pooled[pair])) for pair in pairs]
    p_z = [stouffer([by_dataset[d][pair] for d in DATASETS]) for pair in pairs]
    h_t, h_rand, h_z = holm(p_t), holm(p_rand), holm(p_z)
    rows = []
    for i, pair in enumerate(pairs):
        name = f"`{pair[0]}` − `{pair[1]}`"
        for dataset in DATASETS:
            d = by_dataset[dataset][pair]
            p = paired_t(d, np.zeros_like(d))
            rows.append(
                [name, dataset, str(d.size), f"{d.mean():+.4f}", f"{p:.3f}", "", f"{mdd(d):.4f}", "", ""]
            )
        d = pooled[pair]
        rows.append([
            name, "**pooled**", str(d.size), f"{d.mean():+.4f}",
            f"{p_t[i]:.3f} / {p_rand[i]:.3f} (Holm {h_t[i]:.3f} / {h_rand[i]:.3f})",
            f"{p_z[i]:.3f} (Holm {h_z[i]:.3f})", f"{mdd(d):.4f}", queries_to_detect(d),
            verdict(float(d.mean()), h_t[i], h_rand[i]),
        ])  # fmt: skip
    header = ["pair (same booster)", "dataset", "test queries", "Δ NDCG@5", "p (t / rand.)",
              "p (Stouffer)", "MDD", "queries to detect Δ", "verdict"]  # fmt: skip
    body = "\n\n".join(
        [
            section_header("All real test queries at once: same-booster verdicts pooled (issue 9)"),
            "Test NDCG@5 of each stochrank method against its booster's LambdaMART in the three tuned real "
            "comparisons above (`python -m stochrank.bench --preset full --dataset D --methods "
            f"{METHODS}`, 30 configurations × 3 seeds, D = {', '.join(DATASETS)}): mean per-query Δ (seeds "
            "averaged), paired p-values and MDD (80 % power, two-sided 5 %) per dataset and pooled over "
            "every test query of the three; Stouffer: the per-dataset t-tests combined with weights "
            "√queries. Holm over the two pairs per test; a pooled verdict needs both the t and the "
            "randomization p below 0.05 after Holm, as in the comparisons. Test queries count where they "
            "have a relevant document (NDCG skips the others). Queries to detect Δ: how many such queries "
            "with the pooled spread of per-query differences would bring the MDD down to the pooled |Δ| "
            "(normal quantiles; post hoc: 80 % power only if the true difference is the observed one).",
            markdown_table(header, rows, "llrrrrrrl"),
        ]
    )
    print(body)
    write_results_section("pooled_real", body)


if __name__ == "__main__":
    main()
