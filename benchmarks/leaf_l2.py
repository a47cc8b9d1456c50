"""XGBoost's L2 leaf regularisation against each objective's Hessian scale (issue 9, fixed settings).

An XGBoost leaf is ``-G / (H + reg_lambda)`` (sums over its documents), so ``reg_lambda`` (default 1) is,
like ``min_child_weight``, measured in Hessian units. ``rank:ndcg``'s Hessians average about 0.08 per
document at the first tree on the generated data of "Quality levers", stochrank's 1 (normalised): the
default ``reg_lambda = 1`` shrinks a ``rank:ndcg`` leaf as about 13 documents' worth of curvature would, a
stochrank leaf as one document's. At learning rate 0.05 with 600 trees that is a candidate cause of
``rank:ndcg``'s slow pace ("Quality levers: antithetic noise draws": it runs to the tree cap at 0.05 and
at 0.1). LightGBM's ``lambda_l2`` is in the same units, and ``lambdarank``'s Hessians are smaller still.
The second table gives each booster's mean Hessian per document at the first tree for LambdaMART and
stochrank on MQ2008 and on the generated data, and what the bench's L2 range [0.1, 10] meant in documents'
worth while it was drawn in raw units; since then the bench draws ``l2_documents`` (on [0.1, 300] since
commit 49c7471, on [0.1, 10] before) and converts it per method (:mod:`stochrank.bench.spaces`).

Rows, on the generated data of ``quality_levers.py`` (2 data folds × 2 seeds, XGBoost depth 6, learning
rate 0.05, ≤ 600 trees, early stopping 60 on validation NDCG@5): ``rank:ndcg`` and stochrank's defaults at
XGBoost's ``reg_lambda = 1``; ``rank:ndcg`` at one document's worth of its own curvature (its mean Hessian
per document at the first tree, measured on data fold 1 with
:func:`stochrank.bench.trainers.xgboost_hessian_per_document`) and at 0; stochrank's defaults at the
documents' worth that ``reg_lambda = 1`` is for ``rank:ndcg`` (1 / that mean). The first two rows are
"Quality levers"' fits (same cache keys).

Measured (2026-11-27, RESULTS.md): ``rank:ndcg`` at one document's worth gains +0.0017 test NDCG@5 (p =
0.05), level with stochrank's defaults; at 0 +0.0007 (p = 0.41); stochrank at 13 documents' worth -0.0007
(p = 0.25). The unit mismatch at XGBoost's default may have favoured stochrank by 0.0007-0.0017 here (not
established); every ``rank:ndcg`` fit ran to the 600-tree cap either way.

    nice -n 15 python benchmarks/leaf_l2.py    # RESULTS.md (~15 min cold on 2 shared cores)
"""

from __future__ import annotations

import time

from _common import write_results_section
from quality_levers import (
    LEARNING_RATE,
    ROWS,
    SYNTHETIC_SIZES,
    TREE,
    Row,
    booster_table,
    cached_fits_footer,
    lambdamart,
    load,
    sr,
    synthetic_hessian_per_document,
)

import stochrank
from stochrank.bench.protocol import load_fold
from stochrank.bench.results import markdown_table, section_header
from stochrank.bench.spaces import L2
from stochrank.bench.trainers import lightgbm_hessian_per_document, xgboost_hessian_per_document


