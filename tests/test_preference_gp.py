"""Tests of stochrank.gp.PreferenceGP, expectation propagation for preference GPs (seed 004).

EP against closed forms, numerical integration, Monte Carlo and finite differences; recovery of a known
utility; integration with softrank; conventions and errors.

References used here are independent of stochrank/gp: scipy.stats.truncnorm / skewnorm (one duel),
Tallis' formula with scipy.stats.multivariate_normal.cdf and 2·10⁶-draw Monte Carlo (two and three duels),
scipy.integrate.quad (probit tilted moments), mpmath (tail moments), a double loop (pairs).

Runtime ~25 s on a shared 2-vCPU machine.
"""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import lightgbm as lgb
import mpmath
import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import log_ndtr
from scipy.stats import multivariate_normal, norm, skewnorm, truncnorm
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from threadpoolctl import threadpool_limits

import stochrank
import stochrank.gp._evidence
from stochrank.gp import CholeskyJitterWarning, PreferenceGP, pairs_from_labels
from stochrank.gp._ep import jittered_cholesky, site_update, truncation_moments

DATA = Path(__file__).resolve().parent / "data" / "catboost_querywise"
METHODS = ("ep-truncated", "ep-probit")
TIGHT = {"optimize": False, "tol": 1e-12, "max_iter": 5000}


# ------------------------------------------------------------------------------ naive references
def naive_rbf(Xa, Xb, variance, lengthscale):
    """k(a, b) = s exp(-sum_d (a_d - b_d)^2 / (2 l_d^2)), from the pairwise differences."""
    diff = (np.asarray(Xa)[:, None, :] - np.asarray(Xb)[None, :, :]) / lengthscale
    return variance * np.exp(-0.5 * np.sum(diff**2, axis=2))


def naive_duel_operator(pairs, n):
    """Build A of v = A f + noise: row i is +1 at the loser, -1 at the winner."""
    A = np.zeros((len(pairs), n))
    for i, (winner, loser) in enumerate(pairs):
        A[i, loser] += 1.0
        A[i, winner] -= 1.0
    return A


def naive_tallis_mean(S):
    """Return P(v < 0) and E[v | v < 0] for v ~ N(0, S) by Tallis' formula (1961).

    E[v | v < 0] = S ∇_μ log P(v < 0) with ∂P/∂μ_i = -N(0; 0, S_ii) P(v_-i < 0 | v_i = 0); the
    (t-1)-dimensional probabilities by scipy's numerical integration.
    """
    t = S.shape[0]
    Z = multivariate_normal(np.zeros(t), S).cdf(np.zeros(t)) if t > 1 else 0.5
    grad = np.zeros(t)
    for i in range(t):
        rest = [j for j in range(t) if j != i]
        cond = S[np.ix_(rest, rest)] - np.outer(S[rest, i], S[i, rest]) / S[i, i]
        p_rest = multivariate_normal(np.zeros(t - 1), cond).cdf(np.zeros(t - 1)) if t > 2 else 0.5
        grad[i] = -norm.pdf(0.0, scale=np.sqrt(S[i, i])) * p_rest
    return Z, S @ grad / Z


def naive_rejection_moments(K, A, noise, n_draws, seed):
    """Mean and covariance of f | A f + e < 0 by rejection from the prior (e ~ N(0, 2 noise² I))."""
    rng = np.random.default_rng(seed)
    L = np.linalg.cholesky(K + 1e-12 * np.eye(len(K)))
    with threadpool_limits(limits=1, user_api="blas"):  # thin products: threads only contend
        f = rng.standard_normal((n_draws, len(K))) @ L.T
        v = f @ A.T + np.sqrt(2.0) * noise * rng.standard_normal((n_draws, len(A)))
    keep = (v < 0).all(axis=1)
    return f[keep].mean(0), np.cov(f[keep].T), v[keep].mean(0), v[keep].var(0), int(keep.sum())


def naive_probit_tilted(m, s2, kappa2):
    """Normaliser, mean and variance of N(z | m, s2) Φ(-z / κ) by quadrature."""
    s = np.sqrt(s2)
    kappa = np.sqrt(kappa2)

    def moment(k):
        return quad(lambda z: z**k * norm.pdf(z, m, s) * norm.cdf(-z / kappa), m - 12 * s, m + 12 * s,
                    epsabs=1e-13, epsrel=1e-12, limit=200)[0]  # fmt: skip

    Z = moment(0)
    mean = moment(1) / Z
    return Z, mean, moment(2) / Z - mean**2


def naive_pairs(y, group):
    """Every within-query (i, j) with y_i > y_j, by a double loop."""
    out, start = [], 0
    for size in group:
        for i in range(start, start + size):
            for j in range(start, start + size):
                if y[i] > y[j]:
                    out.append((i, j))
        start += size
    return out


