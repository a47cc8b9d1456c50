"""AUC, MAP@k and precision@k objectives (issue 15): exactness of the kernels against brute force, the fast
Gauss transform against the exact O(n^2) sum and its stated bound, the metric ``stochrank.metrics.auc``, and
the objectives' parameters, errors and booster support. Unbiasedness against finite differences of the
smoothed metric is in ``tests/test_gradient_unbiased.py``.
"""

from __future__ import annotations

import copy
import pickle

import lightgbm as lgb
import numpy as np
import numpy.testing as npt
import pytest
import xgboost as xgb
from sklearn.metrics import roc_auc_score

import stochrank
from stochrank.kernels import bipartite_query, ccs_query
from stochrank.kernels.gauss import ERROR_BOUND, gauss_sum
from stochrank.objectives import Precision

from .naive import (
    naive_ap_metric,
    naive_auc_metric,
    naive_ccs_metric_query,
    naive_gauss_sum,
    naive_order,
    naive_truncation,
)
from .test_boosters import lgb_train, make_queries

SIGMAS = (0.3, 1.0, 2.5)


# FAST GAUSS TRANSFORM =============================================================================


def _gauss_case(rng, n_src, n_tgt, spread, s):
    x = -np.sort(-rng.standard_normal(n_src) * spread)
    w_above = rng.random(n_src) * rng.choice([-1.0, 1.0])
    w_below = rng.random(n_src) * rng.choice([-1.0, 1.0])
    m = rng.standard_normal(n_tgt) * spread
    split = rng.integers(0, n_src + 1, n_tgt)
    return x, w_above, w_below, m, split


@pytest.mark.parametrize(
    ("n_src", "spread", "s"),
    [(5, 1.0, 1.0), (60, 0.05, 1.0), (300, 0.5, 0.3), (300, 1.0, 1.0), (200, 40.0, 1.0), (500, 3.0, 0.7)],
)
def test_gauss_sum_within_its_bound_of_the_exact_sum(n_src, spread, s):
    """Dense scores (every source in a few boxes: the Hermite expansion with split prefix moments), spread
    ones (direct sums and dropped far boxes), both sides; error <= ERROR_BOUND * sum |w| (module docs)."""
    rng = np.random.default_rng(n_src)
    x, w_above, w_below, m, split = _gauss_case(rng, n_src, 40, spread, s)
    bound = ERROR_BOUND * np.maximum(np.abs(w_above), np.abs(w_below)).sum()
    for two_sided in (True, False):
        out = np.full(m.size, np.nan)
        gauss_sum(x, w_above, w_below, m, split, s, two_sided, out)
        exact = naive_gauss_sum(x, w_above if two_sided else w_below, w_below, m, split, s)
        assert np.max(np.abs(out - exact)) <= bound, (two_sided, np.max(np.abs(out - exact)), bound)
    # the comparison has power: the sums are far larger than the bound
    assert np.max(np.abs(exact)) > 1e6 * bound


def test_gauss_sum_tied_and_empty_sources():
    rng = np.random.default_rng(3)
    x = -np.sort(-np.round(rng.standard_normal(100)))  # many exact ties: boxes of equal scores
    w = rng.random(100)
    m = np.array([-1.0, 0.0, 0.5, 3.0])
    split = np.array([0, 50, 100, 20])
    out = np.empty(4)
    gauss_sum(x, w, w[::-1].copy(), m, split, 1.0, True, out)
    exact = naive_gauss_sum(x, w, w[::-1], m, split, 1.0)
    assert np.max(np.abs(out - exact)) <= ERROR_BOUND * w.sum()
    gauss_sum(np.zeros(0), np.zeros(0), np.zeros(0), m, split, 1.0, True, out)
    npt.assert_array_equal(out, 0.0)


# CCS KERNELS: ONE DRAW, EVERY COORDINATE ===========================================================


