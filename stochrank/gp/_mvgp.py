"""The trace-norm constrained matrix-variate GP (Koyejo, Lee & Ghosh, sections 2–3).

The fitted posterior (mean eq. (6)/(13), covariance eq. (10)/(2), extension to new rows and
columns by Theorem 1) and the :class:`TraceNormMVGP` estimator with its regularisation path.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._validation import check_int, check_real
from ._mvgp_core import (
    CHUNK,
    MAX_SCATTERED_COVARIANCE,
    Covariance,
    FloatArray,
    GridCovariance,
    GridSampling,
    ScatteredCovariance,
    Solution,
    gradient_at_zero,
    solve,
)
from ._mvgp_inputs import (
    Problem,
    build_problem,
    check_extended_kernel,
    check_indices,
    check_values,
    single_threaded_blas,
)

__all__ = ["TraceNormMVGP"]


# ------------------------------------------------------------------------------------ fitted posterior
class MVGPPosterior(BaseEstimator):  # type: ignore[misc]  # scikit-learn ships no type stubs
    """Parameters, fitted state and prediction shared by :class:`TraceNormMVGP` and the bipartite ranker."""

    noise_var: float
    trace_weight: float
    max_iter: int
    tol: float

    def _check_params(self, owner: str) -> tuple[float, float]:
        """Validate the parameters; return the ridge and trace weights of eq. (14), σ² and μσ²."""
        noise_var = check_real(self.noise_var, "noise_var", owner, low=0.0, low_open=True)
        trace_weight = check_real(self.trace_weight, "trace_weight", owner, low=0.0)
        check_int(self.max_iter, "max_iter", owner, low=1)
        check_real(self.tol, "tol", owner, low=0.0, low_open=True)
        return noise_var, trace_weight * noise_var

    def _set_fitted(self, problem: Problem, solution: Solution, noise_var: float) -> None:
        rb, cb = problem.row_basis, problem.col_basis
        self.n_rows_, self.n_cols_ = problem.K_rows.shape[0], problem.K_cols.shape[0]
        self.row_index_, self.col_index_ = rb.index, cb.index
        self.singular_values_ = solution.singular
        self.rank_ = int(solution.singular.size)
        # eq. (6): ψ(m, n) = K_M(m) A K_N(n)ᵀ with A = row_coef_ col_coef_ᵀ on the observed rows/columns
        self.row_coef_ = rb.to_basis @ (solution.left * solution.singular)
        self.col_coef_ = cb.to_basis @ solution.right_t.T
        self.K_rows_, self.K_cols_ = problem.K_rows, problem.K_cols
        self.objective_ = solution.objective
        self.n_iter_, self.converged_ = solution.n_iter, solution.converged
        self.train_mean_ = problem.op.at_observed(solution.coef)
        if isinstance(problem.op, GridSampling):
            self._covariance: Covariance | None = GridCovariance(rb, cb, noise_var)
        else:
            self._covariance = None  # the T × T Cholesky is built on the first request for std / cov
        self._scattered = (problem.row_local, problem.col_local, noise_var)

    def _covariance_engine(self, owner: str) -> Covariance:
        if self._covariance is None:
            row_local, col_local, noise_var = self._scattered
            T = row_local.size
            if T > MAX_SCATTERED_COVARIANCE:
                raise ValueError(
                    f"{owner}.predict(return_std/return_cov) on {T} scattered observations needs the T x T "
                    f"Cholesky factor of eq. (2) ({8 * T * T / 2**30:.1f} GiB, O(T^3) time); at most "
                    f"{MAX_SCATTERED_COVARIANCE} are supported. Observe every entry of the observed rows x "
                    "columns (the grid case is exact in O(M^3 + N^3)), or fit on fewer observations."
                )
            K_r = self.K_rows_[np.ix_(self.row_index_, self.row_index_)]
            K_c = self.K_cols_[np.ix_(self.col_index_, self.col_index_)]
            self._covariance = ScatteredCovariance(K_r, K_c, row_local, col_local, noise_var)
        return self._covariance

    @single_threaded_blas
    def predict(
        self,
        rows: Any,
        cols: Any,
        return_std: bool = False,
        return_cov: bool = False,
        *,
        K_rows: Any = None,
        K_cols: Any = None,
    ) -> FloatArray | tuple[FloatArray, FloatArray]:
        r"""Posterior mean of the latent entries (rows[i], cols[i]), optionally with their std or covariance.

        Parameters
        ----------
        rows, cols : array-like of int, shape (Q,)
            Row and column index of each entry asked for, into the fitted kernels, or into ``K_rows`` /
            ``K_cols`` when those are given.
        return_std : bool, default False
            Also return the posterior standard deviation of each latent (noise-free) entry, eq. (2).
        return_cov : bool, default False
            Also return the Q × Q posterior covariance of the entries, eq. (10)/(2).
        K_rows, K_cols : array-like of shape (M', M') / (N', N') or None
            Kernels over the fitted indices followed by new ones (rows or columns unseen in training); their
            leading block must be the fitted kernel. The posterior extends to them by Theorem 1.

        Returns
        -------
        mean : ndarray of shape (Q,)
            :math:`ψ(m, n) = K_M(m, I)\, A\, K_N(n, J)^\top`, eq. (6), I and J the observed rows and columns.
        std or cov : ndarray of shape (Q,) or (Q, Q)
            Only when asked for.

        Raises
        ------
        ValueError
            For indices out of range, an extended kernel that disagrees with the fitted one, both
            ``return_std`` and ``return_cov``, or a covariance over too many scattered observations.
        """
        check_is_fitted(self, "row_coef_")
        owner = type(self).__name__
        if return_std and return_cov:
            raise ValueError(
                f"{owner}.predict: ask for return_std or return_cov, not both (std = sqrt(diag(cov)))."
            )
        K_r = check_extended_kernel(K_rows, self.K_rows_, "K_rows", owner)
        K_c = check_extended_kernel(K_cols, self.K_cols_, "K_cols", owner)
        rows = check_indices(rows, "rows", K_r.shape[0], "K_rows", owner)
        cols = check_indices(cols, "cols", K_c.shape[0], "K_cols", owner)
        if rows.size != cols.size:
            raise ValueError(
                f"'rows' and 'cols' of {owner}.predict must have one entry per query; got {rows.size} and "
                f"{cols.size}."
            )
        ur, ri = np.unique(rows, return_inverse=True)
        uc, ci = np.unique(cols, return_inverse=True)
        k_rows = K_r[np.ix_(ur, self.row_index_)]  # kernel rows of the queried rows against the observed ones
        k_cols = K_c[np.ix_(uc, self.col_index_)]
        left, right = k_rows @ self.row_coef_, k_cols @ self.col_coef_
        mean: FloatArray = np.empty(rows.size)
        step = max(1, CHUNK // max(self.rank_, 1))  # the gathered factor rows stay below CHUNK floats
        for s in range(0, rows.size, step):
            mean[s : s + step] = np.einsum("ij,ij->i", left[ri[s : s + step]], right[ci[s : s + step]])
        if not (return_std or return_cov):
            return mean
        engine = self._covariance_engine(owner)
        a, b = engine.project_rows(k_rows.T), engine.project_cols(k_cols.T)
        if return_std:
            var = np.diag(K_r)[rows] * np.diag(K_c)[cols] - engine.reduction_diag(a, b, ri, ci)
            return mean, np.sqrt(np.maximum(var, 0.0))  # clipping rounding only: eq. (2) is a covariance
        prior = K_r[np.ix_(rows, rows)] * K_c[np.ix_(cols, cols)]
        return mean, prior - engine.reduction_full(a, b, ri, ci)


# ------------------------------------------------------------------------------------------- estimator
class TraceNormMVGP(MVGPPosterior):
    r"""Matrix-variate GP regression with a trace-norm constrained posterior mean (Koyejo, Lee & Ghosh).

    Prior :math:`Z \sim GP(0, K_N \otimes K_M)` over rows (tasks) × columns (items), observations
    :math:`r_t \sim N(z_t, σ^2)` at the entries :math:`t = (m_t, n_t) \in T`. The variational posterior
    :math:`q = GP(ψ, S)` under :math:`\|ψ\|_{H,*} \le C` has the mean of eq. (12), solved in the basis form
    eq. (14) with :math:`G_M G_M^\top = K_M`, :math:`G_N G_N^\top = K_N`:

    .. math::
        B^* = \arg\min_B \tfrac12 \sum_{t \in T} (r_t - (G_M B G_N^\top)_t)^2
              + \tfrac{σ^2}{2} \|B\|_F^2 + μ σ^2 \|B\|_*, \qquad ψ = G_M B^* G_N^\top,

    and the covariance of eq. (10), :math:`S = (K^{-1} + P^\top P / σ^2)^{-1}`, the unconstrained MV-GP's
    eq. (2). With ``trace_weight=0`` the mean is the MV-GP posterior mean eq. (1),
    :math:`k_T(m, n)^\top (K_T + σ^2 I)^{-1} r`; larger ``trace_weight`` gives lower-rank means.

    Parameters
    ----------
    noise_var : float > 0, default 1.0
        Observation noise variance σ²; also the weight of the Hilbert-norm (ridge) term.
    trace_weight : float >= 0, default 0.0
        μ: the trace-norm weight is μσ². In the spectral elastic net of eq. (16),
        :math:`λ = σ^2 (1 + μ)` and :math:`α = μ / (1 + μ)`.
    max_iter : int >= 1, default 2000
        Accelerated proximal-gradient iterations.
    tol : float > 0, default 1e-7
        Stop when the gradient mapping's Frobenius norm is at most ``tol`` times that of the gradient at 0.

    Attributes
    ----------
    row_index_, col_index_ : ndarray of int
        Observed rows and columns (sorted); the mean lives in their span (representer theorem).
    row_coef_, col_coef_ : ndarray of shape (n_observed_rows, rank) and (n_observed_cols, rank)
        Factors of eq. (6)'s parameter matrix :math:`A = ` ``row_coef_ @ col_coef_.T`` (rank = ``rank_``).
    singular_values_ : ndarray of shape (rank,)
        Nonzero singular values of :math:`B^*` (:math:`\|ψ\|_{H,*}` is their sum, :math:`\|ψ\|_H^2` the sum
        of their squares).
    rank_ : int
        Rank of the posterior mean.
    train_mean_ : ndarray of shape (T,)
        ψ at the observed entries.
    objective_ : float
        Eq. (14) at the solution; ``objective_path_`` holds its value at every accepted iterate
        (non-increasing).
    n_iter_ : int
        Solver iterations; ``converged_`` whether the tolerance was met within ``max_iter``.
    lambda_, alpha_ : float
        The same model in the spectral-elastic-net parameters of eq. (16).
    K_rows_, K_cols_ : ndarray
        The fitted kernels (needed for predictions at unobserved indices and for the covariance).

    Notes
    -----
    Cost: setting up eigen-decomposes the observed blocks of the kernels, :math:`O(M_o^3 + N_o^3)`. One
    iteration costs :math:`O(D_M D_N)` when every entry of the observed rows × columns is observed once
    (grid; the loss is diagonal in the eigen-bases) and :math:`O(T D_N + M_o D_M D_N)` otherwise, plus the
    thresholding SVD :math:`O(D_M D_N \min(D_M, D_N))` when μ > 0. Memory :math:`O(M^2 + N^2 + T)`; the
    :math:`MN × MN` matrix :math:`K_N \otimes K_M` is never formed. The covariance costs
    :math:`O(M_o N_o)` per entry on a grid; on scattered observations it needs the T × T Cholesky factor
    of eq. (2) (up to 8000 observations).

    References
    ----------
    O. Koyejo, C. Lee, J. Ghosh. *The trace norm constrained matrix-variate Gaussian process for multitask
    bipartite ranking.* arXiv:1302.2576, 2013.
    A. Beck, M. Teboulle. *A fast iterative shrinkage-thresholding algorithm.* SIAM J. Imaging Sci., 2009.

    Examples
    --------
    >>> import numpy as np
    >>> from stochrank.gp import TraceNormMVGP
    >>> K_rows, K_cols = np.eye(3) + 0.5, np.eye(4) + 0.5
    >>> rows, cols = np.array([0, 1, 2, 0]), np.array([0, 1, 2, 3])
    >>> model = TraceNormMVGP(noise_var=0.1, trace_weight=1.0).fit(K_rows, K_cols, rows, cols, [1.0, 1, 1, 1])
    >>> model.predict([1], [3]).round(3), model.rank_
    (array([0.848]), 1)
    """

    def __init__(
        self, *, noise_var: float = 1.0, trace_weight: float = 0.0, max_iter: int = 2000, tol: float = 1e-7
    ) -> None:
        self.noise_var = noise_var
        self.trace_weight = trace_weight
        self.max_iter = max_iter
        self.tol = tol

    @single_threaded_blas
    def fit(self, K_rows: Any, K_cols: Any, rows: Any, cols: Any, values: Any) -> TraceNormMVGP:
        """Fit the posterior mean (eq. (14)) and covariance (eq. (10)) to the observed entries.

        Parameters
        ----------
        K_rows : array-like of shape (M, M)
            Row (task) covariance :math:`K_M`, symmetric positive semi-definite.
        K_cols : array-like of shape (N, N)
            Column (item) covariance :math:`K_N`.
        rows, cols : array-like of int, shape (T,)
            Row and column index of each observed entry.
        values : array-like of shape (T,)
            The observations :math:`r_t`.

        Returns
        -------
        self : TraceNormMVGP
            The fitted estimator.
        """
        problem, data, const = self._problem(K_rows, K_cols, rows, cols, values)
        noise_var, trace = self._check_params("TraceNormMVGP")
        self._fit_from(problem, data, const, noise_var, trace, np.zeros(self._coef_shape(problem)), None)
        return self

    @single_threaded_blas
    def path(
        self,
        K_rows: Any,
        K_cols: Any,
        rows: Any,
        cols: Any,
        values: Any,
        *,
        alpha: float | None = None,
        lambdas: Any = None,
        n_lambdas: int = 30,
        lambda_min_ratio: float = 1e-3,
    ) -> list[TraceNormMVGP]:
        r"""Fit a decreasing sequence of λ at fixed α (eq. (16)), each fit warm-started at the previous one.

        Parameters
        ----------
        K_rows, K_cols, rows, cols, values
            As in :meth:`fit`.
        alpha : float in [0, 1) or None, default None
            Share of the trace norm in the spectral elastic net; None takes this estimator's
            :math:`μ / (1 + μ)`. α = 1 (pure trace norm) is the noise-free limit σ² = 0 and is not offered.
        lambdas : array-like of float > 0 or None, default None
            The λ to fit, sorted decreasing here. None: ``n_lambdas`` values log-spaced from
            :math:`λ_{max}` down to ``lambda_min_ratio`` · :math:`λ_{max}`, with :math:`λ_{max}` the spectral
            norm of the loss gradient at B = 0 divided by α (the smallest λ whose solution is 0; for α = 0
            the spectral norm itself, the seed's choice).
        n_lambdas : int >= 1, default 30
        lambda_min_ratio : float in (0, 1], default 1e-3

        Returns
        -------
        list of TraceNormMVGP
            Fitted estimators, one per λ in decreasing order, with ``noise_var = λ(1 - α)`` and
            ``trace_weight = α / (1 - α)``.
        """
        owner = "TraceNormMVGP.path"
        problem, data, const = self._problem(K_rows, K_cols, rows, cols, values)
        self._check_params("TraceNormMVGP")
        if alpha is None:
            alpha = self.trace_weight / (1.0 + self.trace_weight)
        alpha = check_real(alpha, "alpha", owner, low=0.0, high=1.0, high_open=True)
        if lambdas is None:
            check_int(n_lambdas, "n_lambdas", owner, low=1)
            ratio = check_real(lambda_min_ratio, "lambda_min_ratio", owner, low=0.0, high=1.0, low_open=True)
            top = float(np.linalg.norm(gradient_at_zero(problem.op, data), 2)) / (alpha if alpha > 0 else 1.0)
            if top == 0.0:
                raise ValueError(
                    f"{owner}: every observed value is 0, so every λ gives ψ = 0; pass nonzero values."
                )
            grid = top * np.logspace(0.0, math.log10(ratio), n_lambdas)
        else:
            grid = np.sort(np.asarray(lambdas, dtype=np.float64).ravel())[::-1]
            if grid.size == 0 or not (np.isfinite(grid).all() and grid.min() > 0):
                raise ValueError(f"'lambdas' of {owner} must be finite positive numbers; got {lambdas!r}.")
        fits: list[TraceNormMVGP] = []
        start, lipschitz = np.zeros(self._coef_shape(problem)), None
        for lam in grid:
            est = clone(self).set_params(noise_var=float(lam * (1 - alpha)), trace_weight=alpha / (1 - alpha))
            noise_var, trace = est._check_params("TraceNormMVGP")
            solution = est._fit_from(problem, data, const, noise_var, trace, start, lipschitz)
            start, lipschitz = solution.coef, solution.lipschitz - noise_var
            fits.append(est)
        return fits

    # ---------------------------------------------------------------------------------- internals
    @staticmethod
    def _coef_shape(problem: Problem) -> tuple[int, int]:
        return problem.row_basis.keep, problem.col_basis.keep

    def _problem(
        self, K_rows: Any, K_cols: Any, rows: Any, cols: Any, values: Any
    ) -> tuple[Problem, FloatArray, float]:
        problem = build_problem(K_rows, K_cols, rows, cols, "TraceNormMVGP")
        values = check_values(values, "values", problem.row_local.size, "TraceNormMVGP")
        data, const = problem.op.encode(values)
        return problem, data, const

    def _fit_from(
        self, problem: Problem, data: FloatArray, const: float, noise_var: float, trace: float,
        start: FloatArray, lipschitz: float | None,
    ) -> Solution:  # fmt: skip
        """Solve eq. (14) from ``start`` (``lipschitz``: the data term's known constant, from a path)."""
        L = (problem.op.norm_sq if lipschitz is None else lipschitz) + noise_var
        solution = solve(
            problem.op, data, const, noise_var, trace, start,
            max_iter=self.max_iter, tol=self.tol, lipschitz=L,
        )  # fmt: skip
        self._set_fitted(problem, solution, noise_var)
        if not solution.converged:
            warnings.warn(
                f"TraceNormMVGP stopped after max_iter={self.max_iter} iterations with the gradient mapping "
                f"above tol={self.tol} (noise_var={noise_var:.3g}, trace_weight={self.trace_weight:.3g}); "
                "raise max_iter or tol.",
                ConvergenceWarning,
                stacklevel=3,
            )
        self.objective_path_ = solution.history
        self.lambda_ = noise_var * (1.0 + self.trace_weight)
        self.alpha_ = self.trace_weight / (1.0 + self.trace_weight)
        return solution