def branin_utility(u):
    """-Branin on [-5, 10] x [0, 15] (rescaled to the unit square), standardised over the square."""

    def branin(x):
        x1, x2 = 15 * x[:, 0] - 5, 15 * x[:, 1]
        return (
            (x2 - 5.1 / (4 * np.pi**2) * x1**2 + 5 / np.pi * x1 - 6) ** 2
            + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x1)
            + 10
        )

    ref = -branin(np.random.default_rng(123).uniform(0, 1, (20000, 2)))
    return (-branin(u) - ref.mean()) / ref.std()


def noisy_duels(f, n_duels, noise, rng):
    """Random duels among the documents, each won by the larger of f + N(0, noise²) draws."""
    n = f.size
    a = rng.integers(0, n, n_duels)
    b = (a + rng.integers(1, n, n_duels)) % n
    first = f[a] + noise * rng.standard_normal(n_duels) > f[b] + noise * rng.standard_normal(n_duels)
    return np.where(first[:, None], np.c_[a, b], np.c_[b, a])


def small_problem():
    """Seven documents in the unit square and eight duels among them."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (7, 2))
    pairs = np.array([[0, 1], [1, 2], [3, 2], [4, 5], [6, 0], [2, 5], [3, 6], [1, 4]])
    return X, pairs


# ------------------------------------------------------------------------ stable tail moments
@pytest.mark.parametrize("beta", [-1e6, -1e3, -60.0, -10.0, -4.0001, -3.9999, -1.0, 0.0, 2.0, 8.0, 30.0])
def test_truncation_moments_match_mpmath_in_both_tails(beta):
    """Tail moments λ = φ/Φ, c = β + λ, g = Var[u | u < β] = 1 - λc match 60-digit mpmath to 1e-12.

    Where the direct formula would lose every digit (β = -1e6: g ≈ 1e-12 is 1 - 0.999999999999).
    """
    mpmath.mp.dps = 60
    b = mpmath.mpf(beta)
    Phi = mpmath.ncdf(b)
    lam = mpmath.npdf(b) / Phi
    log_phi = mpmath.log(Phi) if beta < 0 else mpmath.log1p(-mpmath.ncdf(-b))
    expect = [float(log_phi), float(lam), float(b + lam), float(1 - lam * (b + lam))]
    got = [float(x[0]) for x in truncation_moments(np.array([beta]))]
    np.testing.assert_allclose(got, expect, rtol=1e-12, atol=0.0)


def test_site_update_is_finite_for_very_negative_beta():
    """A cavity 1e4 standard deviations on the wrong side: finite site, tilted mean just below 0."""
    log_z, tau, nu, mean, var = site_update(np.array([1e4]), np.array([1.0]), 0.0)
    assert np.isfinite([log_z[0], tau[0], nu[0]]).all()
    mpmath.mp.dps = 60
    x = mpmath.mpf(1e4)
    lam = mpmath.npdf(-x) / mpmath.ncdf(-x)
    np.testing.assert_allclose([mean[0], var[0]], [float(x - lam), float(1 - lam * (lam - x))], rtol=1e-12)
    assert -1e-3 < mean[0] < 0 < var[0] < 1e-7  # scipy's truncnorm.mean gives -1.6e-4 here, 60 % off


# ----------------------------------------------------------------------------- one duel: exact
@pytest.mark.parametrize("method", METHODS)
def test_one_duel_posterior_equals_truncated_and_skew_normal_moments(method):
    """One site: EP is exact, to 1e-8.

    v | v < 0 is a truncated normal and f at any point a skew normal with shape a = -ρ/√(1-ρ²),
    ρ = corr(f(x), v): means and variances to 1e-8 at the winner, the loser and a third point;
    log Z_EP = log P(v < 0) = log 1/2.
    """
    X = np.array([[0.1, 0.2], [0.6, 0.4], [0.3, 0.9]])
    ls, s, noise = np.array([0.4, 0.7]), 1.3, 0.25
    gp = PreferenceGP(lengthscale=ls, variance=s, noise=noise, method=method, **TIGHT).fit(X[:2], [[0, 1]])
    K = naive_rbf(X, X, s, ls)
    cov_fv = K[:, 1] - K[:, 0]  # v = f(loser) - f(winner) + noise
    var_v = K[0, 0] + K[1, 1] - 2 * K[0, 1] + 2 * noise**2
    if method == "ep-truncated":
        np.testing.assert_allclose(
            gp.posterior_mean_, truncnorm.mean(-np.inf, 0, scale=np.sqrt(var_v)), atol=1e-8
        )
        np.testing.assert_allclose(
            gp.posterior_var_, truncnorm.var(-np.inf, 0, scale=np.sqrt(var_v)), atol=1e-8
        )
    rho = cov_fv / np.sqrt(np.diag(K) * var_v)
    shape = -rho / np.sqrt(1 - rho**2)
    mean, std = gp.predict(X, return_std=True)
    np.testing.assert_allclose(mean, skewnorm.mean(shape, scale=np.sqrt(np.diag(K))), atol=1e-8)
    np.testing.assert_allclose(std**2, skewnorm.var(shape, scale=np.sqrt(np.diag(K))), atol=1e-8)
    np.testing.assert_allclose(gp.log_marginal_likelihood_, np.log(0.5), atol=1e-10)


# ------------------------------------------------------------------- two and three duels
CASES = {
    "chain of 2 on 3 points": (3, [[0, 1], [1, 2]]),
    "3 duels on 4 points": (4, [[0, 1], [1, 2], [3, 2]]),
    "cycle of 3 on 3 points": (3, [[0, 1], [1, 2], [2, 0]]),
    "3 duels, two winners": (4, [[0, 1], [2, 1], [3, 0]]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_few_duels_against_numerical_integration_and_monte_carlo(case):
    """EP is within its known error of the exact posterior of 2-3 duels; both formulations agree.

    Lengthscale 0.5, s = 1, σ = 0.3, points in the unit square, plus a query point: Z = P(v < 0) by
    scipy's multivariate normal CDF, E[v] and E[f] by Tallis' formula (exact up to the CDF's 1e-6),
    variances by rejection from 2·10⁶ prior draws.

    Known EP error on these four cases (measured, both formulations; largest on the cycle):
    |Δ log Z| <= 0.002, |Δ E[f]| <= 0.0005 posterior sd, |Δ E[v]| <= 0.003 sd, sd of f within 0.2 %,
    variance of v within 1.5 % (Monte Carlo error <= 0.3 % of an sd). Tolerances: 0.01, 0.005 sd,
    0.005 sd, 2 % and 4 %. The two formulations agree to 1e-7.
    """
    n, pairs = CASES[case]
    pairs = np.array(pairs)
    rng = np.random.default_rng(3 + n + len(pairs))
    X = np.vstack([rng.uniform(0, 1, (n, 2)), [[0.5, 0.5]]])
    ls, s, noise = np.array([0.5, 0.5]), 1.0, 0.3
    K = naive_rbf(X, X, s, ls)
    A = naive_duel_operator(pairs, n + 1)
    S = A @ K @ A.T + 2 * noise**2 * np.eye(len(pairs))
    Z, mean_v = naive_tallis_mean(S)
    mean_f = K @ A.T @ np.linalg.solve(S, mean_v)  # E[f | v] is linear in v
    _, cov_f, _, var_v, kept = naive_rejection_moments(K, A, noise, 2_000_000, seed=1)
    assert kept > 30_000
    sd_f = np.sqrt(np.diag(cov_f))

    fits = [
        PreferenceGP(lengthscale=ls, variance=s, noise=noise, method=m, **TIGHT).fit(X[:n], pairs)
        for m in METHODS
    ]
    for gp in fits:
        mean, std = gp.predict(X, return_std=True)
        assert abs(gp.log_marginal_likelihood_ - np.log(Z)) < 0.01
        np.testing.assert_array_less(np.abs(mean - mean_f), 0.005 * sd_f)
        np.testing.assert_allclose(std, sd_f, rtol=0.02)
        np.testing.assert_allclose(gp.predict_cov(X), gp.predict_cov(X).T)
        np.testing.assert_allclose(np.diag(gp.predict_cov(X)), std**2, rtol=1e-10)
    truncated, probit = fits
    np.testing.assert_array_less(np.abs(truncated.posterior_mean_ - mean_v), 0.005 * np.sqrt(var_v))
    np.testing.assert_allclose(truncated.posterior_var_, var_v, rtol=0.04)
    np.testing.assert_allclose(truncated.log_marginal_likelihood_, probit.log_marginal_likelihood_, atol=1e-9)
    np.testing.assert_allclose(truncated.predict_cov(X), probit.predict_cov(X), atol=1e-7)
    np.testing.assert_allclose(truncated.predict(X), probit.predict(X), atol=1e-7)


# ------------------------------------------------------------------------- EP fixed point
def test_fixed_point_satisfies_the_seed_moment_matching_at_every_site():
    """The EP fixed point satisfies the seed's moment-matching equations at every site.

    With β = -μ̄/σ̄ from each site's cavity and λ = φ(β)/Φ(β) (scipy, naive): E_r[v_j] = posterior mean
    and V_r[v_j] = posterior variance (truncnorm), and the sites are the seed's
    σ̃² = ((βλ + λ²)^-1 - 1) σ̄² and μ̃ = μ̄ - σ̄/(β + λ). The seed prints E_r[v_j] = μ̄ + λσ̄ and
    μ̃ = μ̄ + σ̄/(β + λ): the moments of a truncation to v > 0, which the fixed point does not satisfy.
    """
    X, pairs = small_problem()
    gp = PreferenceGP(lengthscale=[0.3, 0.6], variance=1.5, noise=0.2, **TIGHT).fit(X, pairs)
    tau, nu, mean, var = gp.site_precision_, gp.site_natural_mean_, gp.posterior_mean_, gp.posterior_var_
    cav_var = 1.0 / (1.0 / var - tau)
    cav_mean = cav_var * (mean / var - nu)
    cav_sd = np.sqrt(cav_var)
    np.testing.assert_allclose(truncnorm.mean(-np.inf, -cav_mean / cav_sd, cav_mean, cav_sd), mean, rtol=1e-9)
    np.testing.assert_allclose(truncnorm.var(-np.inf, -cav_mean / cav_sd, cav_mean, cav_sd), var, rtol=1e-8)
    beta = -cav_mean / cav_sd
    lam = norm.pdf(beta) / norm.cdf(beta)
    np.testing.assert_allclose(1.0 / tau, (1.0 / (beta * lam + lam**2) - 1.0) * cav_var, rtol=1e-8)
    np.testing.assert_allclose(nu / tau, cav_mean - cav_sd / (beta + lam), rtol=1e-8)
    assert np.all(np.abs(cav_mean + lam * cav_sd - mean) > 0.1 * np.sqrt(var))  # the printed sign fails
    # damping changes the path, not the fixed point
    undamped = PreferenceGP(lengthscale=[0.3, 0.6], variance=1.5, noise=0.2, damping=1.0, **TIGHT).fit(
        X, pairs
    )
    np.testing.assert_allclose(undamped.posterior_mean_, mean, atol=1e-9)
    assert gp.converged_
    assert undamped.converged_
    assert gp.n_skipped_updates_ == 0


def test_probit_sites_match_quadrature_tilted_moments():
    """With ep-probit, every site matches the tilted moments computed by quadrature.

    The posterior marginal of z equals the mean and variance of N(z | cavity) Φ(-z/(√2σ)).
    """
    X, pairs = small_problem()
    gp = PreferenceGP(lengthscale=[0.3, 0.6], variance=1.5, noise=0.2, method="ep-probit", **TIGHT).fit(
        X, pairs
    )
    tau, nu, mean, var = gp.site_precision_, gp.site_natural_mean_, gp.posterior_mean_, gp.posterior_var_
    cav_var = 1.0 / (1.0 / var - tau)
    cav_mean = cav_var * (mean / var - nu)
    for j in range(len(pairs)):
        _, m, v = naive_probit_tilted(cav_mean[j], cav_var[j], 2 * 0.2**2)
        np.testing.assert_allclose([mean[j], var[j]], [m, v], rtol=1e-7)


# -------------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n_inducing", [None, 4])
def test_log_z_gradient_matches_central_differences(method, n_inducing):
    """The analytic gradient of log Z_EP matches central differences in every hyperparameter.

    d log Z_EP / d(log ℓ_1, log ℓ_2, log s, log σ), exact and FITC, h = 1e-5, EP to 1e-12 at every point;
    and log Z is invariant under (s, σ) -> (c² s, c σ).
    """
    X, pairs = small_problem()
    gp = PreferenceGP(lengthscale=[0.4, 0.7], variance=1.5, noise=0.3, method=method, n_inducing=n_inducing,
                      random_state=0, **TIGHT).fit(X, pairs)  # fmt: skip
    theta = gp.theta_
    value, grad = gp.log_marginal_likelihood(theta, eval_gradient=True)
    h = 1e-5
    fd = []
    for i in range(theta.size):
        step = np.zeros(theta.size)
        step[i] = h
        fd.append(
            (gp.log_marginal_likelihood(theta + step) - gp.log_marginal_likelihood(theta - step)) / (2 * h)
        )
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    assert np.all(np.abs(grad[:3]) > 1e-3)  # a non-trivial point: every gradient is exercised
    np.testing.assert_allclose(
        gp.log_marginal_likelihood(theta + np.array([0, 0, 2 * 0.7, 0.7])), value, atol=1e-9
    )
    np.testing.assert_allclose(2 * grad[2] + grad[3], 0.0, atol=1e-9)


def test_optimised_hyperparameters_are_a_stationary_point():
    """optimize=True raises log Z and ends where the gradient in (log ℓ, log s) vanishes."""
    X, pairs = small_problem()
    start = PreferenceGP(lengthscale=0.5, ard=False, noise=0.3, **TIGHT).fit(X, pairs)
    gp = PreferenceGP(lengthscale=0.5, ard=False, noise=0.3, tol=1e-10).fit(X, pairs)
    assert gp.log_marginal_likelihood_ > start.log_marginal_likelihood_ + 1e-3
    _, grad = gp.log_marginal_likelihood(gp.theta_, eval_gradient=True)
    assert np.max(np.abs(grad[:2])) < 1e-3
    assert gp.noise_ == 0.3  # fixed: it sets the utility's unit
    assert gp.n_optimizer_iter_ > 0
    assert gp.lengthscale_.shape == (2,)


# ------------------------------------------------------------------------------ sparse form
@pytest.mark.parametrize("method", METHODS)
def test_sparse_with_every_document_as_inducing_point_is_exact_ep(method):
    """FITC with all the duels' documents as inducing inputs is the exact model (up to K_uu's 1e-8 jitter)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (12, 2))
    pairs = rng.integers(0, 12, (30, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kw = {"lengthscale": [0.3, 0.5], "variance": 1.3, "noise": 0.2, "method": method, **TIGHT}
    exact = PreferenceGP(**kw).fit(X, pairs)
    sparse = PreferenceGP(n_inducing=len(np.unique(pairs)), **kw).fit(X, pairs)
    Xt = rng.uniform(0, 1, (20, 2))
    np.testing.assert_allclose(sparse.log_marginal_likelihood_, exact.log_marginal_likelihood_, atol=1e-6)
    np.testing.assert_allclose(sparse.predict(Xt), exact.predict(Xt), atol=1e-5)
    np.testing.assert_allclose(sparse.predict_cov(Xt), exact.predict_cov(Xt), atol=1e-5)
    assert sparse.basis_.shape[0] == len(np.unique(pairs))
    assert sparse.jitter_ == 0.0


def test_sparse_fit_on_thousands_of_duels_stays_close_to_exact():
    """On 2,000 duels, FITC with 40 inducing points predicts like exact EP.

    200 documents; exact EP is FITC with all 200 documents as inducing points (the previous test), same
    hyperparameters: duel probabilities within 0.1, the same winner in 95 % of 300 held-out duels.
    """
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (200, 2))
    pairs = noisy_duels(branin_utility(X), 2000, 0.3, rng)
    kw = {"lengthscale": [0.2, 0.4], "variance": 2.0, "noise": 0.3, "optimize": False, "random_state": 0}
    sparse = PreferenceGP(n_inducing=40, **kw).fit(X, pairs)
    exact = PreferenceGP(n_inducing=200, **kw).fit(X, pairs)
    Xa, Xb = rng.uniform(0, 1, (300, 2)), rng.uniform(0, 1, (300, 2))
    p_sparse, p_exact = sparse.duel_probability(Xa, Xb), exact.duel_probability(Xa, Xb)
    assert np.max(np.abs(p_sparse - p_exact)) < 0.1
    assert np.mean((p_sparse > 0.5) == (p_exact > 0.5)) > 0.95


# --------------------------------------------------------------------------------- recovery
def test_recovers_branin_with_duel_accuracy_near_the_bayes_rate():
    """On -Branin, held-out duel accuracy is within 0.05 of the Bayes rate.

    Standardised -Branin, 50 documents, 200 duels with σ = 0.3, hyperparameters by log Z_EP: the expected
    accuracy on 500 held-out duels between new points (each counted with the true win probability p, so
    no sampling noise) is within 0.05 of the Bayes rate E[max(p, 1 - p)] (measured over 6 seeds: 0.022 to
    0.051 below it); f's ordering matches the truth (Spearman > 0.9).
    """
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 1, (50, 2))
    noise = 0.3
    gp = PreferenceGP(lengthscale=0.3, noise=noise).fit(X, noisy_duels(branin_utility(X), 200, noise, rng))
    Xa, Xb = rng.uniform(0, 1, (500, 2)), rng.uniform(0, 1, (500, 2))
    p = norm.cdf((branin_utility(Xa) - branin_utility(Xb)) / (np.sqrt(2) * noise))
    bayes = np.mean(np.maximum(p, 1 - p))
    accuracy = np.mean(np.where(gp.duel_probability(Xa, Xb) > 0.5, p, 1 - p))
    assert bayes - 0.05 < accuracy <= bayes
    ranks = np.argsort(np.argsort(gp.predict(Xa))), np.argsort(np.argsort(branin_utility(Xa)))
    assert np.corrcoef(*ranks)[0, 1] > 0.9


