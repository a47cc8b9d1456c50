"""Tests of stochrank.gp.TraceNormMVGP and BipartiteMVGPRanker (Koyejo, Lee & Ghosh).

References (tests/naive.py) are dense and written from the paper's formulas only: the MV-GP mean
eq. (1) and covariance eq. (10) with the MN × MN Kronecker matrix, the objective eq. (12) in Ψ form with
matrix square roots, the r-step by enumerating every ordering γ and every face of the simplex; the
nuclear-norm subgradient conditions are checked in the K^½ basis. Runtime about 60 s on the shared 2-vCPU
machine under load 9 (Numba compiles the r-step kernels on first use).
"""

from __future__ import annotations

import itertools
import pickle
import tracemalloc

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError

from stochrank.gp import BipartiteMVGPRanker, TraceNormMVGP
from stochrank.gp._bipartite import retarget_task
from stochrank.gp._mvgp_core import solve
from stochrank.gp._mvgp_inputs import build_problem

from .naive import (
    naive_mvgp_cov,
    naive_mvgp_mean,
    naive_mvgp_objective,
    naive_retarget,
    naive_sqrt,
)


# ------------------------------------------------------------------------------------------- fixtures
def rbf_kernel(n, seed, jitter=0.1):
    """Return an RBF kernel on random points plus ``jitter`` I."""
    X = np.random.default_rng(seed).standard_normal((n, 3))
    return np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1)) + jitter * np.eye(n)


def observations(M, N, kind, seed, drop_last=True):
    """Return observed entries and values of a 'grid' or 'scattered' design.

    Observed entries: 'grid' = every entry of rows 0..M-2 × cols 0..N-2 (the last row and column stay
    unobserved, so predictions there use the kernels only); 'scattered' = about half of those at random.
    """
    rng = np.random.default_rng(seed)
    m_obs, n_obs = (M - 1, N - 1) if drop_last else (M, N)
    rows, cols = np.repeat(np.arange(m_obs), n_obs), np.tile(np.arange(n_obs), m_obs)
    if kind == "scattered":
        keep = rng.random(rows.size) < 0.5
        rows, cols = rows[keep], cols[keep]
    values = rng.standard_normal(rows.size) + np.sin(rows) * np.cos(cols)
    return rows, cols, values


def all_entries(M, N):
    """Return every (row, col) of an M × N matrix in vec order."""
    return np.tile(np.arange(M), N), np.repeat(np.arange(N), M)  # vec order


KINDS = ("grid", "scattered")


# -------------------------------------------------------------------------------- TraceNormMVGP: mean
@pytest.mark.parametrize("kind", KINDS)
def test_zero_trace_weight_equals_closed_form_mvgp_mean(kind):
    """trace_weight = 0 gives the closed-form MV-GP posterior mean eq. (1).

    trace_weight = 0: the posterior mean is eq. (1) (kernel ridge with K = K_N ⊗ K_M) to 1e-8, on
    observed entries and on the unobserved last row and column.
    """
    M, N = 6, 8
    K_rows, K_cols = rbf_kernel(M, 1), rbf_kernel(N, 2)
    rows, cols, values = observations(M, N, kind, 3)
    model = TraceNormMVGP(noise_var=0.3, tol=1e-13, max_iter=20000).fit(K_rows, K_cols, rows, cols, values)
    q_rows, q_cols = all_entries(M, N)
    expected = naive_mvgp_mean(K_rows, K_cols, rows, cols, values, 0.3, q_rows, q_cols)
    np.testing.assert_allclose(model.predict(q_rows, q_cols), expected, rtol=0, atol=1e-8)
    assert model.converged_
    assert model.rank_ == min(M - 1, N - 1)  # the ridge solution is full rank on the observed span


