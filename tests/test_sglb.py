"""SGLB on LightGBM and XGBoost: the trained booster replays CatBoost's recursion exactly.

CatBoost's SGLB (train.cpp): before every iteration t >= 1 all scores are multiplied by s_t, then a tree
is fitted to the gradient at the shrunk scores plus Langevin noise c*xi, c = sqrt(2/(lr*T)). stochrank
cannot shrink the trees a booster holds; it boosts F_t / C_t instead (C_t = prod_{i<=t} s_i). The test
rebuilds F_t from the recursion using the booster's own trees and checks that every leaf of tree t is
exactly the gradient-step leaf prescribed at F_t — so a wrong shrink factor, a wrong call index or a
wrong noise stream fails it.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb

import stochrank
from stochrank.kernels import langevin_noise, query_keys


def make_data(seed=0, n_queries=30):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 10, n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, 4))
    y = np.clip(np.round(X[:, 0] + 0.7 * rng.normal(size=n) + 1), 0, 3)
    return X, y, sizes


def replay_and_check(tree_outputs, leaves, obj, sglb, y, sizes, lr, l2, score_rtol=1e-9):
    """tree_outputs[t]: the booster's contribution of tree t per row; leaves[t]: its leaf index per row.

    ``score_rtol``: XGBoost keeps leaves and margins in float32, LightGBM in float64.
    """
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    rate = sglb.noise_rate(lr)
    F = np.zeros(y.size)  # SGLB scores after the previous iteration
    C = 1.0
    booster_total = np.zeros(y.size)
    for t, (b_t, leaf_t) in enumerate(zip(tree_outputs, leaves, strict=True)):
        s = sglb.shrink(t, lr)
        F = s * F
        C *= s
        # the ranking the booster holds is F / C
        np.testing.assert_allclose(booster_total * C, F, rtol=score_rtol, atol=score_rtol)
        ascent = obj.gradient(F, y, sizes, call=t)
        keys = query_keys(y.astype(np.float64), offsets)
        step = ascent + rate * langevin_noise(offsets, keys, obj.seed, t)  # minus the minimisation gradient
        for leaf in np.unique(leaf_t):
            rows = leaf_t == leaf
            # LightGBM/XGBoost leaf with hess 1: -sum(grad)/(count + l2), times lr; grads are cast to float32
            expected = lr * step[rows].sum() / (rows.sum() + l2)
            np.testing.assert_allclose(b_t[rows] * C, expected, rtol=2e-5, atol=1e-7)
        F = F + C * b_t
        booster_total += b_t
    return F, C


@pytest.mark.parametrize(("mode", "rate"), [("constant", 0.4), ("decreasing", 0.3)])
def test_lightgbm_booster_follows_the_sglb_recursion(mode, rate):
    X, y, sizes = make_data()
    lr, l2, rounds = 0.5, 2.0, 12
    sglb = stochrank.SGLB(temperature=50.0, shrink_rate=rate, shrink_mode=mode)
    obj = stochrank.ndcg(k=3, seed=11, sglb=sglb)
    params = {"objective": obj, "learning_rate": lr, "lambda_l2": l2, "num_leaves": 6, "min_data_in_leaf": 3,
              "verbose": -1, "num_threads": 1}  # fmt: skip
    booster = lgb.train(params, lgb.Dataset(X, y, group=sizes), rounds)
    outputs = [booster.predict(X, start_iteration=t, num_iteration=1) for t in range(rounds)]
    leaves = [
        booster.predict(X, start_iteration=t, num_iteration=1, pred_leaf=True).ravel() for t in range(rounds)
    ]
    F, C = replay_and_check(outputs, leaves, obj, sglb, y, sizes, lr, l2)
    # final model = F / C: same ranking as the SGLB scores
    np.testing.assert_allclose(booster.predict(X) * C, F, rtol=1e-9, atol=1e-9)
    assert C < 0.5  # shrinkage really happened


def test_xgboost_booster_follows_the_sglb_recursion():
    X, y, sizes = make_data(seed=1)
    lr, l2, rounds = 0.5, 1.0, 10
    sglb = stochrank.SGLB(temperature=20.0, shrink_rate=0.5, learning_rate=lr)
    obj = stochrank.err(max_grade=3, seed=4, sglb=sglb)
    dtrain = xgb.DMatrix(X, y, group=sizes)
    params = {"eta": lr, "reg_lambda": l2, "max_depth": 3, "min_child_weight": 0, "base_score": 0.0,
              "nthread": 1, "tree_method": "exact"}  # fmt: skip
    booster = xgb.train(params, dtrain, rounds, obj=obj)
    dm = xgb.DMatrix(X)
    trees = [booster[t : t + 1] for t in range(rounds)]  # base_score is 0, so a slice is one tree
    outputs = [tree.predict(dm, output_margin=True) for tree in trees]
    leaves = [tree.predict(dm, pred_leaf=True).ravel() for tree in trees]
    replay_and_check(outputs, leaves, obj, sglb, y, sizes, lr, l2, score_rtol=1e-6)


def test_sglb_learning_rate_must_come_from_the_booster_or_be_given():
    X, y, sizes = make_data(n_queries=20)
    obj = stochrank.ndcg(sglb=stochrank.SGLB())
    with pytest.raises(ValueError, match="learning_rate=<the same value"):
        xgb.train({"base_score": 0.0}, xgb.DMatrix(X, y, group=sizes), 1, obj=obj)
    with pytest.raises(ValueError, match=r"LGBMRanker|lightgbm-sklearn"):
        lgb.LGBMRanker(objective=obj, n_estimators=1, verbose=-1).fit(X, y, group=sizes)
    clash = stochrank.ndcg(sglb=stochrank.SGLB(learning_rate=0.1))
    with pytest.raises(ValueError, match=r"disagrees with the booster's learning_rate=0\.5"):
        lgb.train(
            {"objective": clash, "learning_rate": 0.5, "verbose": -1}, lgb.Dataset(X, y, group=sizes), 1
        )


def test_sglb_parameter_checks_match_catboost():
    assert stochrank.SGLB().rate == 1e-3 and stochrank.SGLB(shrink_mode="decreasing").rate == 1e-2
    assert stochrank.SGLB(temperature=8.0).noise_rate(0.25) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="temperature"):
        stochrank.SGLB(temperature=0)
    with pytest.raises(ValueError, match="shrink_rate \\* learning_rate < 1"):
        stochrank.SGLB(shrink_rate=20.0, learning_rate=0.1)
    with pytest.raises(ValueError, match="0 <= shrink_rate < 1"):
        stochrank.SGLB(shrink_rate=1.0, shrink_mode="decreasing")
    with pytest.raises(ValueError, match="shrink_mode"):
        stochrank.SGLB(shrink_mode="Constant")


def test_sglb_stops_clearly_before_the_rescaled_model_leaves_float32():
    X, y, sizes = make_data(n_queries=20)
    obj = stochrank.ndcg(k=3, sglb=stochrank.SGLB(temperature=1e3, shrink_rate=0.9))
    params = {"objective": obj, "learning_rate": 1.0, "verbose": -1, "num_threads": 1}
    with pytest.raises(ValueError, match=r"overflow float32.*smaller shrink_rate"):
        lgb.train(params, lgb.Dataset(X, y, group=sizes), 40)  # 0.1**25 < 1e-25
