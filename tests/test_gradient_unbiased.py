"""Unbiasedness: the objectives' gradient, averaged over many noise draws, equals the gradient of the
smoothed metric E[M(f - sigma mu r + sigma eps)] estimated independently by finite differences with common
random numbers (``tests/naive.py``), within 4 combined standard errors plus a bound on the FD bias.

Also pins CatBoost's sigma quirk (its conditional mean adds the unscaled noise mean): for sigma != 1 it is an
exact derivative of a *different* 1-D integral, and its average misses the smoothed gradient.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.testing as npt
import pytest

import stochrank
from stochrank.kernels import ccs_query

from .naive import (
    naive_ap_metric_batch,
    naive_auc_metric_batch,
    naive_cascade_metric_batch,
    naive_ccs_batch,
    naive_ccs_conditional_value,
    naive_ccs_query,
    naive_conditional_law,
    naive_fd_bias_bound,
    naive_fd_gradient,
    naive_filtered_dcg_batch,
    naive_ideal_dcg,
    naive_lso_metric_batch,
    naive_position_weights,
)

N_FD = 1_200_000  # finite-difference draws
REPLICAS, SAMPLES = 40, 1500  # the query is repeated REPLICAS times, each with n_samples=SAMPLES draws
Z_BOUND = 4.0


@dataclass
class Case:
    """One query and the smoothed metric the objective must differentiate."""

    name: str
    make: Callable[..., stochrank.StochasticRankObjective]
    f: np.ndarray
    labels: np.ndarray
    sigma: float
    metric_batch: Callable[[np.ndarray], np.ndarray]  # M for each row of noisy scores
    upper: float  # an upper bound of M (M >= 0): |jump| <= upper, total variation <= n * upper
    ranking: bool = True  # translation invariant: the objective removes the mean
    thresholds: tuple = ()


def _cascade(gain, cont, w, k):
    return lambda X: naive_cascade_metric_batch(X, gain, cont, w, k)


def _ndcg_case():
    labels = np.array([3.0, 0.0, 1.0, 2.0, 0.0])
    k = 3
    gain = 2.0**labels - 1.0
    w = naive_position_weights("log", 8, k)
    w = w / naive_ideal_dcg(gain, w, k)
    return Case(
        "ndcg@3",
        lambda **kw: stochrank.ndcg(k, **kw),
        np.array([0.5, 0.5, 0.0, -0.3, 0.2]),
        labels,
        0.7,
        _cascade(gain, np.ones(5), w, k),
        1.0,
    )


def _err_case():
    R = np.array([1.0, 0.5, 0.0, 0.25, 0.75])
    w = naive_position_weights("position", 8)
    return Case(
        "err",
        lambda **kw: stochrank.err(None, **kw),
        np.array([0.0, 1.0, 0.0, 1.0, -0.5]),
        R,
        1.5,
        _cascade(R, 1.0 - R, w, 0),
        1.0,
    )


def _pfound_case():
    R = np.array([0.5, 1.0, 0.0, 0.2])
    k, decay = 3, 0.85
    w = naive_position_weights("none", 8, k)
    return Case(
        "pfound@3",
        lambda **kw: stochrank.pfound(k, decay=decay, **kw),
        np.array([0.2, 0.0, 0.0, -0.4]),
        R,
        0.5,
        _cascade(R, decay * (1.0 - R), w, k),
        3.0,
    )


def _mrr_case():
    labels = np.array([0.0, 1.0, 0.0, 2.0, 0.0])
    rel = (labels > 0).astype(np.float64)
    k = 3
    w = naive_position_weights("position", 8, k)
    return Case(
        "mrr@3",
        lambda **kw: stochrank.mrr(k, **kw),
        np.array([0.4, 0.0, 0.4, -0.2, 0.1]),
        labels,
        0.8,
        _cascade(rel, 1.0 - rel, w, k),
        1.0,
    )


def _dcg_case():
    labels = np.array([2.0, 2.0, 0.0, 1.0])
    w = naive_position_weights("position", 8)
    return Case(
        "dcg-linear",
        lambda **kw: stochrank.dcg(None, gain="linear", discount="position", **kw),
        np.array([1.0, 0.0, 0.0, 1.0]),
        labels,
        2.0,
        _cascade(labels, np.ones(4), w, 0),
        5.0,
    )


def _lso_case():
    labels = np.array([2.0, 0.0, 1.0, 3.0])
    k = 2
    w = naive_position_weights("position", 5, k)
    return Case(
        "lso@2-input",
        lambda **kw: stochrank.lso(k, **kw),
        np.array([0.3, -0.2, 0.0, 0.5]),
        labels,
        0.6,
        lambda X: naive_lso_metric_batch(X, labels, w),
        5.0,
        ranking=False,
        thresholds=(0.0,),
    )


def _filtered_case():
    labels = np.array([1.0, 2.0, 0.0, 3.0])
    k = 3
    w = naive_position_weights("position", 5, k)
    return Case(
        "filtered-dcg@3",
        lambda **kw: stochrank.lso(k, order="score", **kw),
        np.array([0.2, -0.1, 0.4, 0.0]),
        labels,
        0.9,
        lambda X: naive_filtered_dcg_batch(X, labels, w, k),
        6.0,
        ranking=False,
        thresholds=(0.0,),
    )


def _binary_cases():
    """AUC, MAP, MAP@2 and precision@2 (issue 15): relevant = label > 0, graded labels for the shift."""
    labels = np.array([0.0, 2.0, 0.0, 1.0, 0.0])
    rel = labels > 0
    f = np.array([0.3, 0.0, 0.3, -0.2, 0.1])
    w = naive_position_weights("none", 8, 2)
    return [
        Case(
            "auc",
            lambda **kw: stochrank.auc(**kw),
            f,
            labels,
            0.8,
            lambda X: naive_auc_metric_batch(X, rel),
            1.0,
        ),
        Case(
            "map",
            lambda **kw: stochrank.map(**kw),
            f,
            labels,
            0.7,
            lambda X: naive_ap_metric_batch(X, rel, 0),
            1.0,
        ),
        Case(
            "map@2",
            lambda **kw: stochrank.map(2, **kw),
            f,
            labels,
            0.9,
            lambda X: naive_ap_metric_batch(X, rel, 2),
            1.0,
        ),
        Case(
            "precision@2",
            lambda **kw: stochrank.precision(2, **kw),
            f,
            labels,
            0.6,
            _cascade(rel / 2.0, np.ones(5), w, 2),
            1.0,
        ),
    ]


CASES = {
    c.name: c
    for c in (
        *_binary_cases(),
        _ndcg_case(),
        _err_case(),
        _pfound_case(),
        _mrr_case(),
        _dcg_case(),
        _lso_case(),
        _filtered_case(),
    )
}
PARAMS = [
    ("ndcg@3", 0.0),
    ("ndcg@3", 0.4),
    ("err", 0.0),
    ("err", 0.5),
    ("pfound@3", 0.0),
    ("pfound@3", 0.6),
    ("mrr@3", 0.0),
    ("mrr@3", 1.0),
    ("dcg-linear", 0.3),
    ("auc", 0.0),
    ("auc", 0.5),
    ("map", 0.0),
    ("map", 0.5),
    ("map@2", 0.0),
    ("precision@2", 0.0),
    ("precision@2", 0.7),
    ("lso@2-input", None),
    ("filtered-dcg@3", None),
]


def _objective_mean(case, mu, seed):
    """Mean and standard error of the objective's gradient: REPLICAS copies of the query, each its own
    noise stream, SAMPLES draws each, SFA off."""
    n = case.f.size
    kw = {} if mu is None else {"mu": mu}
    obj = case.make(sigma=case.sigma, sfa=0.0, n_samples=SAMPLES, seed=seed, **kw)
    g = obj.gradient(np.tile(case.f, REPLICAS), np.tile(case.labels, REPLICAS), np.full(REPLICAS, n))
    g = g.reshape(REPLICAS, n)
    return g.mean(axis=0), g.std(axis=0, ddof=1) / math.sqrt(REPLICAS)


@pytest.mark.parametrize(("name", "mu"), PARAMS, ids=[f"{n}-mu{m}" for n, m in PARAMS])
def test_mean_gradient_matches_finite_differences(name, mu):
    case = CASES[name]
    n = case.f.size
    a = case.f - case.sigma * (mu or 0.0) * case.labels
    h = 0.1 * case.sigma
    fd, fd_se = naive_fd_gradient(
        case.metric_batch,
        a,
        case.sigma,
        h,
        N_FD,
        np.random.default_rng(len(name)),
        case.thresholds,
        centre=case.ranking,
    )
    g, g_se = _objective_mean(case, mu, seed=5)
    allowance = naive_fd_bias_bound(h, case.sigma, (n + len(case.thresholds)) * case.upper)
    bound = Z_BOUND * np.sqrt(g_se**2 + fd_se**2) + allowance
    assert np.all(np.abs(g - fd) <= bound), (
        f"{name} mu={mu}\n objective {g}\n finite-d. {fd}\n diff {g - fd}\n bound {bound}"
    )
    # the comparison has power: the gradient is far from zero compared to the tolerance
    assert np.max(np.abs(fd)) > 10 * np.max(bound)


def test_relevance_shift_moves_the_gradient():
    """mu > 0 changes the smoothed gradient by much more than the test tolerance (else the mu cases above
    could not catch a wrong shift), and the shift's sign matters."""
    case = CASES["ndcg@3"]
    g0, se0 = _objective_mean(case, 0.0, seed=6)
    g1, se1 = _objective_mean(case, 0.4, seed=6)
    assert np.max(np.abs(g1 - g0) / np.sqrt(se0**2 + se1**2)) > 30