@pytest.mark.parametrize("kind", KINDS)
def test_unseen_rows_and_columns_through_an_extended_kernel(kind):
    """Rows and columns unseen in training are predicted through an extended kernel (Theorem 1).

    Theorem 1: a model fitted on M rows predicts new rows from the kernel over old + new rows; with
    trace_weight = 0 that is eq. (1) on the extended index set, with trace_weight > 0 it equals a fit on
    the extended kernel in which the new rows are unobserved.
    """
    M, N, extra = 5, 7, 2
    K_big_rows, K_big_cols = rbf_kernel(M + extra, 4), rbf_kernel(N + extra, 5)
    K_rows, K_cols = K_big_rows[:M, :M], K_big_cols[:N, :N]
    rows, cols, values = observations(M, N, kind, 6, drop_last=False)
    q_rows, q_cols = all_entries(M + extra, N + extra)
    ridge = TraceNormMVGP(noise_var=0.2, tol=1e-13, max_iter=20000).fit(K_rows, K_cols, rows, cols, values)
    got = ridge.predict(q_rows, q_cols, K_rows=K_big_rows, K_cols=K_big_cols)
    expected = naive_mvgp_mean(K_big_rows, K_big_cols, rows, cols, values, 0.2, q_rows, q_cols)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-8)

    small = TraceNormMVGP(noise_var=0.2, trace_weight=8.0, tol=1e-11, max_iter=20000)
    big = clone(small).fit(K_big_rows, K_big_cols, rows, cols, values)
    small.fit(K_rows, K_cols, rows, cols, values)
    np.testing.assert_allclose(
        small.predict(q_rows, q_cols, K_rows=K_big_rows, K_cols=K_big_cols), big.predict(q_rows, q_cols),
        rtol=0, atol=1e-7,
    )  # fmt: skip
    assert 0 < small.rank_ < min(M, N)


# -------------------------------------------------------------------------- TraceNormMVGP: covariance
@pytest.mark.parametrize("kind", KINDS)
def test_posterior_covariance_is_eq10(kind):
    """The posterior covariance is eq. (10).

    predict(return_cov) is (K⁻¹ + PᵀP/σ²)⁻¹ on the queried entries (eq. (10)'s first form; the code uses
    the second, eq. (2)); return_std its diagonal's root; new rows and columns included; independent of μ.
    """
    M, N, extra = 5, 6, 1
    K_big_rows, K_big_cols = rbf_kernel(M + extra, 7), rbf_kernel(N + extra, 8)
    rows, cols, values = observations(M, N, kind, 9, drop_last=False)
    for mu in (0.0, 3.0):
        model = TraceNormMVGP(noise_var=0.4, trace_weight=mu).fit(
            K_big_rows[:M, :M], K_big_cols[:N, :N], rows, cols, values
        )
        q_rows, q_cols = all_entries(M + extra, N + extra)
        kw = {"K_rows": K_big_rows, "K_cols": K_big_cols}
        _, cov = model.predict(q_rows, q_cols, return_cov=True, **kw)
        _, std = model.predict(q_rows, q_cols, return_std=True, **kw)
        expected = naive_mvgp_cov(K_big_rows, K_big_cols, rows, cols, 0.4, q_rows, q_cols)
        np.testing.assert_allclose(cov, expected, rtol=0, atol=1e-10)
        np.testing.assert_allclose(std, np.sqrt(np.diag(expected)), rtol=0, atol=1e-10)


# ---------------------------------------------------------------------------- TraceNormMVGP: μ > 0
def fitted_basis_coef(model, K_rows, K_cols):
    """B in the K^½ basis, from the model's predictions on the full grid: B = K_M^-½ Ψ K_N^-½."""
    M, N = K_rows.shape[0], K_cols.shape[0]
    Psi = model.predict(*all_entries(M, N)).reshape(N, M).T
    return Psi, naive_sqrt(K_rows, -0.5) @ Psi @ naive_sqrt(K_cols, -0.5)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mu", [0.3, 3.0, 12.0])
