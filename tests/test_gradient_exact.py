"""Exactness of the CCS kernels: for one fixed noise draw, every coordinate of ``ccs_query`` / ``lso_query``
equals the brute-force derivative of the exact 1-D Gaussian integral of a step function (``tests/naive.py``).

Also: the kernels add to ``out`` and leave their inputs alone, read no position weight past the documented
length, and the objective's relevance shift enters only through a = f - sigma mu r.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.testing as npt
import pytest

import stochrank
from stochrank.kernels import ccs_query, lso_query

from .naive import (
    naive_ccs_conditional_value,
    naive_ccs_curvature,
    naive_ccs_query,
    naive_conditional_law,
    naive_filtered_ccs_query,
    naive_ideal_dcg,
    naive_lso_query,
    naive_position_weights,
    naive_truncation,
)

ATOL = 1e-10
SIGMAS = (0.3, 1.0, 2.5)
PROBS = np.array([0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.0])  # ERR/PFound probabilities, R = 1 included

RANKING_METRICS = (
    "dcg_exp_log",
    "dcg_linear_position",
    "ndcg",
    "err",
    "pfound",
    "pfound_decay0",
    "pfound_decay1",
    "mrr",
)


# HELPERS ==========================================================================================


def _encoding(metric, n, k, rng):
    """gain, cont, position weights (long enough, zero from K on) of one random query, as the objectives
    encode them (module docstring of stochrank.kernels.ccs)."""
    K = naive_truncation(k, n)
    if metric in ("dcg_exp_log", "ndcg"):
        r = rng.integers(0, 5, n).astype(np.float64)
        gain, cont = 2.0**r - 1.0, np.ones(n)
        w = naive_position_weights("log", n + 4, K)
        if metric == "ndcg":
            idcg = naive_ideal_dcg(gain, w, k)
            if idcg > 0:
                w = w / idcg
    elif metric == "dcg_linear_position":
        gain, cont = rng.integers(0, 5, n).astype(np.float64), np.ones(n)
        w = naive_position_weights("position", n + 4, K)
    elif metric == "err":
        gain = rng.choice(PROBS, n)
        cont = 1.0 - gain
        w = naive_position_weights("position", n + 4, K)
    elif metric.startswith("pfound"):
        decay = {"pfound": 0.85, "pfound_decay0": 0.0, "pfound_decay1": 1.0}[metric]
        gain = rng.choice(PROBS, n)
        cont = decay * (1.0 - gain)
        w = naive_position_weights("none", n + 4, K)
    elif metric == "mrr":
        gain = (rng.random(n) < 0.35).astype(np.float64)
        cont = 1.0 - gain
        w = naive_position_weights("position", n + 4, K)
    else:
        raise ValueError(metric)
    w[K:] = 0.0
    return gain, cont, w


def _pos_weight_arg(w, n, k):
    """The shortest position-weight array the contract allows (K + 2), viewed into a NaN-filled buffer: a
    kernel that reads past it gets NaN."""
    L = naive_truncation(k, n) + 2
    buf = np.full(L + 16, np.nan)
    buf[:L] = w[:L]
    return buf[:L]


def _scores(n, rng, spread=2):
    """Integer-valued smoothing centres: many exact ties."""
    return rng.integers(-spread, spread + 1, n).astype(np.float64)


def _run_ccs(a, z, gain, cont, w, k, sigma, shift_invariant, rng):
    """Call ccs_query on a pre-filled accumulator; check it only adds and leaves the inputs alone."""
    n = a.size
    pw = _pos_weight_arg(w, n, k)
    inputs = [a, z, gain, cont, pw]
    before = [x.copy() for x in inputs]
    out0 = rng.standard_normal(n)
    out = out0.copy()
    ccs_query(a, z, gain, cont, pw, k, sigma, shift_invariant, out, np.empty(0))
    for x, y in zip(inputs, before, strict=True):
        npt.assert_array_equal(x, y)
    # The Newton pass (curvature wanted) adds the same gradient, bit for bit, and its curvature bounds it.
    with_curv, curv = out0.copy(), np.zeros(n)
    ccs_query(a, z, gain, cont, pw, k, sigma, shift_invariant, with_curv, curv)
    npt.assert_array_equal(with_curv, out)
    alone = np.zeros(n)
    ccs_query(a, z, gain, cont, pw, k, sigma, shift_invariant, alone, np.empty(0))
    s_d = sigma * np.sqrt(n / (n - 1.0)) if shift_invariant else sigma
    assert np.all(np.abs(alone) <= s_d * curv * (1 + 1e-12) + 1e-300)
    return out - out0


def _assert_close(got, expected, context):
    tol = ATOL * (1.0 + np.max(np.abs(expected)))
    npt.assert_allclose(got, expected, rtol=0, atol=tol, err_msg=context)


def _k_values(n):
    return [*sorted({1, max(1, n // 2), max(1, n - 1), n, n + 2}), 0, -1]


# CCS: ONE DRAW, EVERY COORDINATE ==================================================================


@pytest.mark.parametrize("metric", RANKING_METRICS)
def test_ccs_query_equals_brute_force(metric):
    rng = np.random.default_rng(RANKING_METRICS.index(metric))
    for sigma in SIGMAS:
        for n in range(2, 10):
            for k in _k_values(n):
                for _ in range(2):
                    a = _scores(n, rng)
                    z = rng.standard_normal(n)
                    gain, cont, w = _encoding(metric, n, k, rng)
                    got = _run_ccs(a, z, gain, cont, w, k, sigma, True, rng)
                    expected = naive_ccs_query(a, z, gain, cont, w, k, sigma, True)
                    _assert_close(
                        got, expected, f"{metric} sigma={sigma} n={n} k={k} a={a} z={z} g={gain} c={cont}"
                    )


@pytest.mark.parametrize("metric", RANKING_METRICS)
def test_ccs_curvature_equals_brute_force(metric):
    """Newton leaves' Hessian: sum_b |jump_b| D(b) / s_d over document d's break points, coordinate by
    coordinate against the brute-force 1-D problem (both conditionings)."""
    rng = np.random.default_rng(100 + RANKING_METRICS.index(metric))
    for sigma in SIGMAS:
        for n in range(2, 9):
            for k in _k_values(n):
                for shift_invariant in (True, False):
                    a = _scores(n, rng)
                    z = rng.standard_normal(n)
                    gain, cont, w = _encoding(metric, n, k, rng)
                    curv, pw = np.zeros(n), _pos_weight_arg(w, n, k)
                    ccs_query(a, z, gain, cont, pw, k, sigma, shift_invariant, np.zeros(n), curv)
                    expected = naive_ccs_curvature(a, z, gain, cont, w, k, sigma, shift_invariant)
                    context = f"{metric} sigma={sigma} n={n} k={k} shift={shift_invariant}"
                    _assert_close(curv, expected, context)


@pytest.mark.parametrize("metric", RANKING_METRICS)
def test_ccs_query_own_noise_conditioning(metric):
    """shift_invariant=False: m_d = a_d, s_d = sigma (any metric; used by FilteredDCG)."""
    rng = np.random.default_rng(100 + RANKING_METRICS.index(metric))
    for sigma in SIGMAS:
        for n in (2, 3, 5, 8):
            for k in (1, 2, n, 0):
                a = _scores(n, rng)
                z = rng.standard_normal(n)
                gain, cont, w = _encoding(metric, n, k, rng)
                got = _run_ccs(a, z, gain, cont, w, k, sigma, False, rng)
                expected = naive_ccs_query(a, z, gain, cont, w, k, sigma, False)
                _assert_close(
                    got, expected, f"{metric} sigma={sigma} n={n} k={k} a={a} z={z} g={gain} c={cont}"
                )


def test_ccs_query_generic_cascade():
    """The kernel's algebra must not rely on the standard encodings: random non-monotone position weights,
    random gains and continuation factors in [0, 1] (exact 0 and 1 included)."""
    rng = np.random.default_rng(19)
    for sigma in SIGMAS:
        for n in range(2, 9):
            for k in (1, 2, max(1, n // 2), n, 0):
                for shift_invariant in (True, False):
                    a = _scores(n, rng)
                    z = rng.standard_normal(n)
                    gain = rng.choice([0.0, 0.3, 1.0, 2.5], n)
                    cont = rng.choice([0.0, 0.4, 0.9, 1.0], n)
                    K = naive_truncation(k, n)
                    w = rng.random(n + 4)
                    w[K:] = 0.0
                    got = _run_ccs(a, z, gain, cont, w, k, sigma, shift_invariant, rng)
                    expected = naive_ccs_query(a, z, gain, cont, w, k, sigma, shift_invariant)
                    _assert_close(
                        got, expected, f"sigma={sigma} n={n} k={k} a={a} z={z} g={gain} c={cont} w={w}"
                    )


def test_ccs_query_filtered_dcg_virtual_document():
    """CatBoost's FilteredDCG: a virtual document (a = z = gain = cont = 0), shift_invariant=False. The real
    documents' derivatives equal both the generic twin and the direct FilteredDCG definition."""
    rng = np.random.default_rng(11)
    for sigma in SIGMAS:
        for n in range(1, 10):
            for k in [*sorted({1, 2, max(1, n // 2), n, n + 1, n + 3}), 0]:
                for _ in range(2):
                    a = _scores(n, rng)
                    z = rng.standard_normal(n)
                    r = rng.integers(0, 4, n).astype(np.float64)
                    a_ext = np.append(a, 0.0)
                    z_ext = np.append(z, 0.0)
                    g_ext = np.append(r, 0.0)
                    c_ext = np.append(np.ones(n), 0.0)
                    K = naive_truncation(k, n + 1)
                    w = naive_position_weights("position", n + 5, K)
                    w[K:] = 0.0
                    got = _run_ccs(a_ext, z_ext, g_ext, c_ext, w, k, sigma, False, rng)[:n]
                    generic = naive_ccs_query(a_ext, z_ext, g_ext, c_ext, w, k, sigma, False)[:n]
                    direct = naive_filtered_ccs_query(a, z, r, w, k, sigma)
                    ctx = f"sigma={sigma} n={n} k={k} a={a} z={z} r={r}"
                    _assert_close(generic, direct, "twins disagree: " + ctx)
                    _assert_close(got, direct, ctx)


@pytest.mark.parametrize(
    ("metric", "n", "k", "sigma"),
    [
        ("dcg_exp_log", 60, 3, 1.0),
        ("dcg_exp_log", 25, 1, 0.3),
        ("ndcg", 40, 5, 2.5),
        ("err", 45, 4, 1.0),
        ("err", 20, 2, 0.3),
        ("pfound", 35, 5, 1.0),
        ("pfound_decay0", 20, 3, 1.0),
        ("mrr", 50, 5, 1.0),
        ("mrr", 20, 1, 2.5),
        ("dcg_linear_position", 30, 6, 0.3),
    ],
)
def test_ccs_query_large_query_small_k(metric, n, k, sigma):
    """n >> k: only the top k+1 of the others matter (a partial sort); every coordinate still exact."""
    rng = np.random.default_rng(n * 1000 + k)
    a = _scores(n, rng, spread=3)
    z = rng.standard_normal(n)
    gain, cont, w = _encoding(metric, n, k, rng)
    got = _run_ccs(a, z, gain, cont, w, k, sigma, True, rng)
    expected = naive_ccs_query(a, z, gain, cont, w, k, sigma, True)
    _assert_close(got, expected, f"{metric} n={n} k={k} sigma={sigma}")


def test_ccs_query_large_filtered_small_k():
    rng = np.random.default_rng(5)
    n, k, sigma = 30, 3, 1.0
    a, z = _scores(n, rng), rng.standard_normal(n)
    r = rng.integers(0, 4, n).astype(np.float64)
    w = naive_position_weights("position", n + 5, k)
    got = _run_ccs(
        np.append(a, 0.0),
        np.append(z, 0.0),
        np.append(r, 0.0),
        np.append(np.ones(n), 0.0),
        w,
        k,
        sigma,
        False,
        rng,
    )[:n]
    _assert_close(got, naive_filtered_ccs_query(a, z, r, w, k, sigma), "filtered n=30 k=3")


def test_ccs_query_far_apart_scores():
    """Well-separated scores and small sigma: most densities underflow; the estimate must stay exact."""
    rng = np.random.default_rng(3)
    for metric in ("dcg_exp_log", "err", "mrr"):
        n, k = 8, 4
        a = 6.0 * rng.permutation(n).astype(np.float64)
        z = rng.standard_normal(n)
        gain, cont, w = _encoding(metric, n, k, rng)
        for sigma in (0.3, 1.0):
            got = _run_ccs(a, z, gain, cont, w, k, sigma, True, rng)
            _assert_close(got, naive_ccs_query(a, z, gain, cont, w, k, sigma, True), metric)


def test_naive_twin_is_derivative_of_its_integral():
    """Guard on the reference itself: its value is the m-derivative of the 1-D integral it claims."""
    rng = np.random.default_rng(2)
    for metric in ("ndcg", "err", "pfound_decay0"):
        for sigma in SIGMAS:
            n, k = 5, 3
            a, z = _scores(n, rng), rng.standard_normal(n)
            gain, cont, w = _encoding(metric, n, k, rng)
            der = naive_ccs_query(a, z, gain, cont, w, k, sigma, True)
            for d in range(n):
                m, _ = naive_conditional_law(a, z, d, sigma, True)
                h = 1e-4 * sigma
                up = naive_ccs_conditional_value(a, z, gain, cont, w, k, sigma, True, d, m + h)
                down = naive_ccs_conditional_value(a, z, gain, cont, w, k, sigma, True, d, m - h)
                assert math.isclose(der[d], (up - down) / (2 * h), rel_tol=1e-6, abs_tol=1e-8)


# LSO =============================================================================================


def test_lso_query_equals_brute_force():
    rng = np.random.default_rng(13)
    for sigma in SIGMAS:
        for n in range(1, 11):
            for k in sorted({1, 2, max(1, n // 2), n}):
                for gain_kind in ("linear", "exp"):
                    a = _scores(n, rng)  # exact zeros included: the density is largest there
                    z = rng.standard_normal(n)
                    r = rng.integers(0, 4, n).astype(np.float64)
                    gain = r if gain_kind == "linear" else 2.0**r - 1.0
                    w = naive_position_weights("position" if gain_kind == "linear" else "log", n + 1, k)
                    buf = np.full(n + 17, np.nan)  # contract: length n + 1; past it is NaN
                    buf[: n + 1] = w
                    pw = buf[: n + 1]
                    before = [x.copy() for x in (a, z, gain, pw)]
                    out0 = rng.standard_normal(n)
                    out = out0.copy()
                    lso_query(a, z, gain, pw, sigma, out)
                    for x, y in zip((a, z, gain, pw), before, strict=True):
                        npt.assert_array_equal(x, y)
                    expected = naive_lso_query(a, z, gain, w, sigma)
                    _assert_close(out - out0, expected, f"sigma={sigma} n={n} k={k} a={a} z={z} g={gain}")


# OBJECTIVE: THE RELEVANCE SHIFT ENTERS ONLY THROUGH a = f - sigma mu r =============================


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: stochrank.ndcg(3, **kw),
        lambda **kw: stochrank.dcg(None, gain="linear", **kw),
        lambda **kw: stochrank.err(4, max_grade=3, **kw),
        lambda **kw: stochrank.pfound(4, max_grade=3, **kw),
        lambda **kw: stochrank.mrr(3, **kw),
    ],
    ids=["ndcg", "dcg", "err", "pfound", "mrr"],
)
def test_relevance_shift_identity(make):
    """gradient(f; mu) == gradient(f - sigma mu r; mu = 0) with the same seed and SFA off (with SFA on they
    differ: SFA projects on f, not on the shifted scores)."""
    rng = np.random.default_rng(17)
    group = np.array([5, 1, 7, 3, 6])
    labels = rng.integers(0, 4, group.sum()).astype(np.float64)
    f = rng.integers(-2, 3, group.sum()).astype(np.float64)
    sigma, mu = 0.6, 0.7
    g_mu = make(sigma=sigma, mu=mu, sfa=0.0, n_samples=4, seed=3).gradient(f, labels, group)
    g_shift = make(sigma=sigma, mu=0.0, sfa=0.0, n_samples=4, seed=3).gradient(
        f - sigma * mu * labels, labels, group
    )
    g_plain = make(sigma=sigma, mu=0.0, sfa=0.0, n_samples=4, seed=3).gradient(f, labels, group)
    npt.assert_allclose(g_mu, g_shift, rtol=1e-12, atol=1e-12 * np.max(np.abs(g_mu)))
    assert np.max(np.abs(g_mu - g_plain)) > 1e-3  # mu matters
    sfa_mu = make(sigma=sigma, mu=mu, sfa=1.0, n_samples=4, seed=3, hessian="unit").gradient(f, labels, group)
    sfa_shift = make(sigma=sigma, mu=0.0, sfa=1.0, n_samples=4, seed=3, hessian="unit").gradient(
        f - sigma * mu * labels, labels, group
    )
    assert np.max(np.abs(sfa_mu - sfa_shift)) > 1e-6
