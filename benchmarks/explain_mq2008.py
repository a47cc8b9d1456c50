"""Explain a LightGBM lambdarank ranker trained on MQ2008 Fold 1 with ``stochrank.explain.feature_gradients``.

Protocol: LightGBM ``objective="lambdarank"`` (``num_leaves=15, min_data_in_leaf=50``, learning rate 0.1, at
most 300 rounds, early stopping after 50 rounds without a better vali NDCG@5, best iteration kept, 1 thread)
on Fold 1 train; explained on 2000 documents drawn at random from Fold 1 test with feature_gradients' default
``GradientGP(variance_fraction=0.99)`` (median-distance Taylor bandwidth on z-scored features, ARD amplitudes,
inducing path, gradients in the principal directions holding 99 % of the variance) and, for contrast, with
``variance_fraction=1`` (all directions). A
relevance is the posterior mean of the RMS partial derivative of the ranker's score over the sample, per
standard deviation of the feature, with its 95 % credible interval; the e.d.r. directions are the leading
eigenvectors of the gradient outer product. For comparison, the rank of each feature by LightGBM's total
split gain. Feature names follow the LETOR 4.0 feature list (Qin & Liu, arXiv:1306.2597).

Writes ``benchmarks/explain_mq2008.png`` and the ``explain_mq2008`` section of RESULTS.md.

Run: ``nice -n 5 python benchmarks/explain_mq2008.py`` (``--quick``: 500 documents; neither file written).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import REPO, write_results_section

from stochrank.bench.results import markdown_table, section_header
from stochrank.datasets import load_mq2008
from stochrank.explain import feature_gradients
from stochrank.gp import GradientGP
from stochrank.metrics import ndcg

FIGURE = REPO / "benchmarks" / "explain_mq2008.png"
FIELDS = ("body", "anchor", "title", "URL", "doc")
LETOR4_NAMES = (
    [f"TF {f}" for f in FIELDS]
    + [f"IDF {f}" for f in FIELDS]
    + [f"TF*IDF {f}" for f in FIELDS]
    + [f"DL {f}" for f in FIELDS]
    + [f"BM25 {f}" for f in FIELDS]
    + [f"LMIR.ABS {f}" for f in FIELDS]
    + [f"LMIR.DIR {f}" for f in FIELDS]
    + [f"LMIR.JM {f}" for f in FIELDS]
    + ["PageRank", "inlinks", "outlinks", "URL slashes", "URL length", "child pages"]
)
PARAMS = {
    "objective": "lambdarank",
    "num_leaves": 15,
    "min_data_in_leaf": 50,
    "learning_rate": 0.1,
    "num_threads": 1,
    "deterministic": True,
    "verbosity": -1,
    "seed": 0,
    "metric": "ndcg",
    "eval_at": [5],
}


class Scorer:
    """The booster at its best iteration, as an object with ``predict``."""

    def __init__(self, booster, iteration):
        self.booster, self.iteration = booster, iteration

    def predict(self, X):
        return self.booster.predict(X, num_iteration=self.iteration)


def train(fold_train, fold_vali):
    import lightgbm as lgb

    dtrain = lgb.Dataset(fold_train.X, fold_train.y, group=fold_train.group, free_raw_data=False)
    dvali = lgb.Dataset(fold_vali.X, fold_vali.y, group=fold_vali.group, reference=dtrain)
    booster = lgb.train(
        PARAMS,
        dtrain,
        num_boost_round=300,
        valid_sets=[dvali],
        callbacks=[lgb.early_stopping(50, first_metric_only=True, verbose=False)],
    )
    return booster, booster.best_iteration or booster.current_iteration()


def known_gradient_check(train_split, test, n_docs):
    """Explain a Ridge scorer (gradient = its coefficients) on the same documents, reduced and unreduced."""
    from sklearn.linear_model import Ridge

    model = Ridge(alpha=10.0).fit(train_split.X, train_split.y)
    parts = []
    for label, gp in (("default (99 % of the variance)", None), ("`gp=GradientGP()`", GradientGP())):
        result = feature_gradients(model, test.X, n_documents=n_docs, gp=gp)
        varying = ~np.isnan(result.relevance)
        truth = (np.abs(model.coef_) * result.scale)[varying]
        err = np.abs(result.relevance[varying] - truth).max() / truth.max()
        lo, hi = result.relevance_interval[varying].T
        cover = np.mean((lo <= truth) & (truth <= hi))
        parts.append(
            f"{label}: largest error {err:.1%} of the largest true relevance, intervals cover "
            f"{cover:.0%} of the features"
        )
    return "; ".join(parts)


def figure(result, top):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 6), gridspec_kw={"width_ratios": [1.1, 1]})
    result.plot(top=top, ax=left)
    left.set_title("LightGBM lambdarank on MQ2008 Fold 1: feature relevance")
    shown = result.order()[:top]
    width = 0.38
    for j, colour in zip(range(2), ("tab:orange", "tab:green"), strict=False):
        share = result.edr_eigenvalues[j] / result.gop_trace
        right.barh(
            np.arange(shown.size) + (j - 0.5) * width,
            result.edr_directions[j, shown],
            height=width,
            color=colour,
            label=f"e.d.r. {j + 1} ({share:.0%} of the GOP trace)",
        )
    right.set_yticks(np.arange(shown.size), [result.feature_names[p] for p in shown])
    right.invert_yaxis()
    right.axvline(0, color="k", lw=0.5)
    right.set_xlabel("loading")
    right.set_title("first two effective dimension-reduction directions")
    right.legend(loc="center right")
    fig.tight_layout()
    fig.savefig(FIGURE, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="500 documents; RESULTS.md and the figure untouched"
    )
    args = parser.parse_args()
    train_split, vali, test = (load_mq2008(1, s) for s in ("train", "vali", "test"))
    t0 = time.perf_counter()
    booster, best = train(train_split, vali)
    train_seconds = time.perf_counter() - t0
    scorer = Scorer(booster, best)
    test_ndcg = float(ndcg(test.y, scorer.predict(test.X), test.group, k=5, ties="input"))
    names = [f"f{p + 1} {name}" for p, name in enumerate(LETOR4_NAMES)]
    n_docs = 500 if args.quick else 2000
    t0 = time.perf_counter()
    result = feature_gradients(scorer, test.X, feature_names=names, n_documents=n_docs)
    explain_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = feature_gradients(scorer, test.X, feature_names=names, n_documents=n_docs, gp=GradientGP())
    full_seconds = time.perf_counter() - t0
    full_top = ", ".join(
        f"{full.feature_names[p]} {full.relevance[p]:.2f} (e.d.r. 1 loading {full.edr_directions[0, p]:+.2f})"
        for p in full.order()[:3]
    )
    known = known_gradient_check(train_split, test, n_docs)
    gain = booster.feature_importance("gain", iteration=best)
    gain_rank = np.empty(gain.size, dtype=int)
    gain_rank[np.argsort(-gain, kind="stable")] = np.arange(1, gain.size + 1)
    rows = []
    for rank, p in enumerate(result.order()[:12], 1):
        lo, hi = result.relevance_interval[p]
        rows.append(
            [
                rank,
                result.feature_names[p],
                f"{result.relevance[p]:.4f}",
                f"[{lo:.4f}, {hi:.4f}]",
                f"{result.edr_directions[0, p]:+.3f}",
                f"{result.edr_directions[1, p]:+.3f}",
                gain_rank[p],
            ]
        )
    table = markdown_table(
        ["rank", "feature", "relevance", "95 % interval", "e.d.r. 1", "e.d.r. 2", "rank by split gain"],
        rows,
        align="rlrrrrr",
    )
    shares = ", ".join(f"{v / result.gop_trace:.1%}" for v in result.edr_eigenvalues)
    top_gp = set(result.order()[:10])
    top_gain = set(np.argsort(-gain)[:10])
    gp = result.model
    intro = (
        f"LightGBM lambdarank, Fold 1, {best} trees (trained in {train_seconds:.1f} s), test NDCG@5 "
        f"{test_ndcg:.4f}. `feature_gradients` on {result.rows.size} test documents: "
        f"{explain_seconds:.1f} s ({gp.method_} path, {gp.components_.shape[0]} principal directions, "
        f"{gp.n_iter_} L-BFGS-B iterations, bandwidth s = {gp.bandwidth_:.2f} in SD units, lengthscale "
        f"{gp.length_scale_:.2f}). Constant over the sample (not estimable): "
        f"{', '.join(result.constant) or 'none'}.\n"
    )
    unreduced = (
        f"Without the principal-direction reduction (`GradientGP()`, all directions; {full_seconds:.1f} s) "
        f"the top three were {full_top}: the two document-length features are near duplicates, the "
        "documents barely spread along their difference, the trees' score jumps over those tiny distances "
        "read as steep slopes, and the fit put large opposite partial derivatives on them (the first e.d.r. "
        f"direction, {full.edr_eigenvalues[0] / full.gop_trace:.0%} of the GOP trace, is their difference) "
        "— with narrow intervals. That is why `feature_gradients` reduces by default.\n"
    )
    body = "\n".join(
        [
            section_header("15. Explaining a LightGBM ranker on MQ2008 with GPGL feature gradients"),
            intro,
            "Relevance = posterior mean of the RMS partial derivative of the score per feature SD, 95 % "
            "credible interval from 1000 posterior draws; e.d.r. loadings of the two leading GOP "
            "eigenvectors:\n",
            table,
            f"\nShare of the GOP trace in the first three e.d.r. directions: {shares}. Overlap of the top 10 "
            f"by relevance with the top 10 by split gain: {len(top_gp & top_gain)}/10.\n",
            unreduced,
            "Check against a known gradient: a Ridge scorer (alpha 10, fitted on Fold 1 train) explained on "
            f"the same documents, whose gradient is its coefficient vector — {known}. The reduction trades "
            "this bias on smooth models for robustness to near-duplicate features on tree ensembles.\n",
            "The intervals are the posterior's under the Taylor pseudo-likelihood: they express how well the "
            "sample pins down the smoothed gradient given the model, not the bias of a first-order expansion "
            "of a piecewise-constant score, nor the sensitivity to the settings (with 99.9 % of the variance "
            "instead of 99 % the first two features swap). Figure: `benchmarks/explain_mq2008.png`.\n",
        ]
    )
    print(body)
    if not args.quick:
        figure(result, top=15)
        write_results_section("explain_mq2008", body)


if __name__ == "__main__":
    main()