def test_trace_norm_optimality_conditions(kind, mu):
    """The solution satisfies the nuclear-norm optimality conditions.

    The solution satisfies 0 ∈ ∇f(B) + μσ² ∂‖B‖_* in the K^½ basis (not the solver's eigen-basis):
    with B = U diag(s) Vᵀ and G = -∇f(B), UᵀG = μσ² Vᵀ and G V = μσ² U to 1e-6 · μσ², and the part of G
    outside U, V has spectral norm at most μσ² (1 + 1e-6).
    """
    M, N, noise = 7, 9, 0.5
    K_rows, K_cols = rbf_kernel(M, 10, jitter=0.3), rbf_kernel(N, 11, jitter=0.3)
    rows, cols, values = observations(M, N, kind, 12, drop_last=False)
    model = TraceNormMVGP(noise_var=noise, trace_weight=mu, tol=1e-11, max_iter=50000)
    model.fit(K_rows, K_cols, rows, cols, values)
    Psi, B = fitted_basis_coef(model, K_rows, K_cols)
    G_M, G_N = naive_sqrt(K_rows), naive_sqrt(K_cols)
    E = np.zeros((M, N))
    np.add.at(E, (rows, cols), Psi[rows, cols] - values)
    G = -(G_M.T @ E @ G_N + noise * B)
    tau = mu * noise
    U, s, Vt = np.linalg.svd(B)
    k = model.rank_
    assert k == int(np.sum(s > 1e-6 * max(s[0], 1e-300)))  # k = 0: B = 0, optimal iff ‖G‖₂ <= μσ²
    U, Vt = U[:, :k], Vt[:k]
    assert np.abs(U.T @ G - tau * Vt).max(initial=0.0) <= 1e-6 * tau
    assert np.abs(G @ Vt.T - tau * U).max(initial=0.0) <= 1e-6 * tau
    W = (np.eye(M) - U @ U.T) @ G @ (np.eye(N) - Vt.T @ Vt)
    assert np.linalg.norm(W, 2) <= tau * (1 + 1e-6)
    assert model.objective_ == pytest.approx(
        naive_mvgp_objective(K_rows, K_cols, rows, cols, values, noise, mu, Psi), rel=1e-9
    )


@pytest.mark.parametrize("kind", KINDS)
def test_objective_never_increases_along_the_iterations(kind):
    """The objective never increases along the solver's iterations.

    Every accepted iterate's eq. (12) objective, recomputed densely from its Ψ, is at most the previous
    one (to 1e-12 relative rounding), through restarts and backtracking.
    """
    M, N, noise, mu = 6, 8, 0.2, 1.5
    K_rows, K_cols = rbf_kernel(M, 13), rbf_kernel(N, 14)
    rows, cols, values = observations(M, N, kind, 15, drop_last=False)
    problem = build_problem(K_rows, K_cols, rows, cols, "test")
    data, const = problem.op.encode(values)
    G_M, G_N = problem.row_basis.basis, problem.col_basis.basis
    seen = []

    def record(B, F):
        seen.append((naive_mvgp_objective(K_rows, K_cols, rows, cols, values, noise, mu, G_M @ B @ G_N.T), F))

    start = np.random.default_rng(0).standard_normal((problem.row_basis.keep, problem.col_basis.keep))
    # a deliberately low Lipschitz guess: backtracking must kick in without breaking monotonicity
    sol = solve(problem.op, data, const, noise, mu * noise, start, max_iter=400, tol=1e-12, lipschitz=0.01,
                callback=record)  # fmt: skip
    dense = np.array([d for d, _ in seen])
    assert len(seen) > 20
    np.testing.assert_allclose([F for _, F in seen], dense, rtol=1e-10)
    assert np.all(np.diff(dense) <= 1e-12 * abs(dense[0]))
    assert np.all(np.diff(sol.history) <= 1e-12 * abs(sol.history[0]))
    assert sol.lipschitz > 0.01


def test_larger_trace_weight_gives_lower_rank():
    """Rank (also the numerical rank of the predicted matrix) is non-increasing in μ, from full to 0."""
    M, N = 8, 10
    K_rows, K_cols = rbf_kernel(M, 16), rbf_kernel(N, 17)
    rows, cols, values = observations(M, N, "grid", 18, drop_last=False)
    ranks = []
    for mu in (0.0, 0.1, 0.5, 2.0, 8.0, 1e4):
        model = TraceNormMVGP(noise_var=0.3, trace_weight=mu, tol=1e-10).fit(
            K_rows, K_cols, rows, cols, values
        )
        Psi = model.predict(*all_entries(M, N)).reshape(N, M)
        assert np.linalg.matrix_rank(Psi, tol=1e-7 * max(np.abs(Psi).max(), 1e-300)) == model.rank_
        ranks.append(model.rank_)
    assert ranks[0] == M
    assert ranks[-1] == 0
    assert all(a >= b for a, b in itertools.pairwise(ranks))
    assert len(set(ranks)) >= 4