def hessian_scale_table() -> str:
    """Each booster's mean Hessian per document at the first tree for LambdaMART and stochrank, both data."""
    import xgboost as xgb

    splits = {
        "MQ2008": load_fold("mq2008", 1, None, None, None).train,
        "generated": load("synthetic", 1).train,
    }
    objectives = [
        ("LightGBM", "`lambdarank` (its defaults)", {"objective": "lambdarank"}, None),
        ("LightGBM", "`lambdarank`, lambdarank_norm off",
         {"objective": "lambdarank", "lambdarank_norm": False}, None),
        ("LightGBM", "stochrank.ndcg(k=5)", {}, stochrank.ndcg(k=5)),
        ("XGBoost", "`rank:ndcg` (its defaults)", {"objective": "rank:ndcg"}, None),
        ("XGBoost", "stochrank.ndcg(k=5)",
         {"objective": "rank:ndcg", "base_score": 0.0}, stochrank.ndcg(k=5)),
    ]  # fmt: skip
    rows = []
    for booster, name, params, objective in objectives:
        cells = [booster, name]
        for split in splits.values():
            if booster == "LightGBM":
                full = {**TREE["lightgbm"], "verbose": -1, "num_threads": 1, **params}
                mean = lightgbm_hessian_per_document(full, split, objective)
            else:
                full = {**TREE["xgboost"], "tree_method": "hist", "nthread": 1, **params}
                train = xgb.DMatrix(split.X, split.y, group=split.group, nthread=1)
                mean = xgboost_hessian_per_document(full, train, objective)
            cells += [f"{mean:.3f}", f"{L2.low / mean:.1f}–{L2.high / mean:.0f}"]
        rows.append(cells)
    header = ["booster", "objective"]
    for data in splits:
        header += [
            f"{data}: Hessian per document",
            f"{data}: raw L2 {L2.low:g}–{L2.high:g} in documents' worth",
        ]
    return markdown_table(header, rows, align="llrrrr")


def rank_ndcg_hessian_per_document() -> float:
    """``rank:ndcg``'s mean Hessian per document at the first tree, rounded to 3 significant digits."""
    return float(f"{synthetic_hessian_per_document({'objective': 'rank:ndcg'}):.3g}")


def rows(hessian: float) -> list[Row]:
    """The table's rows for ``rank:ndcg``'s mean Hessian per document ``hessian``."""
    documents = round(1.0 / hessian)
    return [
        ROWS[0],
        ROWS[1],
        Row(
            f"LambdaMART, reg_lambda = {hessian:g} (one document's worth of its curvature)",
            lambdamart,
            {"xgboost": {"reg_lambda": hessian}},
        ),
        Row("LambdaMART, reg_lambda = 0", lambdamart, {"xgboost": {"reg_lambda": 0.0}}),
        Row(
            f"defaults, reg_lambda = {documents} (LambdaMART's default, in documents' worth)",
            sr(),
            {"xgboost": {"reg_lambda": float(documents)}},
        ),
    ]


def main() -> None:
    start = time.perf_counter()
    hessian = rank_ndcg_hessian_per_document()
    table = booster_table("xgboost", "synthetic", [1, 2], [0, 1], LEARNING_RATE, 600, 60, rows(hessian))
    scales = hessian_scale_table()
    minutes = (time.perf_counter() - start) / 60
    body = "\n\n".join(
        [
            section_header("XGBoost's L2 leaf regularisation in documents' worth (issue 9, fixed settings)"),
            f"SYNTHETIC (`nonlinear_mslr`, {' / '.join(map(str, SYNTHETIC_SIZES))} train / vali / test "
            "queries), data folds 1, 2 × "
            f"seeds 0, 1; XGBoost depth 6, learning rate {LEARNING_RATE}, ≤ 600 trees, early stopping 60 "
            "rounds on vali NDCG@5, 1 thread per fit. An XGBoost leaf is -G / (H + reg_lambda), so "
            f"`reg_lambda` counts Hessian units: `rank:ndcg`'s mean Hessian per document at the first tree "
            f"is {hessian:g} here (data fold 1), stochrank's 1. p-values two-sided, paired t / sign-flip "
            "randomization, not corrected for the number of rows.",
            table,
            cached_fits_footer(minutes),
            "Each booster's mean Hessian per document at the first tree (the root's, fold 1's training "
            "queries; stochrank's Hessians are normalised to mean 1 over the documents "
            "that have curvature, and MQ2008's queries without a relevant document have none), and the "
            "bench's former raw L2 range [0.1, 10] in documents' worth of each objective's curvature. The "
            "bench now draws `l2_documents` (on [0.1, 300]; on [0.1, 10] until commit 49c7471) and passes "
            "lambda_l2 / reg_lambda = l2_documents × this mean per method (measured per fit, with the fit's "
            "own parameters):",
            scales,
        ]
    )
    print("\n" + body)
    write_results_section("leaf_l2", body)


if __name__ == "__main__":
    main()
