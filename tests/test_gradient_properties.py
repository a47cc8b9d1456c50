"""Properties of the objectives' gradients over random datasets (hypothesis): finiteness, an O(1/sigma)
bound derived from the estimator, exact zeros for constant queries, translation invariance, the SFA
projection, determinism of the noise streams and independence from the thread count.

The bound. For one draw, out[d] = sum_I M_I (D(lo_I) - D(hi_I)) with D the N(m_d, s_d^2) density. The
weights D(lo_I) - D(hi_I) sum to 0, so M_I may be replaced by M_I - c with c the midpoint of M's range,
and they sum in absolute value to at most the total variation of D, 2 phi(0)/s_d. Hence
|out[d]| <= (range/2) 2 phi(0)/s_d <= U phi(0)/sigma, as 0 <= M <= U and s_d >= sigma, with U the
rearrangement bound sum_{p<K} w_p g_(p) (gains sorted decreasingly, w non-increasing, continuation
factors <= 1). Averaging keeps the bound B = scale U phi(0)/sigma. Removing the mean at most doubles a
coordinate; the mean removal and the SFA map g -> g - sfa <g, u> u ||f~||^2/(||f~|| + nu)^2
(u = f~/||f~||) are both non-expansive in the 2-norm, so per query ||g||_2 <= sqrt(n) B whatever the
post-processing.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import numpy.testing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stochrank
from stochrank._parallel import PARALLEL_MIN_ROWS
from stochrank.protocol import RankingTarget

from .naive import INV_SQRT_2PI, naive_ideal_dcg, naive_position_weights, naive_sfa

RANKING = ("ndcg", "dcg", "err", "pfound", "mrr")
METRICS = (*RANKING, "lso-input", "lso-score")
SETTINGS = settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])


def _make(metric, k, hessian="unit", **kw):
    """The objective for ``metric`` (labels 0..4); the ranking metrics with unit Hessians unless asked
    (the properties of mean removal and SFA are unit-Hessian properties)."""
    if not metric.startswith("lso"):
        kw["hessian"] = hessian
    if metric == "ndcg":
        return stochrank.ndcg(k, **kw)
    if metric == "dcg":
        return stochrank.dcg(k, gain="linear", **kw)
    if metric == "err":
        return stochrank.err(k, max_grade=4, **kw)
    if metric == "pfound":
        return stochrank.pfound(k, max_grade=4, **kw)
    if metric == "mrr":
        return stochrank.mrr(k, **kw)
    kw.pop("mu", None)
    return stochrank.lso(k, order=metric.split("-")[1], **kw)


def _encoding(metric, r, k):
    """(gain, cont, position weights, metric scale) of one query, from the metric definitions."""
    n = r.size
    if metric == "ndcg":
        gain, cont, w = 2.0**r - 1.0, np.ones(n), naive_position_weights("log", n + 1, k)
        idcg = naive_ideal_dcg(gain, w, k)
        return gain, cont, w, (1.0 / idcg if idcg > 0 else 0.0)
    if metric == "dcg":
        return r.copy(), np.ones(n), naive_position_weights("log", n + 1, k), 1.0
    if metric in ("err", "pfound"):
        R = (2.0**r - 1.0) / 16.0
        if metric == "err":
            return R, 1.0 - R, naive_position_weights("position", n + 1, k), 1.0
        return R, 0.85 * (1.0 - R), naive_position_weights("none", n + 1, k), 1.0
    if metric == "mrr":
        rel = (r > 0).astype(np.float64)
        return rel, 1.0 - rel, naive_position_weights("position", n + 1, k), 1.0
    return r.copy(), np.ones(n), naive_position_weights("position", n + 1, k), 1.0


def _upper(gain, w, k, scale):
    """U * scale with U = sum_{p<K} w_p g_(p): the largest value the metric can take."""
    return scale * naive_ideal_dcg(gain, w, k)


def _constant(metric, r, k):
    """Does the query's metric not depend on the scores (so the gradient must be exactly 0)?"""
    gain, cont, _, scale = _encoding(metric, r, k)
    if metric.startswith("lso"):
        return not np.any(gain > 0)
    return r.size < 2 or scale == 0.0 or (np.all(gain == gain[0]) and np.all(cont == cont[0]))