def test_path_warm_starts_match_cold_fits_and_lambda_max():
    """A warm-started path equals cold fits, from the zero solution at λ_max down.

    path(alpha): λ from λ_max (solution exactly 0) down; each warm-started fit equals a cold fit with
    noise_var = λ(1 - α), trace_weight = α/(1 - α); just below λ_max the solution is nonzero.
    """
    M, N, alpha = 6, 9, 0.6
    K_rows, K_cols = rbf_kernel(M, 19), rbf_kernel(N, 20)
    rows, cols, values = observations(M, N, "scattered", 21)
    fits = TraceNormMVGP(tol=1e-11, max_iter=20000).path(K_rows, K_cols, rows, cols, values, alpha=alpha,
                                                         n_lambdas=5, lambda_min_ratio=0.01)  # fmt: skip
    lambdas = [f.lambda_ for f in fits]
    assert lambdas == sorted(lambdas, reverse=True)
    np.testing.assert_allclose(lambdas[-1] / lambdas[0], 0.01)
    assert fits[0].rank_ == 0
    assert fits[-1].rank_ >= 2
    q = all_entries(M, N)
    assert np.all(fits[0].predict(*q) == 0.0)
    for f in fits:
        assert f.alpha_ == pytest.approx(alpha)
        assert f.noise_var == pytest.approx(f.lambda_ * (1 - alpha))
        assert f.trace_weight == pytest.approx(alpha / (1 - alpha))
        cold = clone(f).fit(K_rows, K_cols, rows, cols, values)
        np.testing.assert_allclose(f.predict(*q), cold.predict(*q), rtol=0, atol=1e-6)
    below = TraceNormMVGP(noise_var=0.99 * lambdas[0] * (1 - alpha), trace_weight=alpha / (1 - alpha))
    assert below.fit(K_rows, K_cols, rows, cols, values).rank_ == 1


@pytest.mark.slow  # 4-7 s: eigen-decomposes a 1500 x 1500 kernel under tracemalloc
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 30 iterations measure memory
@pytest.mark.parametrize("kind", KINDS)
def test_kronecker_matrix_is_never_formed(kind):
    """The MN × MN Kronecker matrix is never formed.

    M = 40 rows × N = 1500 columns: K_N ⊗ K_M would take 28.6 GiB (and eq. (1)'s T × T matrix 25 GiB on
    the grid); fit + predict on every entry stay under 160 MiB of traced allocations, about 9 copies of the
    17 MiB item kernel (checks, eigen-decomposition, the stored kernel, cross-kernel rows in predict).
    """
    M, N = 40, 1500
    K_rows, K_cols = rbf_kernel(M, 22), rbf_kernel(N, 23)
    rows, cols, values = observations(M, N, kind, 24)
    if kind == "scattered":
        keep = np.random.default_rng(0).random(rows.size) < 0.1
        rows, cols, values = rows[keep], cols[keep], values[keep]
    tracemalloc.start()
    model = TraceNormMVGP(noise_var=0.5, trace_weight=2.0, max_iter=30).fit(
        K_rows, K_cols, rows, cols, values
    )
    mean = model.predict(*all_entries(M, N))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert mean.shape == (M * N,)
    assert peak < 160 * 2**20, peak / 2**20