def _map_k_values(n):
    return [0, -1, 1, 2, max(1, n // 2), n - 1, n, n + 3]


def _binary_case(rng, n):
    while True:
        rel = rng.random(n) < rng.choice([0.2, 0.5, 0.8])
        if rel.any() and not rel.all():
            return rng.integers(-2, 3, n).astype(np.float64), rng.standard_normal(n), rel


def _check_bipartite(a, z, rel, is_map, k, sigma, rng):
    n = a.size
    before = [a.copy(), z.copy(), rel.copy()]
    out0 = rng.standard_normal(n)
    out, curv = out0.copy(), np.zeros(n)
    bipartite_query(a, z, rel, is_map, k, sigma, out, curv)
    for x, y in zip((a, z, rel), before, strict=True):
        npt.assert_array_equal(x, y)
    alone = np.zeros(n)
    bipartite_query(a, z, rel, is_map, k, sigma, alone, np.empty(0))
    npt.assert_allclose(out, out0 + alone, rtol=1e-15, atol=1e-15)  # adds, and Newton changes nothing
    with_curv = np.zeros(n)
    bipartite_query(a, z, rel, is_map, k, sigma, with_curv, np.zeros(n))
    npt.assert_array_equal(with_curv, alone)
    if is_map:
        scale = min(rel.sum(), naive_truncation(k, n))
        metric = lambda x: naive_ap_metric(x, rel, k)  # noqa: E731
    else:
        scale = rel.sum() * (~rel).sum()
        metric = lambda x: naive_auc_metric(x, rel)  # noqa: E731
    expected = naive_ccs_metric_query(a, z, metric, sigma) * scale
    expected_curv = naive_ccs_metric_query(a, z, metric, sigma, curvature=True) * scale
    tol = 1e-10 * (1.0 + np.max(np.abs(expected)))
    ctx = f"map={is_map} k={k} sigma={sigma} a={a} z={z} rel={rel}"
    npt.assert_allclose(alone, expected, rtol=0, atol=tol, err_msg=ctx)
    npt.assert_allclose(curv, expected_curv, rtol=0, atol=tol, err_msg=ctx)


@pytest.mark.parametrize("metric", ["auc", "map"])
def test_bipartite_query_equals_brute_force(metric):
    rng = np.random.default_rng(len(metric))
    for sigma in SIGMAS:
        for n in range(2, 10):
            for k in _map_k_values(n) if metric == "map" else [0]:
                for _ in range(2):
                    a, z, rel = _binary_case(rng, n)
                    _check_bipartite(a, z, rel, metric == "map", k, sigma, rng)


@pytest.mark.parametrize(
    ("metric", "n", "k"), [("auc", 40, 0), ("map", 45, 0), ("map", 40, 3), ("map", 30, 7)]
)
def test_bipartite_query_large_queries(metric, n, k):
    """Boxes with more than 16 documents (the Hermite expansion) and MAP@k's partial sort."""
    rng = np.random.default_rng(n + k)
    a = np.zeros(n)  # the all-zero start: every noisy score within a few sigma
    z = rng.standard_normal(n)
    rel = rng.random(n) < 0.4
    _check_bipartite(a, z, rel, metric == "map", k, 1.0, rng)


def test_bipartite_query_constant_queries_are_zero():
    out = np.zeros(4)
    bipartite_query(np.arange(4.0), np.ones(4), np.ones(4, dtype=bool), True, 0, 1.0, out, np.zeros(4))
    bipartite_query(np.arange(4.0), np.ones(4), np.zeros(4, dtype=bool), False, 0, 1.0, out, np.zeros(4))
    bipartite_query(np.ones(1), np.ones(1), np.ones(1, dtype=bool), False, 0, 1.0, out[:1], np.zeros(1))
    npt.assert_array_equal(out, 0.0)


def _naive_precision(x, rel, k):
    K = naive_truncation(k, len(x))
    return sum(rel[d] for d in naive_order(x)[:K]) / K


def test_precision_encoding_equals_brute_force():
    """Precision@k's cascade encoding (gain 1{rel}, weight 1 on the top k, scale 1/min(k, n)) against the
    1-D integrals of the precision definition."""
    rng = np.random.default_rng(7)
    for sigma in SIGMAS:
        for n in range(2, 9):
            for k in (1, 2, max(1, n - 1), n + 1):
                labels = rng.integers(0, 3, n).astype(np.float64)
                a, z = rng.integers(-2, 3, n).astype(np.float64), rng.standard_normal(n)
                enc = Precision(k, threshold=0.5).encode(labels, np.array([0, n]))
                out, curv = np.zeros(n), np.zeros(n)
                ccs_query(a, z, enc.gain, np.ones(n), enc.pos_weight, enc.k, sigma, True, out, curv)
                rel = labels > 0.5
                expected = naive_ccs_metric_query(
                    a, z, lambda x, rel=rel, k=k: _naive_precision(x, rel, k), sigma
                )
                got = out * enc.query_scale[0]
                npt.assert_allclose(got, expected, rtol=0, atol=1e-12, err_msg=f"n={n} k={k}")
                assert enc.active[0] == (n > k and 0 < rel.sum() < n)


# THE OBJECTIVES ====================================================================================


def test_objective_scales_and_constant_queries():
    """Per-query scale: the sum over documents of |gradient| of one query times the normaliser does not
    depend on the normaliser; constant queries (one label, or precision with n <= k) get exact zeros."""
    rng = np.random.default_rng(0)
    labels = np.array([1, 0, 2, 0, 0, 1, 1, 1, 0, 0, 0, 3.0])
    group = [5, 3, 4]  # the second query is all relevant
    f = rng.standard_normal(12)
    for obj in (stochrank.auc(), stochrank.map(), stochrank.map(2), stochrank.precision(2)):
        d = obj.derivatives(f, labels, group)
        npt.assert_array_equal(d.gradient[5:8], 0.0)
        npt.assert_array_equal(d.curvature[5:8], 0.0)
        assert np.all(np.abs(d.gradient[:5]) > 0) or obj.name.startswith(("map@", "precision"))
    g = stochrank.precision(4).gradient(f, labels, group)
    npt.assert_array_equal(g[8:], 0.0)  # n = 4 <= k: constant


def test_threshold_defines_relevance():
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, 30).astype(np.float64)
    f = rng.standard_normal(30)
    offsets = np.array([0, 10, 20, 30])
    for make in (stochrank.auc, stochrank.map, lambda **kw: stochrank.precision(3, **kw)):
        npt.assert_array_equal(make(threshold=1.0).target.encode(labels, offsets).gain, labels > 1.0)
        g1 = make(threshold=1.0, seed=2).gradient(f, labels, [10, 10, 10])
        g0 = make(threshold=0.0, seed=2).gradient(f, labels, [10, 10, 10])
        assert np.max(np.abs(g1 - g0)) > 1e-3


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: stochrank.precision(None), ValueError, "'k' parameter of stochrank.precision"),
        (lambda: stochrank.precision(0), ValueError, "'k' parameter"),
        (lambda: stochrank.map(2.5), (TypeError, ValueError), "'k' parameter"),
        (lambda: stochrank.auc(threshold="high"), (TypeError, ValueError), "'threshold' parameter"),
        (lambda: stochrank.map(threshold=float("nan")), ValueError, "'threshold' parameter"),
        (lambda: stochrank.auc(k=3), TypeError, "unknown parameter"),
        (lambda: stochrank.auc(sigma=0.0), ValueError, "'sigma' parameter"),
        (lambda: stochrank.map(hessian="newton", sglb=stochrank.SGLB()), ValueError, "hessian='unit'"),
        (lambda: stochrank.metrics.feval("auc", k=5), ValueError, "Pass feval"),
        (lambda: stochrank.metrics.auc([1, 0], [1.0, 0.0], [2], ties="best"), ValueError, "'ties'"),
    ],
)
def test_errors_name_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_repr_pickle_copy_replace():
    for obj in (stochrank.auc(threshold=1.0, n_samples=2), stochrank.map(5, mu=0.3), stochrank.precision(3)):
        twin = eval(repr(obj), {"stochrank": stochrank})
        assert twin == obj
        assert pickle.loads(pickle.dumps(obj)) == obj and copy.deepcopy(obj) == obj
    assert stochrank.map(5).replace(k=3) == stochrank.map(3)
    assert stochrank.auc().replace(sigma=0.5) == stochrank.auc(sigma=0.5)
    assert stochrank.auc().name == "auc" and stochrank.map(5).name == "map@5"