@st.composite
def datasets(draw, max_size=12):
    """Several queries (sizes 1..max_size, labels 0..4) with tied or continuous scores, and a sigma."""
    n_queries = draw(st.integers(1, 5))
    sizes = [draw(st.integers(1, max_size)) for _ in range(n_queries)]
    labels, scores = [], []
    for s in sizes:
        if draw(st.booleans()):
            labels += [float(draw(st.integers(0, 4)))] * s  # constant query
        else:
            labels += [float(v) for v in draw(st.lists(st.integers(0, 4), min_size=s, max_size=s))]
        tied = st.integers(-3, 3).map(float)
        free = st.floats(-5.0, 5.0, allow_nan=False, allow_subnormal=False)
        scores += draw(st.lists(tied if draw(st.booleans()) else free, min_size=s, max_size=s))
    sigma = draw(st.sampled_from([0.1, 0.3, 1.0, 2.5]) | st.floats(0.05, 5.0))
    return np.array(scores), np.array(labels), np.array(sizes), sigma


def _queries(sizes):
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    return [slice(offsets[i], offsets[i + 1]) for i in range(len(sizes))]


KS = st.none() | st.integers(1, 6)


# BOUNDS AND ZEROS ==================================================================================


@SETTINGS
@given(
    data=datasets(),
    metric=st.sampled_from(METRICS),
    k=KS,
    mu=st.sampled_from([0.0, 0.5]),
    sfa=st.sampled_from([0.0, 1.0]),
    hessian=st.sampled_from(["unit", "newton"]),
    seed=st.integers(0, 2**31),
)
def test_finite_bounded_and_zero_for_constant_queries(data, metric, k, mu, sfa, hessian, seed):
    f, labels, sizes, sigma = data
    if hessian == "newton" and not metric.startswith("lso"):
        sfa = 0.0  # Newton leaves take no SFA
    obj = _make(metric, k, hessian=hessian, sigma=sigma, mu=mu, sfa=sfa, n_samples=3, seed=seed)
    g = obj.gradient(f, labels, sizes)
    assert g.shape == f.shape and g.dtype == np.float64
    assert np.all(np.isfinite(g))
    for q in _queries(sizes):
        r = labels[q]
        n = r.size
        if _constant(metric, r, k):
            assert np.all(g[q] == 0.0), (metric, r, g[q])
            continue
        gain, _, w, scale = _encoding(metric, r, k)
        B = _upper(gain, w, k, scale) * INV_SQRT_2PI / sigma
        slack = 1.0 + 1e-9
        assert np.linalg.norm(g[q]) <= math.sqrt(n) * B * slack, (metric, r, g[q], B)
        if sfa == 0.0:
            per_doc = B if metric.startswith("lso") else 2.0 * B
            assert np.max(np.abs(g[q])) <= per_doc * slack, (metric, r, g[q], B)


@SETTINGS
@given(data=datasets(), metric=st.sampled_from(RANKING), k=KS, seed=st.integers(0, 2**31))
def test_ranking_gradient_sums_to_zero(data, metric, k, seed):
    """Translation invariance: the exact gradient sums to 0 per query; the estimate is mean-removed and
    the SFA direction (centred scores) keeps the sum."""
    f, labels, sizes, sigma = data
    g = _make(metric, k, sigma=sigma, n_samples=2, seed=seed).gradient(f, labels, sizes)
    for q in _queries(sizes):
        assert abs(g[q].sum()) <= 1e-12 * (1.0 + np.abs(g[q]).sum())


def test_mrr_all_relevant_is_constant():
    """MRR is 1 whatever the order when every document is relevant: exactly zero, like a one-document
    query."""
    f = np.array([0.3, -1.0, 2.0, 0.0, 1.0, 5.0])
    g = stochrank.mrr(2).gradient(f, np.array([1.0, 3.0, 2.0, 0.0, 1.0, 4.0]), np.array([3, 2, 1]))
    npt.assert_array_equal(g[:3], 0.0)
    assert np.all(g[3:5] != 0.0)
    npt.assert_array_equal(g[5:], 0.0)


# INVARIANCE AND SFA ================================================================================


@SETTINGS
@given(
    data=datasets(),
    metric=st.sampled_from(RANKING),
    k=KS,
    mu=st.sampled_from([0.0, 0.5]),
    seed=st.integers(0, 2**31),
    shift=st.floats(-10.0, 10.0),
    hessian=st.sampled_from(["unit", "newton"]),
)
def test_ranking_gradient_invariant_to_query_shift(data, metric, k, mu, seed, shift, hessian):
    f, labels, sizes, sigma = data
    sfa = 1.0 if hessian == "unit" else 0.0
    obj = _make(metric, k, hessian=hessian, sigma=sigma, mu=mu, sfa=sfa, n_samples=2, seed=seed)
    shifts = np.repeat(shift * np.arange(1, sizes.size + 1), sizes)  # a different constant per query
    g = obj.gradient(f, labels, sizes)
    g_shift = obj.gradient(f + shifts, labels, sizes)
    scale = np.max(np.abs(g)) if g.size else 0.0
    npt.assert_allclose(g_shift, g, rtol=0, atol=1e-12 * max(scale, 1e-300) + 1e-300)