# ------------------------------------------------------------------------------------- the r-step
@pytest.mark.parametrize("margin", [0.0, 0.3])
@pytest.mark.parametrize("seed", range(6))
def test_retarget_matches_brute_force_over_orderings(seed, margin):
    """The r-step matches brute force over orderings and simplex faces.

    Per task, r = γ(C x) with x ∈ Δ (x_k >= margin) minimises ½‖r - ψ‖² over every ordering γ ∈ Γ and
    every x: same objective and same r as enumerating orderings and simplex faces; r is feasible.
    """
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    positive = rng.random(n) < 0.5
    positive[int(rng.integers(n))] = seed % 3 != 0  # some tasks with one block only
    psi = rng.standard_normal(n) * rng.choice([0.05, 1.0])
    r, x, order = retarget_task(psi, positive, margin)
    best, r_brute = naive_retarget(psi, positive, margin)
    assert 0.5 * np.sum((r - psi) ** 2) == pytest.approx(best, abs=1e-12)
    np.testing.assert_allclose(r, r_brute, atol=1e-9)
    C = np.triu(np.tile(1.0 / np.arange(1, n + 1), (n, 1)))
    np.testing.assert_allclose(C @ x, r[order], atol=1e-12)
    assert np.all(x >= -1e-15)
    assert x.sum() == pytest.approx(1.0)
    k = int(positive.sum())
    if 0 < k < n:
        assert r[positive].min() >= r[~positive].max() + margin / k - 1e-12
        assert x[k - 1] >= margin - 1e-12
    assert list(order[:k]) == sorted(np.flatnonzero(positive), key=lambda i: -psi[i])


# ---------------------------------------------------------------------------------------- the ranker
def ranking_problem(M=6, N=12, seed=25):
    """Return kernels and a full grid of binary labels (30 % positive)."""
    rng = np.random.default_rng(seed)
    K_rows, K_cols = rbf_kernel(M, seed), rbf_kernel(N, seed + 1)
    rows, cols = np.repeat(np.arange(M), N), np.tile(np.arange(N), M)
    y = (rng.random(M * N) < 0.3).astype(int)
    return K_rows, K_cols, rows, cols, y


def ranker_objective(model, K_rows, K_cols, rows, cols):
    """Eq. (20)'s (r, ψ) part times σ², densely: eq. (12) with the model's targets as data."""
    M, N = K_rows.shape[0], K_cols.shape[0]
    Psi = model.predict(*all_entries(M, N)).reshape(N, M).T
    return naive_mvgp_objective(
        K_rows, K_cols, rows, cols, model.targets_, model.noise_var, model.trace_weight, Psi
    )


@pytest.mark.parametrize(("mu", "margin"), [(0.0, 0.0), (2.0, 0.0), (0.5, 0.4)])
def test_alternation_never_increases_objective(mu, margin):
    """The alternation never increases eq. (20).

    Eq. (20) after every ψ-step and every r-step is at most the previous value; the targets stay
    feasible (each task's sum 1, positives >= negatives + margin/k); the reported value is the dense one.
    """
    K_rows, K_cols, rows, cols, y = ranking_problem()
    model = BipartiteMVGPRanker(noise_var=0.1, trace_weight=mu, margin=margin, init="random", random_state=0,
                                max_iter=300, tol=1e-7).fit(K_rows, K_cols, rows, cols, y)  # fmt: skip
    path = np.array(model.objective_path_)
    assert path.size > 10
    assert np.all(np.diff(path) <= 1e-12 * path[0])
    for m in range(K_rows.shape[0]):
        r, pos = model.targets_[rows == m], y[rows == m] == 1
        assert r.sum() == pytest.approx(1.0)
        assert r.min() >= 0
        assert r[pos].min() >= r[~pos].max() + margin / pos.sum() - 1e-12
    # the last ψ-step was for the previous targets, which moved less than tol
    assert ranker_objective(model, K_rows, K_cols, rows, cols) == pytest.approx(path[-1], rel=1e-5)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # stopped after k alternations
