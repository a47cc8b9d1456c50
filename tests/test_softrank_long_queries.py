"""Exact SoftRank on long queries: the collapse from zero scores, its remedy, the start-of-training warning.

At equal scores SoftRank's rank law is Binomial(n - 1, 1/2), so SoftNDCG@5's gradient underflows on queries
of 100-300 documents and a booster keeps a constant model. ``relative_sigma`` (σ relative to each query's
score spread, exact gradient including the spread's path) and ``warmup`` (the whole-list linear SoftNDCG
first) make it train; every objective raises :class:`stochrank.StartWarning` when its first gradient is
(nearly) zero. References: enumeration (``tests/naive.py``), finite differences, SoftRank at an absolute σ.
"""

from __future__ import annotations

import warnings

import lightgbm as lgb
import numpy as np
import pytest

import stochrank
from stochrank.datasets.synthetic import mslr_like
from stochrank.objectives import StartWarning, softrank
from stochrank.protocol import RankingTarget

from .naive import naive_softrank_dcg


def _long_queries(n_queries: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n_queries`` MSLR-shaped queries of 100-300 documents: X, grades, sizes."""
    data = mslr_like(int(n_queries * 1.2) + 10, n_features=20, mean_docs=200, seed=seed)
    keep = np.flatnonzero((data.group >= 100) & (data.group <= 300))[:n_queries]
    assert keep.size == n_queries
    rows = np.repeat(np.isin(np.arange(data.group.size), keep), data.group)
    return data.X[rows], data.y[rows], data.group[keep]


def _ndcg5(y: np.ndarray, scores: np.ndarray, sizes: np.ndarray, ties: str = "worst") -> float:
    return float(stochrank.metrics.ndcg(y, scores, sizes, k=5, ties=ties))


# ------------------------------------------------------------------------ the warning
def test_softrank_at_k_from_zero_scores_on_long_queries_warns_with_cause_and_fix():
    X, y, sizes = _long_queries(12, seed=0)
    _, grad, _ = softrank(5).value_and_gradient(np.zeros(y.size), y, sizes)
    assert np.max(np.abs(grad)) < 1e-15  # the collapse: nothing for a tree to fit
    with pytest.warns(StartWarning, match=r"Binomial\(n - 1, 1/2\).*relative_sigma=True, warmup=100"):
        softrank(5)(np.zeros(y.size), lgb.Dataset(X, y, group=sizes).construct())


@pytest.mark.parametrize(
    "objective",
    [softrank(5, relative_sigma=True), softrank(5, warmup=10), softrank(5, method="ccs"), stochrank.ndcg(5)],
    ids=repr,
)
def test_objectives_whose_start_gradient_lives_do_not_warn(objective):
    _, y, sizes = _long_queries(12, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StartWarning)
        grad, _ = objective(np.zeros(y.size), RankingTarget(y, sizes))
    assert np.max(np.abs(grad)) > 1e-4


def test_softrank_on_short_queries_does_not_warn():
    rng = np.random.default_rng(0)
    sizes = rng.integers(3, 12, 40)
    y = rng.integers(0, 4, sizes.sum()).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StartWarning)
        softrank(5)(np.zeros(y.size), RankingTarget(y, sizes))


def test_stochasticrank_warns_when_start_scores_are_spread_far_beyond_sigma():
    rng = np.random.default_rng(2)
    sizes = np.full(10, 8)
    y = rng.integers(0, 4, sizes.sum()).astype(float)
    start = 1e3 * rng.permutation(y.size).astype(float)  # neighbours 1e3 apart, noise of scale 1e-3
    for hessian in ("newton", "unit"):
        with pytest.warns(StartWarning, match=r"spread far more than sigma=0\.001.*raise sigma"):
            stochrank.ndcg(5, sigma=1e-3, hessian=hessian)(start, RankingTarget(y, sizes))
    with warnings.catch_warnings():  # only the first call of a run is checked, and σ = 1 is fine
        warnings.simplefilter("error", StartWarning)
        stochrank.ndcg(5)(start / 1e3, RankingTarget(y, sizes))


@pytest.mark.parametrize(
    "objective",
    [
        stochrank.ndcg(5),
        stochrank.ndcg(5, hessian="unit"),
        stochrank.mrr(),
        stochrank.err(k=5, max_grade=4),
        softrank(5),
        stochrank.auc(),
    ],
    ids=repr,
)
@pytest.mark.parametrize("grade", [0.0, 2.0])
def test_every_objective_warns_when_no_query_can_change(objective, grade):
    sizes = np.full(6, 7)
    y = np.full(sizes.sum(), grade)  # one label per query: no order changes any query's metric
    with pytest.warns(StartWarning, match=r"no query of this training set can change .* constant model"):
        grad, _ = objective(np.zeros(y.size), RankingTarget(y, sizes))
    assert not np.any(grad)
    y[:2] = [0.0, 1.0]  # one query that can change: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", StartWarning)
        objective(np.zeros(y.size), RankingTarget(y, sizes))
        # queries of one document: their own warning says so, not this one
        with pytest.warns(UserWarning, match="one document") as caught:
            objective(np.zeros(6), RankingTarget(np.arange(6.0) % 2, np.ones(6, dtype=int)))
    assert not any(issubclass(w.category, StartWarning) for w in caught)


# ------------------------------------------------------------------------ relative σ
def test_relative_sigma_is_softrank_at_sigma_times_each_query_spread_with_its_exact_gradient():
    rng = np.random.default_rng(3)
    sizes = np.array([7, 5, 6, 1])
    y = rng.integers(0, 4, sizes.sum()).astype(float)
    f = rng.normal(size=y.size)
    obj = softrank(3, sigma=0.7, relative_sigma=True)
    values, grad, _ = obj.value_and_gradient(f, y, sizes)
    starts = np.r_[0, np.cumsum(sizes)]
    for q in range(sizes.size - 1):  # the one-document query cannot change
        s, e = starts[q], starts[q + 1]
        spread = np.sqrt(np.mean((f[s:e] - f[s:e].mean()) ** 2))
        absolute = softrank(3, sigma=0.7 * spread).value_and_gradient(f[s:e], y[s:e], [e - s])[0]
        assert values[q] == pytest.approx(absolute[0], rel=1e-12)
    eps = 1e-6

    def total(x: np.ndarray) -> float:
        return float(obj.value_and_gradient(x, y, sizes)[0].sum())

    fd = np.array([(total(f + eps * e) - total(f - eps * e)) / (2 * eps) for e in np.eye(y.size)])
    np.testing.assert_allclose(grad, fd, atol=1e-8)
    # scale-free: the value does not change when a query's scores are scaled, the gradient scales by 1/c
    scaled_values, scaled_grad, _ = obj.value_and_gradient(3.0 * f, y, sizes)
    np.testing.assert_allclose(scaled_values, values, rtol=1e-12)
    np.testing.assert_allclose(3.0 * scaled_grad, grad, atol=1e-14)


# ------------------------------------------------------------------------ warm-up
def _linear_reference(f: np.ndarray, y: np.ndarray, size: int, var: float, k: int) -> np.ndarray:
    """Gradient of sum_q SoftDCG(whole list, D(r) = 1 - r/n)/IDCG@k by finite differences of enumeration."""
    gain = 2.0**y - 1
    w = 1.0 - np.arange(size) / size
    log_w = 1.0 / np.log2(np.arange(k) + 2.0)

    def total(x: np.ndarray) -> float:
        out = 0.0
        for s in range(0, x.size, size):
            idcg = float(np.sum(np.sort(gain[s : s + size])[::-1][:k] * log_w))
            out += naive_softrank_dcg(x[s : s + size], np.full(size, var), gain[s : s + size], w, None) / idcg
        return out

    eps = 1e-6
    return np.array([(total(f + eps * e) - total(f - eps * e)) / (2 * eps) for e in np.eye(f.size)])


def test_warmup_follows_the_whole_list_linear_softndcg_then_softndcg_at_k():
    rng = np.random.default_rng(4)
    size, k = 5, 3
    sizes = np.full(3, size)
    y = np.array([0, 1, 2, 0, 3, 1, 1, 0, 2, 0, 0, 0, 1, 2, 1], dtype=float)
    f0 = np.zeros(y.size)
    f1 = rng.normal(size=y.size)
    obj = softrank(k, sigma=0.8, warmup=2)
    target = RankingTarget(y, sizes)
    np.testing.assert_allclose(-obj(f0, target)[0], _linear_reference(f0, y, size, 0.64, k), atol=1e-8)
    np.testing.assert_allclose(-obj(f1, target)[0], _linear_reference(f1, y, size, 0.64, k), atol=1e-8)
    np.testing.assert_allclose(-obj(f1, target)[0], obj.value_and_gradient(f1, y, sizes)[1], rtol=1e-13)


def test_relative_sigma_gives_a_tied_query_the_linear_direction_at_sigma():
    size, k = 5, 3
    sizes = np.full(2, size)
    y = np.array([0, 1, 2, 0, 3, 1, 1, 0, 2, 0], dtype=float)
    f = np.r_[np.zeros(size), np.linspace(-1.0, 1.0, size)]  # query 0 tied, query 1 spread
    obj = softrank(k, sigma=0.8, relative_sigma=True)
    grad = -obj(f, RankingTarget(y, sizes))[0]
    np.testing.assert_allclose(grad[:size], _linear_reference(f[:size], y[:size], size, 0.64, k), atol=1e-8)
    own = obj.value_and_gradient(f[size:], y[size:], [size])[1]
    np.testing.assert_allclose(grad[size:], own, rtol=1e-13)
    assert np.all(obj.value_and_gradient(f[:size], y[:size], [size])[1] == 0.0)  # π = 1/2, a step


# ------------------------------------------------------------------------ parameters
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"relative_sigma": 1}, r"'relative_sigma' parameter of stochrank.softrank must be True or False"),
        ({"relative_sigma": True, "variance": np.ones(3)}, r"relative_sigma=True .* not per-document"),
        ({"warmup": -1}, r"'warmup' parameter of stochrank.softrank must be an int in the range \[0, inf\)"),
        ({"warmup": 10, "method": "ccs"}, r"apply to method='exact' only.*warmup=10"),
        ({"relative_sigma": True, "method": "ccs"}, r"apply to method='exact' only.*relative_sigma=True"),
    ],
)
def test_remedy_parameters_are_validated(kwargs, message):
    with pytest.raises(ValueError, match=message):
        softrank(5, **kwargs)


# ------------------------------------------------------------------------ training
@pytest.mark.slow
def test_softrank_at_5_trains_on_long_queries_with_the_remedy_and_collapses_without():
    X, y, sizes = _long_queries(60, seed=10)
    Xt, yt, st = _long_queries(60, seed=11)
    random = _ndcg5(yt, np.zeros(yt.size), st, ties="average")  # the exact expectation of a random ranking
    params = {"learning_rate": 0.05, "num_leaves": 31, "num_threads": 1, "verbose": -1, "deterministic": True}

    def fit(objective):
        booster = lgb.train({**params, "objective": objective}, lgb.Dataset(X, y, group=sizes), 30)
        return booster.predict(Xt)

    with pytest.warns(StartWarning):
        collapsed = fit(softrank(5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", StartWarning)
        trained = fit(softrank(5, relative_sigma=True, warmup=20))
    # the trees fitted underflowed gradients: the scores moved by ~1e-27, which any offset of order 1 erases
    assert np.ptp(collapsed) < 1e-20
    assert _ndcg5(yt, 1.0 + collapsed, st) <= random  # all tied: worst ties rank below random
    assert _ndcg5(yt, trained, st) > random + 0.5


@pytest.mark.parametrize("sizes", [[3, 0, 0, 0], [3, 0, 0], [1]], ids=["3,0,0,0", "3,0,0", "1"])
def test_empty_groups_or_one_single_document_query_still_warn_that_no_query_can_change(sizes):
    """XGBoost accepts empty groups: rows == queries there is not 'every query has one document'."""
    xgb = pytest.importorskip("xgboost")
    n = int(np.sum(sizes))
    dtrain = xgb.DMatrix(np.zeros((n, 1)), np.zeros(n), group=sizes)
    with pytest.warns(StartWarning, match="no query of this training set can change"):
        stochrank.ndcg(k=3)(np.zeros(n), dtrain)