@SETTINGS
@given(
    data=datasets(),
    metric=st.sampled_from(METRICS),
    k=KS,
    mu=st.sampled_from([0.0, 0.5]),
    sfa=st.sampled_from([1.0, 0.5]),
    nu=st.sampled_from([0.01, 1.0]),
    seed=st.integers(0, 2**31),
)
def test_sfa_is_the_documented_projection(data, metric, k, mu, sfa, nu, seed):
    """g_sfa = g - sfa <g, f~>/(||f~|| + nu)^2 f~ per query, hence
    <g_sfa, f~> = <g, f~> (1 - sfa ||f~||^2/(||f~|| + nu)^2); f~ = f - mean(f) for the ranking metrics
    (n > 2; smaller queries are left alone), f~ = f for LSO."""
    f, labels, sizes, sigma = data
    g0 = _make(metric, k, sigma=sigma, mu=mu, sfa=0.0, nu=nu, n_samples=2, seed=seed).gradient(
        f, labels, sizes
    )
    g1 = _make(metric, k, sigma=sigma, mu=mu, sfa=sfa, nu=nu, n_samples=2, seed=seed).gradient(
        f, labels, sizes
    )
    ranking = metric in RANKING
    for q in _queries(sizes):
        n = f[q].size
        if ranking and n <= 2:
            npt.assert_array_equal(g1[q], g0[q])
            continue
        if not ranking and n <= 2:
            continue  # not pinned by the contract
        ft = f[q] - f[q].mean() if ranking else f[q]
        tol = 1e-12 * (1.0 + np.max(np.abs(g0[q])))
        npt.assert_allclose(g1[q], naive_sfa(g0[q], f[q], sfa, nu, ranking), rtol=0, atol=tol)
        nrm = np.linalg.norm(ft)
        factor = 1.0 - sfa * nrm**2 / (nrm + nu) ** 2
        assert abs(np.dot(g1[q], ft) - np.dot(g0[q], ft) * factor) <= tol * (1.0 + nrm) * n


def test_sfa_leaves_two_document_ranking_queries_alone():
    """With two documents the centred scores and the mean-removed gradient are both along (1, -1): SFA would
    remove the whole gradient, so queries of n <= 2 are not projected; larger ones are."""
    f = np.array([0.3, -0.4, 1.0, 0.2, -0.5])
    labels = np.array([1.0, 0.0, 2.0, 0.0, 1.0])
    sizes = np.array([2, 3])
    for metric in RANKING:
        g0 = _make(metric, None, sigma=0.8, sfa=0.0, n_samples=3, seed=4).gradient(f, labels, sizes)
        g1 = _make(metric, None, sigma=0.8, sfa=1.0, n_samples=3, seed=4).gradient(f, labels, sizes)
        assert np.all(g0[:2] != 0.0)
        npt.assert_array_equal(g1[:2], g0[:2])
        npt.assert_allclose(g1[2:], naive_sfa(g0[2:], f[2:], 1.0, 0.01, True), rtol=0, atol=1e-13)
        assert np.max(np.abs(g1[2:] - g0[2:])) > 1e-6


# DETERMINISM ======================================================================================


@settings(deadline=None, max_examples=20)
@given(data=datasets(), metric=st.sampled_from(METRICS), k=KS, seed=st.integers(0, 2**31))
def test_noise_streams(data, metric, k, seed):
    """Same (seed, call): bit-identical; another call or another seed: other noise. (For the ranking
    metrics a non-zero estimate moves continuously with the noise; the LSO estimates can be
    noise-free, e.g. when every other score is far from 0, so they are checked on fixed data below.)"""
    f, labels, sizes, sigma = data
    obj = _make(metric, k, sigma=sigma, n_samples=1, seed=seed)
    g = obj.gradient(f, labels, sizes)
    npt.assert_array_equal(obj.gradient(f, labels, sizes), g)
    npt.assert_array_equal(
        _make(metric, k, sigma=sigma, n_samples=1, seed=seed).gradient(f, labels, sizes), g
    )
    if metric not in RANKING:
        return
    varying = [q for q in _queries(sizes) if labels[q].size >= 3 and np.any(g[q] != 0.0)]
    if not varying:
        return
    idx = np.concatenate([np.arange(q.start, q.stop) for q in varying])
    g_call = obj.gradient(f, labels, sizes, call=1)
    g_seed = _make(metric, k, sigma=sigma, n_samples=1, seed=seed + 1).gradient(f, labels, sizes)
    assert not np.array_equal(g_call[idx], g[idx])
    assert not np.array_equal(g_seed[idx], g[idx])