# CATBOOST'S SIGMA QUIRK ===========================================================================

A3 = np.array([0.0, 0.3, -0.2])
GAIN3 = np.array([7.0, 1.0, 0.0])
CONT3 = np.ones(3)
W3 = naive_position_weights("log", 6)


def test_catboost_conditioning_single_draw():
    """Both conditionings are exact derivatives of their own 1-D integrals; for sigma != 1 they differ, and
    the kernel implements the sigma-scaled one."""
    rng = np.random.default_rng(21)
    for sigma in (0.4, 2.5):
        z = rng.standard_normal(3)
        ours = naive_ccs_query(A3, z, GAIN3, CONT3, W3, 0, sigma, True, "exact")
        cb = naive_ccs_query(A3, z, GAIN3, CONT3, W3, 0, sigma, True, "catboost")
        out = np.zeros(3)
        ccs_query(A3, z, GAIN3, CONT3, W3, 0, sigma, True, out, np.empty(0))
        npt.assert_allclose(out, ours, rtol=0, atol=1e-10)
        assert np.max(np.abs(cb - ours)) > 1e-3
        for conditioning, est in (("exact", ours), ("catboost", cb)):
            for d in range(3):
                m, _ = naive_conditional_law(A3, z, d, sigma, True, conditioning)
                eps = 1e-4 * sigma
                up = naive_ccs_conditional_value(
                    A3, z, GAIN3, CONT3, W3, 0, sigma, True, d, m + eps, conditioning
                )
                down = naive_ccs_conditional_value(
                    A3, z, GAIN3, CONT3, W3, 0, sigma, True, d, m - eps, conditioning
                )
                assert math.isclose(est[d], (up - down) / (2 * eps), rel_tol=1e-6, abs_tol=1e-8)