def test_posterior_intervals_cover_a_known_utility_at_the_nominal_rate():
    """Posterior 95 % intervals cover a known 2-D utility at 90-99 % of the test points.

    A utility drawn from the GP prior (ℓ = (0.25, 0.4), s = 1), 200 duels on 50 documents, σ = 0.5,
    fitted with those hyperparameters: the 95 % intervals of the centred utility f(x) - mean f at 300 new
    points cover the truth at 90-99 % of the points, pooled over 4 utilities (measured 93-100 % per
    utility). Centred, because duels identify f only up to a constant.
    """
    ls, s, noise = np.array([0.25, 0.4]), 1.0, 0.5
    hits = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        Xall = rng.uniform(0, 1, (350, 2))
        f = np.linalg.cholesky(naive_rbf(Xall, Xall, s, ls) + 1e-8 * np.eye(350)) @ rng.standard_normal(350)
        X, Xt = Xall[:50], Xall[50:]
        pairs = noisy_duels(f[:50], 200, noise, rng)
        gp = PreferenceGP(lengthscale=ls, variance=s, noise=noise, optimize=False).fit(X, pairs)
        J = np.eye(300) - 1.0 / 300
        sd = np.sqrt(np.diag(J @ gp.predict_cov(Xt) @ J))
        hits.append(np.abs(J @ gp.predict(Xt) - J @ f[50:]) < 1.96 * sd)
    coverage = np.mean(hits)
    assert 0.90 <= coverage <= 0.99, coverage