@pytest.mark.parametrize("order", ["input", "score"])
def test_lso_noise_streams(order):
    rng = np.random.default_rng(8)
    sizes = np.array([6, 9, 4])
    f = 0.5 * rng.standard_normal(sizes.sum())
    labels = rng.integers(0, 4, sizes.sum()).astype(np.float64)
    obj = stochrank.lso(3, order=order, n_samples=1, seed=9)
    g = obj.gradient(f, labels, sizes)
    npt.assert_array_equal(stochrank.lso(3, order=order, n_samples=1, seed=9).gradient(f, labels, sizes), g)
    # One LSO draw's estimate depends only on which other documents the noise shows, so two streams can
    # give the same estimate for a small query: some later call and some other seed must differ.
    calls = [obj.gradient(f, labels, sizes, call=c) for c in range(1, 6)]
    objectives = [stochrank.lso(3, order=order, n_samples=1, seed=s) for s in range(10, 15)]
    seeds = [other.gradient(f, labels, sizes) for other in objectives]
    for q in _queries(sizes):
        assert any(not np.array_equal(other[q], g[q]) for other in calls)
        assert any(not np.array_equal(other[q], g[q]) for other in seeds)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 Numba threads")
@pytest.mark.parametrize("metric", ["ndcg", "err", "mrr", "lso-input", "lso-score"])
def test_thread_count_does_not_change_the_gradient(metric):
    rng = np.random.default_rng(31)
    sizes = rng.integers(1, 40, 200)
    labels = rng.integers(0, 5, sizes.sum()).astype(np.float64)
    f = rng.integers(-3, 4, sizes.sum()) + 0.25 * rng.standard_normal(sizes.sum())
    obj = _make(metric, 5, sigma=0.7, mu=0.3, n_samples=4, seed=123)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        g1 = obj.gradient(f, labels, sizes, call=2)
        numba.set_num_threads(2)
        g2 = obj.gradient(f, labels, sizes, call=2)
    finally:
        numba.set_num_threads(before)
    npt.assert_array_equal(g1, g2)
    assert np.count_nonzero(g1) > sizes.size  # the comparison is not vacuous


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 Numba threads")
@pytest.mark.parametrize("hessian", ["unit", "newton"])
def test_thread_count_does_not_change_the_booster_gradient_and_hessian(hessian):
    """Above PARALLEL_MIN_ROWS the kernels run in parallel: the booster's gradient and Hessian, Newton's
    normalisation over every document included, must still be bit-identical for 1 and 2 threads."""
    rng = np.random.default_rng(32)
    sizes = rng.integers(1, 60, 900)
    assert sizes.sum() >= PARALLEL_MIN_ROWS  # the parallel path, not the one-thread one
    labels = rng.integers(0, 5, sizes.sum()).astype(np.float64)
    f = rng.normal(size=sizes.sum())
    target = RankingTarget(labels, sizes)
    before = numba.get_num_threads()
    try:  # a fresh objective per call: a booster call advances its objective's noise streams
        numba.set_num_threads(1)
        g1, h1 = stochrank.ndcg(k=5, seed=7, hessian=hessian)(f, target)
        numba.set_num_threads(2)
        g2, h2 = stochrank.ndcg(k=5, seed=7, hessian=hessian)(f, target)
    finally:
        numba.set_num_threads(before)
    npt.assert_array_equal(g1, g2)
    npt.assert_array_equal(h1, h2)


@pytest.mark.parametrize("hessian", ["unit", "newton"])
def test_noise_follows_the_query_not_its_position(hessian):
    """A query's noise stream is keyed by its content, so its gradient is the same whatever else is in the
    data and in which order: reversed query order, or the data split in two parts (Dask partitions)."""
    rng = np.random.default_rng(11)
    sizes = rng.integers(2, 9, 12)
    labels = rng.integers(0, 4, sizes.sum()).astype(np.float64)
    f = rng.normal(size=sizes.sum())
    obj = stochrank.ndcg(k=3, n_samples=2, seed=5, hessian=hessian)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    whole = obj.derivatives(f, labels, sizes, call=3)
    order = np.concatenate([np.arange(offsets[q], offsets[q + 1]) for q in range(sizes.size)[::-1]])
    reversed_ = obj.derivatives(f[order], labels[order], sizes[::-1], call=3)
    npt.assert_array_equal(reversed_.gradient, whole.gradient[order])
    if hessian == "newton":
        npt.assert_array_equal(reversed_.curvature, whole.curvature[order])
    cut = offsets[5]
    head = obj.derivatives(f[:cut], labels[:cut], sizes[:5], call=3)
    tail = obj.derivatives(f[cut:], labels[cut:], sizes[5:], call=3)
    npt.assert_array_equal(np.concatenate([head.gradient, tail.gradient]), whole.gradient)