@pytest.mark.parametrize(("mu", "margin"), [(0.0, 0.0), (1.0, 0.2)])
def test_each_step_lowers_the_dense_objective(mu, margin):
    """Every ψ-step and every r-step lowers eq. (20), recomputed densely outside the ranker's bookkeeping.

    Fits stopped after k = 1, 2, … alternations from the same random start give (r_k, Ψ_k); eq. (12) with
    the targets as data, from Ψ and matrix square roots, satisfies J(r_k, Ψ_k) <= J(r_{k-1}, Ψ_k) (r-step)
    and J(r_{k-1}, Ψ_k) <= J(r_{k-1}, Ψ_{k-1}) (ψ-step), and equals the recorded objective_path_.
    """
    K_rows, K_cols, rows, cols, y = ranking_problem()
    M, N = K_rows.shape[0], K_cols.shape[0]
    params = {"noise_var": 0.1, "trace_weight": mu, "margin": margin, "init": "random", "random_state": 0}
    params |= {"tol": 1e-12, "inner_tol": 1e-11}
    fits = [BipartiteMVGPRanker(max_iter=k, **params).fit(K_rows, K_cols, rows, cols, y) for k in range(1, 9)]

    def dense(model, targets):
        Psi = model.predict(*all_entries(M, N)).reshape(N, M).T
        return naive_mvgp_objective(K_rows, K_cols, rows, cols, targets, 0.1, mu, Psi)

    for k, (before, after) in enumerate(itertools.pairwise(fits), start=2):
        psi_step, r_step = dense(after, before.targets_), dense(after, after.targets_)
        previous = dense(before, before.targets_)
        assert psi_step <= previous * (1 + 1e-9)
        assert r_step <= psi_step * (1 + 1e-9)
        assert after.objective_path_[2 * k - 1 : 2 * k + 1] == pytest.approx([psi_step, r_step], rel=1e-7)
    assert dense(fits[-1], fits[-1].targets_) < dense(fits[0], fits[0].targets_)


@pytest.mark.parametrize(("mu", "margin"), [(0.0, 0.0), (2.0, 0.0), (0.5, 0.4)])
def test_ranker_reaches_the_same_optimum_from_different_starts(mu, margin):
    """Joint convexity (Lemma 7): label-based and random feasible starts end at the same ψ and objective."""
    K_rows, K_cols, rows, cols, y = ranking_problem()
    fits = [
        BipartiteMVGPRanker(
            noise_var=0.1,
            trace_weight=mu,
            margin=margin,
            init=init,
            random_state=seed,
            max_iter=3000,
            tol=1e-9,
        ).fit(K_rows, K_cols, rows, cols, y)
        for init, seed in (("labels", None), ("random", 1), ("random", 2))
    ]
    scale = np.abs(fits[0].train_mean_).max()
    for other in fits[1:]:
        assert other.converged_
        np.testing.assert_allclose(other.train_mean_, fits[0].train_mean_, rtol=0, atol=1e-5 * scale)
        assert other.objective_ == pytest.approx(fits[0].objective_, rel=1e-7)


def test_ranker_fixed_point_is_a_trace_norm_fit_of_its_targets():
    """At convergence ψ is TraceNormMVGP's mean for the targets and the targets are the r-step of ψ."""
    K_rows, K_cols, rows, cols, y = ranking_problem()
    model = BipartiteMVGPRanker(noise_var=0.1, trace_weight=1.0, margin=0.2, tol=1e-9, max_iter=3000)
    model.fit(K_rows, K_cols, rows, cols, y)
    refit = TraceNormMVGP(noise_var=0.1, trace_weight=1.0, tol=1e-11).fit(
        K_rows, K_cols, rows, cols, model.targets_
    )
    scale = np.abs(model.train_mean_).max()
    np.testing.assert_allclose(refit.train_mean_, model.train_mean_, rtol=0, atol=1e-6 * scale)
    for m in range(K_rows.shape[0]):
        task = rows == m
        r, _, _ = retarget_task(model.train_mean_[task], y[task] == 1, 0.2)
        np.testing.assert_allclose(r, model.targets_[task], rtol=0, atol=1e-6 * scale)