def naive_elliptical_slice(L, log_lik, n_iter, rng):
    """Elliptical slice sampling (Murray, Adams & MacKay 2010) of N(0, L Lᵀ) × exp(log_lik)."""
    f, current, draws = np.zeros(L.shape[0]), log_lik(np.zeros(L.shape[0])), []
    for _ in range(n_iter):
        nu = L @ rng.standard_normal(L.shape[0])
        level = current + np.log(rng.uniform())
        angle = rng.uniform(0, 2 * np.pi)
        low, high = angle - 2 * np.pi, angle
        while True:
            proposal = f * np.cos(angle) + nu * np.sin(angle)
            value = log_lik(proposal)
            if value > level:
                f, current = proposal, value
                break
            low, high = (angle, high) if angle < 0 else (low, angle)
            angle = rng.uniform(low, high)
        draws.append(f)
    return np.array(draws)


@pytest.mark.slow
def test_ep_matches_mcmc_on_a_branin_posterior():
    """EP's posterior of f agrees with elliptical slice sampling on 120 noisy Branin duels.

    40 documents plus 30 new points, σ = 0.5, fixed hyperparameters; 40,000 sweeps of the exact probit
    likelihood (no EP), first 8,000 dropped. Measured: means within 0.06 posterior sd, sds within 6 %, about
    the chain's Monte Carlo error (batch means: 0.07 sd). Tolerances 0.2 sd and 15 %.
    """
    rng = np.random.default_rng(1)
    noise, ls, s = 0.5, np.array([0.3, 0.5]), 2.0
    X = rng.uniform(0, 1, (40, 2))
    pairs = noisy_duels(branin_utility(X), 120, noise, rng)
    Xall = np.vstack([X, rng.uniform(0, 1, (30, 2))])
    gp = PreferenceGP(lengthscale=ls, variance=s, noise=noise, optimize=False, tol=1e-10).fit(X, pairs)
    L = np.linalg.cholesky(naive_rbf(Xall, Xall, s, ls) + 1e-8 * np.eye(len(Xall)))
    winners, losers = pairs[:, 0], pairs[:, 1]

    def log_lik(f):
        return float(np.sum(log_ndtr((f[winners] - f[losers]) / (np.sqrt(2) * noise))))

    draws = naive_elliptical_slice(L, log_lik, 40_000, np.random.default_rng(0))[8_000::4]
    mean, std = gp.predict(Xall, return_std=True)
    np.testing.assert_array_less(np.abs(mean - draws.mean(0)), 0.2 * draws.std(0))
    np.testing.assert_allclose(std, draws.std(0), rtol=0.15)


