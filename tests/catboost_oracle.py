"""CatBoost's built-in ``StochasticRank`` derivative (Der1) for one query, read off a one-tree model.

Test helper (not part of the package). CatBoost exposes no API for a loss's derivatives, but with

* ``iterations=1``, ``learning_rate=1``, ``leaf_estimation_method=Gradient`` (the only one StochasticRank
  allows) and one leaf-estimation iteration,
* ``baseline=f`` (the approxes the derivative is taken at), ``boost_from_average=False``,
* ``bootstrap_type='No'`` (every document in every leaf sum), ``random_strength=0``,
* a tree that puts each document in a leaf of its own,

the fitted leaf of document j is ``Der1[j] / (1 + l2_leaf_reg)`` (leaf rule ``sum Der1 / (sum W +
l2_leaf_reg * sum W_all / N_all)`` with unit weights), so ``Der1 = leaf * (1 + l2_leaf_reg)``. Der1 is the
*ascent* direction (about +d E[metric] / d f) after CatBoost's mean removal and SFA projection; the leaf
derivatives come from a Monte-Carlo draw of ``num_estimations`` samples (independent of the draw used for
the split search, so the tree structure does not depend on it).

Two ways to isolate documents (they agree within Monte-Carlo noise; tests/test_catboost_parity.py checks):

``encoding='onehot'``
    The method of the notes (catboost-stochasticrank.md §9): for each document j, one fit of a depth-1
    tree on the single feature 1{row == j}. n fits.
``encoding='bits'``
    One fit of a depth-ceil(log2 n) symmetric tree on the binary digits of the row index: each level
    must split on a different digit, so every document lands in its own leaf. 1 fit, about n times
    faster. Checked at run time with ``calc_leaf_indexes``.

The predictions are read from a Pool *without* baseline (``predict`` on a Pool with baseline adds it).
Approxes and targets are stored as float32 inside CatBoost; pass float32-representable values to
compare at full precision. Build ``loss`` with ``stochrank.catboost.native_loss(objective)`` (the one
mapping from stochrank objectives to CatBoost loss strings).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["catboost_der1"]


def _params(loss: str, depth: int, seed: int, l2_leaf_reg: float) -> dict[str, Any]:
    return {
        "loss_function": loss,
        "iterations": 1,
        "depth": depth,
        "learning_rate": 1.0,
        "l2_leaf_reg": l2_leaf_reg,
        "leaf_estimation_iterations": 1,
        "bootstrap_type": "No",
        "random_strength": 0,
        "boost_from_average": False,
        "thread_count": 1,
        "random_seed": seed,
        "verbose": False,
        "allow_writing_files": False,
    }


def catboost_der1(
    scores: Any,
    labels: Any,
    loss: str,
    *,
    seed: int = 0,
    l2_leaf_reg: float = 1e-6,
    encoding: str = "bits",
    docs: Any = None,
) -> np.ndarray:
    """CatBoost's Der1 (ascent direction) of ``loss`` for one query with approxes ``scores``.

    ``docs`` (onehot only) restricts the fits to these documents; the others are NaN.
    """
    from catboost import CatBoost, Pool

    f = np.asarray(scores, dtype=np.float64)
    r = np.asarray(labels, dtype=np.float64)
    n = f.size
    group = np.zeros(n, dtype=np.int64)
    out = np.full(n, np.nan)
    if encoding == "bits":
        depth = max(1, math.ceil(math.log2(n)))
        X = ((np.arange(n)[:, None] >> np.arange(depth)[None, :]) & 1).astype(np.float64)
        model = CatBoost(_params(loss, depth, seed, l2_leaf_reg))
        model.fit(Pool(X, label=r, group_id=group, baseline=f))
        plain = Pool(X, label=r, group_id=group)
        leaves = np.asarray(model.calc_leaf_indexes(plain)).reshape(-1)
        if np.unique(leaves).size != n:
            raise AssertionError(f"documents share leaves ({leaves}); the bit encoding did not isolate them")
        out[:] = model.predict(plain, prediction_type="RawFormulaVal")
    elif encoding == "onehot":
        for j in range(n) if docs is None else docs:
            X = np.zeros((n, 1))
            X[j, 0] = 1.0
            model = CatBoost(_params(loss, 1, seed, l2_leaf_reg))
            model.fit(Pool(X, label=r, group_id=group, baseline=f))
            out[j] = model.predict(Pool(X, label=r, group_id=group), prediction_type="RawFormulaVal")[j]
    else:
        raise ValueError(f"encoding must be 'bits' or 'onehot', got {encoding!r}")
    return out * (1.0 + l2_leaf_reg)