def test_query_weights_scale_the_gradient():
    X, y, sizes, _ = make_queries(n_queries=6)
    ds = lgb.Dataset(X, y, group=sizes).construct()
    w = np.repeat(np.array([1.0, 0.0, 2.0, 1.0, 1.0, 3.0]), sizes)
    wds = lgb.Dataset(X, y, group=sizes, weight=w).construct()
    for obj in (stochrank.auc(hessian="unit"), stochrank.map(hessian="unit")):
        g, h = copy.deepcopy(obj)(np.zeros(y.size), ds)
        gw, hw = copy.deepcopy(obj)(np.zeros(y.size), wds)
        npt.assert_allclose(gw, w * g, rtol=1e-12, atol=1e-15)
        npt.assert_allclose(hw, w * h)


# BOOSTERS ==========================================================================================


@pytest.mark.parametrize("name", ["auc", "map", "map@3", "precision@3"])
def test_every_booster_trains_and_improves_its_metric(name):
    X, y, sizes, qid = make_queries(n_queries=40)
    make = {
        "auc": lambda **kw: stochrank.auc(**kw),
        "map": lambda **kw: stochrank.map(**kw),
        "map@3": lambda **kw: stochrank.map(3, **kw),
        "precision@3": lambda **kw: stochrank.precision(3, **kw),
    }[name]

    def metric(scores):
        if name == "auc":
            return stochrank.metrics.auc(y, scores, sizes)
        if name.startswith("map"):
            return stochrank.metrics.map(y, scores, sizes, k=3 if "@" in name else None)
        return stochrank.metrics.precision(y, scores, sizes, k=3)

    start = metric(np.zeros(y.size))
    models = {
        "lightgbm": lgb_train(make(seed=1), X, y, sizes, rounds=10).predict(X),
        "lightgbm-sglb": lgb_train(
            make(seed=1, sglb=stochrank.SGLB(learning_rate=0.3)), X, y, sizes, rounds=10
        ).predict(X),
        "xgboost": xgb.train(
            {"max_depth": 3, "eta": 0.3, "base_score": 0.0, "nthread": 1},
            xgb.DMatrix(X, y, qid=qid),
            10,
            obj=make(seed=1),
        ).predict(xgb.DMatrix(X, qid=qid), output_margin=True),
        "xgbranker": stochrank.xgboost.XGBRanker(
            objective=make(seed=1), n_estimators=10, max_depth=3, learning_rate=0.3, n_jobs=1
        )
        .fit(X, y, qid=qid)
        .predict(X),
        "catboost": stochrank.catboost.CatBoostRanker(
            make(seed=1, hessian="unit"), engine="stochrank", iterations=10, depth=3, learning_rate=0.3,
            thread_count=1,
        )
        .fit(X, y, group_id=qid)
        .predict(X),
    }  # fmt: skip
    for booster, scores in models.items():
        assert np.isfinite(scores).all(), booster
        assert metric(scores) > start + 0.5 * (1.0 - start), (booster, metric(scores), start)
    with pytest.raises(Exception, match="no"):
        stochrank.catboost.CatBoostRanker(make(hessian="unit"), engine="native", iterations=2).fit(
            X, y, group_id=qid
        )