# ------------------------------------------------------------------- ranking and softrank
def test_softrank_takes_a_fitted_preference_gp_as_variance_source():
    """softrank(variance=PreferenceGP().fit(...)) uses std² of f at the booster's features.

    And LightGBM trains with it.
    """
    rng = np.random.default_rng(0)
    sizes = np.array([6, 5, 7])
    X = rng.uniform(0, 1, (sizes.sum(), 3))
    y = np.round(2 * X[:, 0] + rng.uniform(0, 1, sizes.sum()))
    gp = PreferenceGP(lengthscale=0.5, optimize=False).fit(X, pairs_from_labels(y, sizes))
    preds = rng.normal(size=y.size)
    std = gp.predict(X, return_std=True)[1]
    with_model = stochrank.softrank(k=5, variance=gp).value_and_gradient(preds, y, sizes, X=X)
    with_array = stochrank.softrank(k=5, variance=std**2).value_and_gradient(preds, y, sizes)
    for a, b in zip(with_model, with_array, strict=True):
        np.testing.assert_array_equal(a, b)
    params = {"objective": stochrank.softrank(k=5, variance=gp), "verbose": -1, "min_data_in_leaf": 2}
    booster = lgb.train(params, lgb.Dataset(X, y, group=sizes, free_raw_data=False), 3)
    assert booster.current_iteration() == 3


