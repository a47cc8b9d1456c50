"""Newton leaves (the default): the booster output, its invariances and the settings it refuses.

The curvature itself is checked coordinate by coordinate against the brute-force 1-D problem in
``test_gradient_exact.py``; here the objective-level consequences: a non-negative Hessian normalised to
mean 1, every document's Newton step bounded by its noise scale, zero for queries that cannot change, and
the exact sigma-equivariance that makes the whole training trajectory scale with sigma.
"""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import numpy.testing as npt
import pytest

import stochrank
from stochrank.catboost import CatBoostRanker, native_loss

from .test_boosters import make_queries


def _queries():
    rng = np.random.default_rng(0)
    group = np.array([6, 1, 9, 4, 12, 5])
    labels = rng.integers(0, 3, group.sum()).astype(np.float64)
    labels[7:16] = 1.0  # a query of equal labels: its NDCG cannot change
    scores = 0.3 * rng.standard_normal(group.sum())
    return group, labels, scores


@pytest.mark.parametrize("metric", ["ndcg", "err", "mrr"])
def test_booster_output_is_a_bounded_newton_step(metric):
    group, labels, scores = _queries()
    make = {"ndcg": stochrank.ndcg(3, seed=4), "err": stochrank.err(3, max_grade=2, seed=4)}
    obj = make.get(metric, stochrank.mrr(seed=4))
    grad, hess = obj(labels, scores, None, group)  # LGBMRanker's call form
    assert np.all(hess >= 0.0)
    assert abs(hess[hess > 0].mean() - 1.0) < 1e-12  # per-document units for min_child_weight & co
    sizes = np.repeat(group, group)
    s_d = np.sqrt(sizes / np.maximum(sizes - 1.0, 1.0))  # sigma = 1
    assert np.all(np.abs(grad) <= s_d * hess * (1 + 1e-12) + 1e-300)  # every leaf is at most one s_d
    assert np.all(grad[6:16] == 0.0) and np.all(hess[6:16] == 0.0)  # one document; equal labels
    ascent, curvature = obj.derivatives(scores, labels, group)
    kappa = 1.0 / curvature[curvature > 0].mean()
    npt.assert_allclose(grad, -kappa * ascent, rtol=1e-12, atol=1e-300)
    npt.assert_allclose(hess, kappa * curvature, rtol=1e-12, atol=1e-300)


def test_newton_steps_scale_with_sigma():
    """g(f, sigma) = g(f/sigma, 1)/sigma and h ~ 1/sigma^2: the Newton step at sigma f is sigma times the
    one at f."""
    group, labels, scores = _queries()
    steps = {}
    for sigma in (0.5, 2.0):
        grad, hess = stochrank.ndcg(3, sigma=sigma, seed=4)(labels, scores * sigma, None, group)
        with np.errstate(invalid="ignore", divide="ignore"):
            steps[sigma] = np.where(hess > 0, -grad / hess, 0.0)
    npt.assert_allclose(steps[2.0], 4.0 * steps[0.5], rtol=1e-10, atol=1e-12)


def test_training_trajectory_scales_with_sigma():
    """From zero scores without L2, the models for two sigmas are the same trees with leaves in the ratio of
    the sigmas: sigma does not change what Newton leaves learn (unit Hessians do depend on it)."""
    X, y, sizes, _ = make_queries(n_queries=40, seed=3)
    params = {"learning_rate": 0.3, "num_leaves": 7, "min_data_in_leaf": 5, "lambda_l2": 0.0, "verbose": -1}
    params.update(num_threads=1, deterministic=True, force_row_wise=True, min_sum_hessian_in_leaf=0.0)
    preds = {}
    for sigma in (1.0, 3.0):
        obj = stochrank.ndcg(k=5, sigma=sigma, seed=1)
        preds[sigma] = lgb.train({**params, "objective": obj}, lgb.Dataset(X, y, group=sizes), 8).predict(X)
    npt.assert_allclose(preds[3.0], 3.0 * preds[1.0], rtol=1e-4, atol=1e-6)  # float32 leaves in LightGBM


def test_settings_newton_leaves_refuse():
    with pytest.raises(ValueError, match=r"hessian='newton'\) takes no scale-free acceleration.*sfa=0"):
        stochrank.ndcg(k=5, sfa=0.5)
    with pytest.raises(ValueError, match=r"SGLB's Langevin dynamics are defined for unit Hessians"):
        stochrank.ndcg(k=5, hessian="newton", sglb=stochrank.SGLB(learning_rate=0.1))
    with pytest.raises(ValueError, match=r"'hessian' parameter of stochrank\.err must be one of"):
        stochrank.err(k=5, hessian="exact")
    assert stochrank.ndcg(k=5, sglb=stochrank.SGLB(learning_rate=0.1)).smoothing.hessian == "unit"
    assert stochrank.ndcg(k=5).smoothing.hessian == "newton"
    assert (
        stochrank.ndcg(k=5).smoothing.sfa == 0.0 and stochrank.ndcg(k=5, hessian="unit").smoothing.sfa == 1.0
    )
    assert stochrank.lso(k=5).smoothing.hessian == "unit"  # its kernel has no curvature


def test_catboost_has_no_newton_leaves():
    """CatBoost's StochasticRank is gradient-leaf only: its loss string needs hessian='unit', and
    CatBoostRanker(engine='auto') trains Newton objectives with stochrank's engine on CatBoost trees."""
    with pytest.raises(ValueError, match=r"no Newton.*hessian='unit'"):
        native_loss(stochrank.ndcg(k=5))
    assert native_loss(stochrank.ndcg(k=5, hessian="unit")).startswith("StochasticRank:metric=NDCG;top=5")
    X, y, _, qid = make_queries(n_queries=12)
    ranker = CatBoostRanker(stochrank.ndcg(k=5), iterations=3, depth=2, thread_count=1, verbose=False)
    ranker.fit(X, y, group_id=qid)
    assert ranker.engine_ == "stochrank"