def _se(x):
    return x.std(axis=0, ddof=1) / math.sqrt(x.shape[0])


def test_catboost_conditioning_is_biased_unless_sigma_is_one():
    rng = np.random.default_rng(22)
    Z = rng.standard_normal((100_000, 3))
    # sigma = 1: the two conditionings coincide draw by draw
    npt.assert_allclose(
        naive_ccs_batch(A3, Z[:1000], GAIN3, CONT3, W3, 0, 1.0, "catboost"),
        naive_ccs_batch(A3, Z[:1000], GAIN3, CONT3, W3, 0, 1.0, "exact"),
        rtol=0,
        atol=1e-13,
    )
    sigma = 0.4
    ours = naive_ccs_batch(A3, Z, GAIN3, CONT3, W3, 0, sigma, "exact")
    cb = naive_ccs_batch(A3, Z, GAIN3, CONT3, W3, 0, sigma, "catboost")
    for i in range(3):  # the batch twin is the scalar twin
        npt.assert_allclose(ours[i], naive_ccs_query(A3, Z[i], GAIN3, CONT3, W3, 0, sigma, True), atol=1e-12)
        npt.assert_allclose(
            cb[i], naive_ccs_query(A3, Z[i], GAIN3, CONT3, W3, 0, sigma, True, "catboost"), atol=1e-12
        )
    h = 0.1 * sigma
    fd, fd_se = naive_fd_gradient(
        lambda X: naive_cascade_metric_batch(X, GAIN3, CONT3, W3, 0),
        A3,
        sigma,
        h,
        600_000,
        np.random.default_rng(23),
    )
    allowance = naive_fd_bias_bound(h, sigma, 3 * naive_ideal_dcg(GAIN3, W3, 0))
    tol_ours = Z_BOUND * np.sqrt(_se(ours) ** 2 + fd_se**2) + allowance
    assert np.all(np.abs(ours.mean(axis=0) - fd) <= tol_ours), (ours.mean(axis=0), fd, tol_ours)
    z_cb = np.abs(cb.mean(axis=0) - fd) / (np.sqrt(_se(cb) ** 2 + fd_se**2) + allowance)
    assert np.max(z_cb) > 10, (cb.mean(axis=0), fd)