def test_risk_adjusted_scores_on_catboost_pairs():
    """CatBoost's own pairs fit, and predict is GPRanker's risk-adjusted μ + α·σ.

    The pairs are (winner, loser) rows of one query with the larger target first; fitted on the 975 train
    duels (standardised features, sparse form) the utility agrees with 95 % of them (ranking quality:
    benchmarks/preference_gp.py).
    """

    def load(split):
        with gzip.open(DATA / f"{split}.gz", "rt") as fh:
            table = np.loadtxt(fh, delimiter="\t", usecols=[1, 2, *range(5, 55)])
        with gzip.open(DATA / f"{split}.pairs.gz", "rt") as fh:
            pairs = np.loadtxt(fh, dtype=np.int64)
        return table[:, 2:], table[:, 1], table[:, 0], pairs

    for split in ("train", "test"):
        _, y, qid, pairs = load(split)
        assert np.all(y[pairs[:, 0]] > y[pairs[:, 1]])
        assert np.all(qid[pairs[:, 0]] == qid[pairs[:, 1]])
    X, _, _, pairs = load("train")
    Xt = load("test")[0]
    scale = np.where(X.std(0) > 0, X.std(0), 1.0)
    X, Xt = (X - X.mean(0)) / scale, (Xt - X.mean(0)) / scale
    gp = PreferenceGP(lengthscale=3.0, ard=False, variance=30.0, noise=0.3, optimize=False, n_inducing=300,
                      random_state=0).fit(X, pairs)  # fmt: skip
    assert np.mean(gp.duel_probability(X[pairs[:, 0]], X[pairs[:, 1]]) > 0.5) > 0.95
    mean, std = gp.predict(Xt, return_std=True)
    np.testing.assert_allclose(clone(gp).set_params(alpha=-0.5).fit(X, pairs).predict(Xt), mean - 0.5 * std)