# THE METRIC ========================================================================================


def test_metric_auc_against_sklearn_and_pairs():
    rng = np.random.default_rng(5)
    for _ in range(100):
        n = int(rng.integers(2, 12))
        y = rng.integers(0, 3, n).astype(np.float64)
        s = rng.integers(0, 3, n).astype(np.float64)
        rel = y > 0
        if rel.all() or not rel.any():
            assert np.isnan(stochrank.metrics.auc(y, s, [n], per_query=True)[0])
            assert stochrank.metrics.auc(y, s, [n], empty="one") == 1.0
            continue
        assert stochrank.metrics.auc(y, s, [n], ties="average") == pytest.approx(
            roc_auc_score(rel, s), abs=1e-12
        )
        pairs = [(i, j) for i in range(n) for j in range(n) if rel[i] and not rel[j]]
        worst = sum(s[i] > s[j] for i, j in pairs) / len(pairs)
        row = sum(s[i] > s[j] or (s[i] == s[j] and i < j) for i, j in pairs) / len(pairs)
        assert stochrank.metrics.auc(y, s, [n]) == pytest.approx(worst, abs=1e-12)
        assert stochrank.metrics.auc(y, s, [n], ties="input") == pytest.approx(row, abs=1e-12)


def test_metric_auc_weights_and_feval():
    y = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    s = np.array([2.0, 1.0, 2.0, 1.0, 0.0, 1.0])
    per = stochrank.metrics.auc(y, s, [2, 2, 2], per_query=True)
    npt.assert_array_equal(per[:2], [1.0, 0.0])
    assert np.isnan(per[2])
    assert stochrank.metrics.auc(y, s, [2, 2, 2], weight=[3.0, 1.0, 5.0]) == 0.75
    X, yy, sizes, _ = make_queries(n_queries=4)
    name, value, higher = stochrank.metrics.feval("auc", k=None)(
        np.zeros(yy.size), lgb.Dataset(X, yy, group=sizes).construct()
    )
    assert (name, higher) == ("sr-auc", True) and value == 0.0  # all tied: worst case


@pytest.mark.parametrize(
    "make", [stochrank.auc, stochrank.map, lambda: stochrank.precision(2), stochrank.mrr]
)
def test_an_empty_last_query_is_an_empty_query(make):
    # Per-query counts by reduceat failed on an empty last query (IndexError) and read a neighbour's
    # documents for an empty middle one; the gradients must equal those without the empty queries.
    y, f = np.array([1.0, 0.0, 1.0, 0.0, 1.0]), np.array([0.1, 0.2, 0.3, -0.4, 0.5])

    def gradient(group):  # XGBoost accepts empty groups (the direct API refuses them)
        d = xgb.DMatrix(np.zeros((5, 1)), label=y)
        d.set_group(group)
        return make()(f, d)[0]

    np.testing.assert_array_equal(gradient([3, 0, 2, 0]), gradient([3, 2]))