def test_ranker_is_invariant_to_relabelling_tasks():
    """Relabelling the tasks permutes the predictions and changes nothing else.

    Permuting the tasks (kernel rows/columns and the observations' row ids, observations shuffled)
    permutes the predictions and changes nothing else.
    """
    K_rows, K_cols, rows, cols, y = ranking_problem(M=7)
    rng = np.random.default_rng(3)
    perm = rng.permutation(7)  # new id of old task m is perm[m]
    inverse = np.argsort(perm)
    shuffle = rng.permutation(rows.size)
    params = {"noise_var": 0.1, "trace_weight": 1.0, "margin": 0.3, "tol": 1e-9, "max_iter": 3000}
    a = BipartiteMVGPRanker(**params).fit(K_rows, K_cols, rows, cols, y)
    b = BipartiteMVGPRanker(**params).fit(
        K_rows[np.ix_(inverse, inverse)], K_cols, perm[rows][shuffle], cols[shuffle], y[shuffle]
    )
    q_rows, q_cols = all_entries(7, K_cols.shape[0])
    scale = np.abs(a.train_mean_).max()
    np.testing.assert_allclose(
        b.predict(perm[q_rows], q_cols), a.predict(q_rows, q_cols), rtol=0, atol=1e-6 * scale
    )
    np.testing.assert_allclose(b.singular_values_[:3], a.singular_values_[:3], rtol=1e-6)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-8)


def test_ranker_margin_ranks_positives_first_on_its_training_tasks():
    """With a margin, the model ranks its training positives first.

    Sanity of the end-to-end model: with a margin the training positives score above the unlabelled
    items of their task (training AUC near 1), and predict(return_std) gives eq. (10)'s std.
    """
    K_rows, K_cols, rows, cols, y = ranking_problem(M=5, N=15, seed=30)
    y[::15] = 1  # every task has a positive
    model = BipartiteMVGPRanker(noise_var=0.03, margin=0.5, tol=1e-5).fit(K_rows, K_cols, rows, cols, y)
    mean, std = model.predict(rows, cols, return_std=True)
    for m in range(5):
        task = rows == m
        pos, neg = mean[task][y[task] == 1], mean[task][y[task] == 0]
        assert np.mean(pos[:, None] > neg[None, :]) > 0.9
    expected = naive_mvgp_cov(K_rows, K_cols, rows, cols, 0.03, rows, cols)
    np.testing.assert_allclose(std, np.sqrt(np.diag(expected)), atol=1e-10)


# ------------------------------------------------------------------------------ estimator conventions
@pytest.mark.parametrize(
    "make", [lambda: TraceNormMVGP(trace_weight=1.0), lambda: BipartiteMVGPRanker(margin=0.2)]
)
def test_clone_and_pickle_round_trip(make):
    """Clone keeps the parameters; a pickled model predicts the same means and stds."""
    K_rows, K_cols, rows, cols, y = ranking_problem()
    est = make()
    assert clone(est).get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        est.predict([0], [0])
    est.fit(K_rows, K_cols, rows, cols, y)
    q = all_entries(*K_rows.shape[:1], K_cols.shape[0])
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.predict(*q), est.predict(*q))
    np.testing.assert_array_equal(
        restored.predict(*q, return_std=True)[1], est.predict(*q, return_std=True)[1]
    )