# ----------------------------------------------------------------------------------- pairs
def test_pairs_from_labels_matches_a_double_loop_and_caps_each_query():
    """Every label-ordered within-query pair, and a seeded subset of min(cap, count) per query."""
    rng = np.random.default_rng(1)
    sizes = np.array([1, 7, 12, 4])
    y = rng.integers(0, 3, sizes.sum())
    full = pairs_from_labels(y, sizes)
    assert sorted(map(tuple, full)) == sorted(naive_pairs(y, sizes))
    capped = pairs_from_labels(y, sizes, max_pairs_per_query=5, random_state=0)
    assert set(map(tuple, capped)) <= set(map(tuple, full))
    offsets = np.r_[0, np.cumsum(sizes)]
    query = np.searchsorted(offsets, capped[:, 0], side="right") - 1
    per_query = np.bincount(query, minlength=sizes.size)
    expected = [
        min(5, sum(1 for w, _ in naive_pairs(y, sizes) if offsets[q] <= w < offsets[q + 1])) for q in range(4)
    ]
    np.testing.assert_array_equal(per_query, expected)
    np.testing.assert_array_equal(capped, pairs_from_labels(y, sizes, max_pairs_per_query=5, random_state=0))


# ----------------------------------------------------------------------------- conventions
def test_clone_pickle_and_parameters():
    """Clone keeps the parameters and no state; a pickled model predicts identically; refits reproduce."""
    X, pairs = small_problem()
    gp = PreferenceGP(lengthscale=[0.4, 0.7], n_inducing=5, random_state=2, optimizer_max_iter=5).fit(
        X, pairs
    )
    fresh = clone(gp)
    assert fresh.get_params() == gp.get_params()
    assert not hasattr(fresh, "theta_")
    restored = pickle.loads(pickle.dumps(gp))
    Xt = np.random.default_rng(0).uniform(0, 1, (9, 2))
    np.testing.assert_array_equal(restored.predict(Xt, return_std=True), gp.predict(Xt, return_std=True))
    np.testing.assert_array_equal(
        clone(gp).fit(X, pairs).predict(Xt), gp.predict(Xt)
    )  # seeded inducing points


def test_contradictory_near_noiseless_duels_stay_finite():
    """Contradictory, nearly noiseless duels (very negative β) give finite, accurate EP.

    A 3-cycle (plus a repeated duel) with small noise: the three v sum to pure noise, so P(v < 0) ~ σ² and
    each cavity sits far on the wrong side. σ = 1e-2: log Z_EP within 0.01 of log P(v < 0) from scipy's
    CDF (abseps 1e-14). σ = 1e-3, where that CDF is no longer reliable: EP converges, everything is finite,
    and log Z_EP drops by log(100) (the σ² law) to within 0.01.
    """
    X = np.array([[0.0, 0.0], [0.5, 0.1], [0.2, 0.7]])
    pairs = np.array([[0, 1], [1, 2], [2, 0], [0, 1]])
    K = naive_rbf(X, X, 1.0, np.array([0.5, 0.5]))
    A = naive_duel_operator(pairs, 3)
    log_z = {}
    for noise in (1e-2, 1e-3):
        gp = PreferenceGP(lengthscale=0.5, ard=False, noise=noise, **TIGHT).fit(X, pairs)
        assert gp.converged_
        assert np.all(np.isfinite(gp.predict(X, return_std=True)))
        assert np.all(np.isfinite(gp.log_marginal_likelihood(gp.theta_, eval_gradient=True)[1]))
        log_z[noise] = gp.log_marginal_likelihood_
    S = A @ K @ A.T + 2e-4 * np.eye(4)
    Z = multivariate_normal.cdf(np.zeros(4), np.zeros(4), S, abseps=1e-14, releps=1e-8, maxpts=10**7)
    assert abs(log_z[1e-2] - np.log(Z)) < 0.01
    assert abs(log_z[1e-3] - log_z[1e-2] - np.log(1e-2)) < 0.01


