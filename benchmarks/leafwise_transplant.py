"""Does depth-wise growth cost stochrank the synthetic XGBoost comparison? LightGBM's tuned trees on XGBoost.

On the generated data (``--dataset synthetic-nonlinear``), at the full preset's 30 configurations per
method, stochrank won on LightGBM trees and, with L2 in raw units, lost to ``rank:ndcg`` on XGBoost trees;
with L2 in documents' worth (``l2_documents`` on [0.1, 300], the current space) it won on both (on XGBoost
trees barely, p = 0.048); at 50 configurations every one of these is a tie (benchmarks/RESULTS.md, summary
footnotes 7, 9 and 13-16). The
bench's XGBoost space grows trees depth-wise (depth 6-10); LightGBM's grows them leaf-wise (at most
``num_leaves``, depth 6-10). At fixed settings on smaller generated data, stochrank scored the same on
LightGBM's and on XGBoost's leaf-wise trees (RESULTS.md, Quality levers). This script asks the same of
the tuned configurations, without a new search: each of the two configurations the 30-configuration
comparison selected on LightGBM trees (``sr-lgb``'s and ``lgb-lambdarank``'s, chosen on validation by the
bench) is grown by XGBoost leaf-wise (``grow_policy='lossguide'``, ``max_leaves`` = ``num_leaves``, the
same ``max_depth``, learning rate and ``l2_documents``, ``min_leaf_documents`` = ``min_data_in_leaf``:
documents' worth of curvature at the first tree, see :mod:`stochrank.bench.spaces`) and trained with both
XGBoost methods, each with its own knobs as that comparison selected them (``sr-xgb``'s training cut-off,
``rank:ndcg``'s pair method, pairs per document and normalisation).
``lgb-lambdarank``'s configuration is also grown depth-wise, XGBoost's default: grown so, any configuration
of the bench's LightGBM space is a point of its XGBoost space (the same ranges of learning rate, depth, L2
and leaf size), and where the depth limit allows no more than ``num_leaves`` leaves the two growths give
the same trees (the section says whether they do).

Every fit runs the bench's protocol (:func:`stochrank.bench.protocol.fit_run`: at most 1000 trees, early
stopping after 100 rounds on validation NDCG@5, seeds 0, 1, 2) on the same fold; test NDCG@5 per query,
seeds averaged, paired t and sign-flip randomization p-values. Nothing here is selected on test: the two
configurations were fixed by the comparison's validation selection before this script ran.

    python benchmarks/leafwise_transplant.py    # 18 fits, ~25 min on 2 cores; after the synthetic comparison

It writes the RESULTS.md section ``leafwise_transplant_l2_documents_300`` from the comparison of the
current space; the section ``leafwise_transplant`` (raw-unit L2, whose fits are gone) is kept because the
text cites it.

Fits are cached in ``bench_runs/leafwise-transplant``; the comparison's own fits are read from its cache
(the script stops with an error when that comparison has not run).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from _common import L2_SPACE, L2_SPACE_SECTION, REPO, cached_comparison, run_mean, write_results_section

from stochrank.bench.cache import RunCache
from stochrank.bench.protocol import Task, run_tasks
from stochrank.bench.report import pooled_per_query
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.stats import minimum_detectable_difference, paired_randomization, paired_t

COMPARED = "lgb-lambdarank,sr-lgb,xgb-ndcg,sr-xgb"
COMPARISON = ("--dataset", "synthetic-nonlinear", "--methods", COMPARED, "--threads", "1")
# Whose selected LightGBM configuration XGBoost grows, and how; grown depth-wise, a configuration of the
# bench's LightGBM space is a point of its XGBoost space.
GROWTHS = (("sr-lgb", "lossguide"), ("lgb-lambdarank", "lossguide"), ("lgb-lambdarank", "depthwise"))
XGBOOST_METHODS = ("sr-xgb", "xgb-ndcg")
CACHE = REPO / "bench_runs" / "leafwise-transplant"


def on_xgboost(lightgbm: dict[str, Any], policy: str) -> dict[str, Any]:
    """XGBoost's booster parameters for a LightGBM configuration of the bench's space.

    ``policy='lossguide'`` grows at most ``num_leaves`` leaves leaf-wise; ``'depthwise'`` gives exactly a
    point of the bench's own XGBoost space (XGBoost's default growth, no leaf limit).
    """
    booster = {
        "learning_rate": lightgbm["learning_rate"],
        "max_depth": lightgbm["max_depth"],
        "l2_documents": lightgbm["l2_documents"],
        "min_leaf_documents": lightgbm["min_data_in_leaf"],
    }
    if policy == "lossguide":
        booster.update(grow_policy="lossguide", max_leaves=lightgbm["num_leaves"])
    return booster


def main() -> None:
    """Train the transplanted configurations, print the table and write it to RESULTS.md."""
    protocol, methods, out, outcome = cached_comparison(COMPARISON)
    (fold,) = protocol.folds
    label = protocol.target.label
    selected = {m: outcome.selected[m, fold] for m in methods}
    tasks = [
        Task(method, fold, i, {"booster": on_xgboost(selected[source][0].config["booster"], policy),
                               "own": selected[method][0].config["own"]}, seed)
        for i, (source, policy) in enumerate(GROWTHS)
        for method in XGBOOST_METHODS
        for seed in protocol.seeds
    ]  # fmt: skip
    runs, _ = run_tasks(tasks, dataclasses.replace(protocol, jobs=2), RunCache(CACHE, protocol))
    grown = {
        (growth, method): [r for r in runs if r.method == method and r.config_index == i]
        for i, growth in enumerate(GROWTHS)
        for method in XGBOOST_METHODS
    }
    per_query = {key: pooled_per_query(group, protocol.folds)[label] for key, group in grown.items()}
    bench = {m: pooled_per_query(selected[m], protocol.folds)[label] for m in methods}

    rows = []
    for source, policy in GROWTHS:
        trees = selected[source][0].config["booster"]
        for method in XGBOOST_METHODS:
            group = grown[(source, policy), method]
            leaves = f"{trees['num_leaves']} leaves, " if policy == "lossguide" else ""
            depth = f"depth {trees['max_depth']}, lr {trees['learning_rate']:.3f}"
            rows.append([
                f"`{source}`'s, {policy}: {leaves}{depth}",
                f"`{method}`", f"{run_mean(group, label):.4f}", f"{np.mean([r.vali for r in group]):.4f}",
                f"{np.mean([r.best_iteration for r in group]):.0f}",
                f"{np.nanmean(per_query[(source, policy), method] - bench[method]):+.4f}",
            ])  # fmt: skip
    for method in (*XGBOOST_METHODS, "sr-lgb", "lgb-lambdarank"):
        group = selected[method]
        rows.append([
            "the comparison's selection (depth-wise on XGBoost)" if method in XGBOOST_METHODS
            else "the comparison's selection (LightGBM)",
            f"`{method}`", f"{run_mean(group, label):.4f}", f"{np.mean([r.vali for r in group]):.4f}",
            f"{np.mean([r.best_iteration for r in group]):.0f}", "",
        ])  # fmt: skip
    header = ["LightGBM configuration grown by XGBoost", "method", f"test {label}", f"vali {label}",
              "trees", "Δ vs its depth-wise selection"]  # fmt: skip
    pair_rows = []
    comparisons = [
        (
            f"`sr-xgb` − `xgb-ndcg`, `{s}`'s configuration, {p}",
            per_query[(s, p), "sr-xgb"],
            per_query[(s, p), "xgb-ndcg"],
        )
        for s, p in GROWTHS
    ]
    comparisons += [
        (
            f"`sr-xgb` with `{s}`'s configuration, {p} − `xgb-ndcg` (tuned)",
            per_query[(s, p), "sr-xgb"],
            bench["xgb-ndcg"],
        )
        for s, p in GROWTHS
    ]
    comparisons += [
        (
            f"`sr-xgb` with `sr-lgb`'s configuration, lossguide − `{ref}` (tuned)",
            per_query[GROWTHS[0], "sr-xgb"],
            bench[ref],
        )
        for ref in ("sr-lgb", "lgb-lambdarank")
    ]
    for name, a, b in comparisons:
        keep = ~(np.isnan(a) | np.isnan(b))
        pair_rows.append([
            name, f"{np.mean(a[keep] - b[keep]):+.4f}", f"{paired_t(a, b):.3g}",
            f"{paired_randomization(a, b):.3g}", f"{minimum_detectable_difference(a, b):.4f}",
        ])  # fmt: skip
    pair_header = ["comparison (per query, seeds averaged)", f"Δ {label}", "p (t)", "p (rand.)", "MDD"]
    # Validation alone choosing among each method's own selection and the grown configurations.
    chosen = {}
    for method in XGBOOST_METHODS:
        candidates = [("its own search's selection", selected[method], bench[method])]
        # Last growth first: where two growths give the same trees, the point of the bench's own space.
        candidates += [
            (f"`{s}`'s configuration, {p}", grown[(s, p), method], per_query[(s, p), method])
            for s, p in reversed(GROWTHS)
        ]
        chosen[method] = max(candidates, key=lambda c: float(np.mean([r.vali for r in c[1]])))
    a, b = chosen["sr-xgb"][2], chosen["xgb-ndcg"][2]
    keep = ~(np.isnan(a) | np.isnan(b))
    by_validation = (
        "Were these configurations added to each XGBoost method's candidates, validation (the mean over "
        f"the seeds) would keep {chosen['sr-xgb'][0]} for `sr-xgb` and {chosen['xgb-ndcg'][0]} for "
        f"`xgb-ndcg`: test {label} {run_mean(chosen['sr-xgb'][1], label):.4f} vs "
        f"{run_mean(chosen['xgb-ndcg'][1], label):.4f}, "
        f"Δ {np.mean(a[keep] - b[keep]):+.4f} (p {paired_t(a, b):.3g} / {paired_randomization(a, b):.3g})."
    )
    same = [
        f"`{source}`'s depth {c['max_depth']} allows {2 ** c['max_depth']} leaves, no more than its "
        f"{c['num_leaves']}, so its two growths give the same trees"
        for source, policy in GROWTHS
        if policy == "depthwise"
        for c in [selected[source][0].config["booster"]]
        if 2 ** c["max_depth"] <= c["num_leaves"]
    ]
    same_trees = "; ".join(same) if same else "the two growths limit the leaves differently"
    body = "\n\n".join(
        [
            section_header(f"XGBoost trees with LightGBM's tuned configurations, {L2_SPACE} (issue 9)"),
            f"The configurations the {protocol.budget}-configuration synthetic comparison "
            f"(`bench_runs/{out.name}`, the full preset's budget) selected on "
            "LightGBM trees, grown by XGBoost (`lossguide`: leaf-wise, `max_leaves` = `num_leaves`; "
            "`depthwise`: XGBoost's default growth, a point of the bench's XGBoost space; "
            f"{same_trees}; the same depth limit, learning rate and L2, `min_leaf_documents` = "
            "`min_data_in_leaf`), each XGBoost method with its own knobs as the comparison selected them "
            f"(the two objectives grow their own trees from one configuration); the bench's protocol, seeds "
            f"{', '.join(map(str, protocol.seeds))}, {int(np.sum(~np.isnan(bench['sr-xgb'])))} scoring test "
            "queries. The Δ column compares each fit with the same method's depth-wise selection of the "
            "comparison, per query. The grown configurations were added after the comparison's test figures "
            "were seen: an exploratory check, not a tuned verdict.",
            markdown_table(header, rows, "llrrrr"),
            "Paired comparisons (raw p-values, not corrected for the rows of the table):",
            markdown_table(pair_header, pair_rows, "lrrrr"),
            by_validation,
        ]
    )
    print(body)
    write_results_section(f"leafwise_transplant{L2_SPACE_SECTION}", body)


if __name__ == "__main__":
    main()
