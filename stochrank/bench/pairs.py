"""Resolution and same-booster verdicts: MDDs, and each stochrank method against its own LambdaMART.

The report's main tables compare every method with LightGBM's lambdarank (:data:`~stochrank.bench.methods.
BASELINE`). The claim a user cares about is narrower: on the booster I already use, does stochrank rank
better than that booster's own LambdaMART with the same trees and the same tuning budget? Each stochrank
method is paired with every baseline of :data:`BOOSTER_BASELINES` on its booster that the run holds, on the
primary (``--metric``) metric; the family of these comparisons is Holm-corrected (:func:`~stochrank.bench.
stats.holm`) for each of the two tests, and a comparison is significant when both adjusted p-values are
below :data:`~stochrank.bench.report.ALPHA`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .methods import METHODS
from .results import markdown_table
from .stats import ALPHA, holm, minimum_detectable_difference, paired_arrays, paired_randomization, paired_t

if TYPE_CHECKING:
    from .report import Summary

__all__ = ["BOOSTER_BASELINES", "booster_pairs", "booster_table", "resolution_table", "verdict"]


# Each booster's own LambdaMART-family rankers, the baselines of its stochrank methods (in report order).
# For MRR targets XGBoost's rank:map (on label > 0) joins rank:ndcg; CatBoost's LambdaMart and YetiRank take
# their MRR modes then (see stochrank.bench.methods).
BOOSTER_BASELINES: dict[str, tuple[str, ...]] = {
    "lightgbm": ("lgb-lambdarank",),
    "xgboost": ("xgb-ndcg", "xgb-map"),
    "catboost": ("cb-yetirank", "cb-lambdamart"),
}


def booster_pairs(methods: list[str]) -> list[tuple[str, str]]:
    """Return the (stochrank method, same-booster baseline) pairs among ``methods``, in report order."""
    present = set(methods)
    return [
        (m, base)
        for m in methods
        if METHODS[m].stochrank
        for base in BOOSTER_BASELINES[METHODS[m].booster]
        if base in present
    ]


def verdict(diff: float, holm_t: float, holm_rand: float) -> str:
    """Return the Markdown verdict of a paired comparison with mean difference ``diff``.

    ``**win**`` / ``**loss**`` when both Holm-adjusted p-values are below
    :data:`~stochrank.bench.stats.ALPHA`, else ``tie``.
    """
    if holm_t < ALPHA and holm_rand < ALPHA:
        return "**win**" if diff > 0 else "**loss**"
    return "tie"


def booster_table(summary: Summary) -> str:
    """Return the same-booster comparisons as Markdown (empty when the run holds no such pair)."""
    by_name = {s.name: s for s in summary.methods}
    pairs = booster_pairs([s.name for s in summary.methods])
    if not pairs:
        return ""
    m = summary.primary
    diffs, p_t, p_rand, mdd = [], [], [], []
    for name, base in pairs:
        a, b = by_name[name].per_query[m], by_name[base].per_query[m]
        diffs.append(float(np.nanmean(a - b)))
        p_t.append(paired_t(a, b))
        p_rand.append(paired_randomization(a, b, n_resamples=summary.n_resamples))
        mdd.append(minimum_detectable_difference(a, b))
    h_t, h_rand = holm(p_t), holm(p_rand)
    rows = []
    for i, (name, base) in enumerate(pairs):
        rows.append([
            f"`{name}`", f"`{base}`", f"{by_name[name].means[m]:.4f}", f"{by_name[base].means[m]:.4f}",
            f"{diffs[i]:+.4f}", f"{p_t[i]:#.3g} / {p_rand[i]:#.3g}", f"{h_t[i]:#.3g} / {h_rand[i]:#.3g}",
            f"{mdd[i]:.4f}", verdict(diffs[i], h_t[i], h_rand[i]),
        ])  # fmt: skip
    header = ["stochrank", "same-booster baseline", f"test {m}", "baseline", "Δ", "p (t / rand.)",
              f"Holm p (m = {len(pairs)})", "MDD", "verdict"]  # fmt: skip
    return (
        f"\n**Same-booster verdicts** on {m}: each stochrank method against its own booster's LambdaMART "
        "(mean per-query Δ, p-values paired t / randomization, Holm-adjusted over these "
        f"{len(pairs)} comparisons; significant = both adjusted p < {ALPHA}; MDD at 80 % power):\n\n"
        + markdown_table(header, rows)
    )


def resolution_table(summary: Summary) -> str:
    """Minimum detectable difference of each comparison with the baseline on the primary metric.

    From the per-query paired differences (queries that count, pooled over folds, seeds averaged):
    :func:`~stochrank.bench.stats.minimum_detectable_difference` at two-sided 5 % and 80 % power.
    """
    primary = summary.primary
    base = next(s for s in summary.methods if s.name == summary.baseline)
    rows = []
    for s in summary.methods:
        if s is base:
            continue
        a, b = paired_arrays(s.per_query[primary], base.per_query[primary])
        d = a - b
        sd = float(np.std(d, ddof=1)) if d.size > 1 else float("nan")
        mdd = minimum_detectable_difference(s.per_query[primary], base.per_query[primary])
        rows.append([f"`{s.name}`", str(d.size), f"{sd:.4f}", f"{s.diffs[primary]:+.4f}", f"{mdd:.4f}"])
    return markdown_table(["method", "queries", "sd of per-query Δ", f"Δ {primary}", "MDD"], rows)