def test_jitter_and_non_convergence_are_reported(monkeypatch):
    """Cholesky jitter is added only when needed and reported; EP stopped early warns."""
    ones = np.ones((4, 4))
    L, jitter = jittered_cholesky(ones, "K")  # rank 1: needs jitter
    assert jitter > 0
    np.testing.assert_allclose(L @ L.T, ones + jitter * np.eye(4), atol=1e-12)
    assert jittered_cholesky(ones + np.eye(4), "K")[1] == 0.0
    with pytest.raises(np.linalg.LinAlgError, match=r"K is not positive definite even with 0\.01"):
        jittered_cholesky(-ones, "K")
    # near-duplicate documents as inducing points, without the model's own 1e-8 jitter: K_uu is singular
    monkeypatch.setattr(stochrank.gp._evidence, "BASE_JITTER", 0.0)
    X = np.array([[0.0, 0.0], [1e-9, 0.0], [2e-9, 0.0], [1.0, 1.0]])
    with pytest.warns(CholeskyJitterWarning, match="fitted K_uu needed jitter"):
        gp = PreferenceGP(n_inducing=4, optimize=False).fit(X, [[0, 3], [1, 3], [2, 3]])
    assert gp.jitter_ > 0
    with pytest.warns(ConvergenceWarning, match="EP did not converge in max_iter=1"):
        PreferenceGP(max_iter=1, optimize=False).fit(*small_problem())


# ---------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("pairs", "match"),
    [
        (np.zeros((0, 2), dtype=int), "'pairs' is empty.*pairs_from_labels"),
        ([[0, 9]], r"row 0 is \[0, 9\], but X has 7 rows.*valid indices 0..6"),
        ([[0, -1]], "out of range"),
        ([[2, 2]], "prefers document 2 to itself.*Drop those rows"),
        ([0, 1, 2], r"shape \(n_duels, 2\).*np.column_stack"),
        ([[0.5, 1.0]], "integer row indices"),
    ],
)
def test_invalid_pairs_name_the_fix(pairs, match):
    """Each malformed pairs array is rejected with a message that names the fix."""
    X, _ = small_problem()
    with pytest.raises(ValueError, match=match):
        PreferenceGP(optimize=False).fit(X, pairs)


def test_invalid_inputs_and_parameters_name_the_fix():
    """Bad features, parameters and calls raise errors that say what was wrong and how to fix it."""
    X, pairs = small_problem()
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite features in 1 row.*first: row 3.*Impute"):
        PreferenceGP().fit(bad, pairs)
    with pytest.raises(ValueError, match=r"'method' parameter.*'ep-truncated', 'ep-probit'"):
        PreferenceGP(method="laplace").fit(X, pairs)
    with pytest.raises(ValueError, match=r"'lengthscale'.*array of 2 positive floats"):
        PreferenceGP(lengthscale=[1.0, 2.0, 3.0]).fit(X, pairs)
    with pytest.raises(ValueError, match=r"'lengthscale'.*ard=False pass a single float"):
        PreferenceGP(lengthscale=[1.0, 2.0], ard=False).fit(X, pairs)
    with pytest.raises(ValueError, match=r"'noise' parameter.*range \(0.0, inf\)"):
        PreferenceGP(noise=0.0).fit(X, pairs)
    with pytest.raises(ValueError, match=r"'damping' parameter.*\(0.0, 1.0\]"):
        PreferenceGP(damping=0.0).fit(X, pairs)
    with pytest.raises(
        ValueError, match=r"'n_inducing'.*is 50.*only 7 distinct documents.*None for exact EP"
    ):
        PreferenceGP(n_inducing=50).fit(X, pairs)
    with pytest.raises(TypeError, match=r"'ard' parameter.*bool"):
        PreferenceGP(ard=1).fit(X, pairs)
    with pytest.raises(NotFittedError):
        PreferenceGP().predict(X)
    gp = PreferenceGP(optimize=False).fit(X, pairs)
    with pytest.raises(ValueError, match=r"3 features, but the model was fitted with 2"):
        gp.predict(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"'Xa' has 2 rows and 'Xb' 3"):
        gp.duel_probability(X[:2], X[:3])
    with pytest.raises(ValueError, match=r"'theta' must be 4 finite log hyperparameters"):
        gp.log_marginal_likelihood([0.0, 0.0])
    with pytest.raises(ValueError, match=r"'max_pairs_per_query' parameter.*range \[1, inf\)"):
        pairs_from_labels([1, 0], [2], max_pairs_per_query=0)
    with pytest.raises(ValueError, match=r"group"):
        pairs_from_labels([1, 0, 1], [2])