def _bad_calls():
    """Return (call, error, message pattern) triples of invalid inputs."""
    K, rows, cols, v = np.eye(3) + 0.1, np.array([0, 1]), np.array([1, 2]), np.array([1.0, -1.0])

    def fit(est, **kw):
        return est.fit(**{"K_rows": K, "K_cols": K, "rows": rows, "cols": cols, "values": v, **kw})

    def rank(**kw):
        return BipartiteMVGPRanker().fit(
            **{"K_rows": K, "K_cols": K, "rows": rows, "cols": cols, "y": [1, 0], **kw}
        )

    asym = K.copy()
    asym[0, 1] += 0.5
    return [
        (lambda: fit(TraceNormMVGP(noise_var=0.0)), ValueError, "'noise_var' parameter of TraceNormMVGP"),
        (lambda: fit(TraceNormMVGP(trace_weight=-1.0)), ValueError, "'trace_weight' parameter"),
        (lambda: fit(TraceNormMVGP(max_iter=0)), ValueError, "'max_iter' parameter"),
        (lambda: fit(TraceNormMVGP(), K_rows=np.ones((3, 2))), ValueError, "must be a square"),
        (lambda: fit(TraceNormMVGP(), K_rows=asym), ValueError, "not symmetric"),
        (lambda: fit(TraceNormMVGP(), K_rows=-K), ValueError, "not positive semi-definite"),
        (lambda: fit(TraceNormMVGP(), K_cols=np.full((3, 3), np.nan)), ValueError, "NaN or infinite"),
        (lambda: fit(TraceNormMVGP(), rows=np.array([0, 3])), ValueError, r"index into 'K_rows' \(0 .. 2\)"),
        (lambda: fit(TraceNormMVGP(), rows=np.array([0.0, 1.0])), TypeError, "integer indices"),
        (lambda: fit(TraceNormMVGP(), cols=np.array([0, 1, 2])), ValueError, "one entry per observation"),
        (lambda: fit(TraceNormMVGP(), values=np.array([1.0])), ValueError, "one value per observed entry"),
        (lambda: fit(TraceNormMVGP(), values=np.array([1.0, np.inf])), ValueError, "NaN or infinite values"),
        (lambda: TraceNormMVGP().path(K, K, rows, cols, v, alpha=1.0), ValueError, "'alpha' parameter"),
        (lambda: TraceNormMVGP().path(K, K, rows, cols, v, lambdas=[1.0, -1.0]), ValueError, "'lambdas'"),
        (lambda: rank(y=np.array([2, 0])), ValueError, r"binary labels, \{0, 1\} or \{-1, 1\}"),
        (lambda: rank(y=np.array([1])), ValueError, "one label per observed entry"),
        (
            lambda: BipartiteMVGPRanker(margin=1.0).fit(K, K, rows, cols, [1, 0]),
            ValueError,
            "'margin' parameter",
        ),
        (
            lambda: BipartiteMVGPRanker(init="zeros").fit(K, K, rows, cols, [1, 0]),
            ValueError,
            "'init' parameter",
        ),
    ]


@pytest.mark.parametrize(("call", "error", "match"), _bad_calls())
def test_errors_name_the_argument_and_the_fix(call, error, match):
    """Every invalid input raises an error that names the argument."""
    with pytest.raises(error, match=match):
        call()


def test_predict_errors():
    """Predict validates its arguments and extended kernels."""
    K_rows, K_cols = rbf_kernel(4, 40), rbf_kernel(5, 41)
    rows, cols, values = observations(4, 5, "grid", 42)
    model = TraceNormMVGP().fit(K_rows, K_cols, rows, cols, values)
    with pytest.raises(ValueError, match="return_std or return_cov, not both"):
        model.predict([0], [0], return_std=True, return_cov=True)
    with pytest.raises(ValueError, match="leading 4 x 4 block of 'K_rows'"):
        model.predict([0], [0], K_rows=rbf_kernel(6, 99))
    with pytest.raises(ValueError, match="one entry per query"):
        model.predict([0, 1], [0])
    with pytest.raises(ValueError, match=r"index into 'K_cols' \(0 .. 4\)"):
        model.predict([0], [5])


def test_running_out_of_iterations_warns():
    """Both estimators warn (ConvergenceWarning) when max_iter ends the fit before tol is met."""
    K_rows, K_cols, rows, cols, y = ranking_problem()
    with pytest.warns(ConvergenceWarning, match="TraceNormMVGP stopped after max_iter=2"):
        model = TraceNormMVGP(max_iter=2, tol=1e-12).fit(K_rows, K_cols, rows, cols, y)
    assert not model.converged_
    with pytest.warns(ConvergenceWarning, match="BipartiteMVGPRanker stopped after max_iter=2"):
        ranker = BipartiteMVGPRanker(max_iter=2, tol=1e-12).fit(K_rows, K_cols, rows, cols, y)
    assert not ranker.converged_
    assert ranker.n_iter_ == 2


def test_covariance_on_too_many_scattered_observations_is_refused():
    """Scattered observations need eq. (2)'s T × T Cholesky: above 8000 the error says what to do."""
    M, N = 100, 200
    rng = np.random.default_rng(0)
    flat = rng.choice(M * N, size=9000, replace=False)
    model = TraceNormMVGP(max_iter=2, tol=1.0).fit(
        np.eye(M), np.eye(N), flat // N, flat % N, rng.standard_normal(9000)
    )
    model.predict([0], [0])
    with pytest.raises(ValueError, match="9000 scattered observations needs the T x T Cholesky"):
        model.predict([0], [0], return_std=True)
