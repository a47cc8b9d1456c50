"""PreferenceGP: a Gaussian-process utility learned from duels by expectation propagation."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.stats import norm
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_array, check_is_fitted
from threadpoolctl import threadpool_limits

from .._validation import check_choice, check_int, check_optional_int, check_real
from ._ep import Array, CholeskyJitterWarning
from ._evidence import Duels, Evidence, choose_inducing, evaluate, maximise_evidence
from ._kernel import ard_linear
from ._pairs import check_pairs

__all__ = ["PreferenceGP"]

METHODS = ("ep-truncated", "ep-probit")


class PreferenceGP(BaseEstimator):  # type: ignore[misc]  # scikit-learn ships no type stubs
    r"""Gaussian-process preference learning by expectation propagation (Takeno et al. 2023; seed 004).

    A utility :math:`f \sim GP(0, k)` with the RBF kernel
    :math:`k(x, x') = s\exp(-\sum_d (x_d-x'_d)^2/(2\ell_d^2))` is learned from duels: a duel
    :math:`x_w \succ x_l` means :math:`f(x_w) + \epsilon_w > f(x_l) + \epsilon_l`,
    :math:`\epsilon \sim N(0, \sigma^2)`. The posterior is approximated by EP, exact or sparse (FITC).

    Parameters
    ----------
    lengthscale : float or array of shape (n_features,), default 1.0
        Initial (or, with ``optimize=False``, fixed) RBF lengthscale(s) ℓ.
    variance : float > 0, default 1.0
        Initial kernel variance s.
    noise : float > 0, default 0.1
        Standard deviation σ of each duel's noise ε (fixed: it sets the utility's unit).
    ard : bool, default True
        One lengthscale per feature (True) or one shared (False).
    optimize : bool, default True
        Maximise :math:`\log Z_{EP}` over the lengthscales and the variance by L-BFGS-B with its analytic
        gradient; False keeps the given values.
    method : {"ep-truncated", "ep-probit"}, default "ep-truncated"
        EP formulation (see above).
    n_inducing : int >= 1 or None, default None
        None: exact EP. An int m: the sparse FITC form with m inducing inputs drawn at random (seeded by
        ``random_state``) among the distinct documents of the duels, held fixed.
    alpha : float, default 0.0
        Risk parameter of :meth:`predict`: scores :math:`\mu + \alpha\sigma` (GPRanker's convention).
    damping : float in (0, 1], default 0.8
        Fraction of each EP update applied (in natural parameters); 1 = undamped.
    max_iter : int >= 1, default 200
        EP sweeps per evaluation.
    tol : float > 0, default 1e-6
        EP stops when no posterior marginal mean or standard deviation of a duel moved by more than
        ``tol`` prior standard deviations in a sweep.
    optimizer_max_iter : int >= 1, default 100
        L-BFGS-B iterations.
    random_state : int, RandomState or None, default None
        Seeds the choice of inducing inputs.

    Attributes
    ----------
    lengthscale_ : ndarray of shape (n_features,)
    variance_, noise_ : float
    log_marginal_likelihood_ : float
        :math:`\log Z_{EP}` at the fitted hyperparameters.
    documents_ : ndarray of shape (n_documents, n_features)
        The distinct rows of ``X`` that appear in a duel (the training inputs).
    duels_ : ndarray of int64, shape (t, 2)
        (winner, loser) rows of ``documents_``.
    inducing_points_ : ndarray of shape (m, n_features) or None
    basis_, weights_, variance_matrix_ :
        Predictive mean :math:`k(x, B)^\top w`, covariance :math:`k(x,x') - k(x, B)^\top P\,k(B, x')`.
    site_precision_, site_natural_mean_ : ndarray of shape (t,)
        EP sites :math:`\tilde\tau, \tilde\nu` of the EP variable (v or z).
    posterior_mean_, posterior_var_ : ndarray of shape (t,)
        EP posterior marginals of the EP variable.
    n_iter_ : int
        EP sweeps of the final run; ``converged_`` says whether it met ``tol``.
    n_skipped_updates_ : int
        Site updates skipped in the final run (cavity precision <= 0 by rounding).
    n_optimizer_iter_ : int
        L-BFGS-B iterations (0 without ``optimize``).
    jitter_ : float
        Jitter added to :math:`K_{uu}` beyond the model's own 1e-8·s (relative to its mean diagonal); a
        :class:`~stochrank.gp.CholeskyJitterWarning` says when it is not 0.

    Notes
    -----
    The data are :math:`v < 0` with :math:`v_i = f(x_{l,i}) + \epsilon_{l,i} - f(x_{w,i}) - \epsilon_{w,i}`,
    a truncated multivariate normal with :math:`\Sigma_0 = A K A^\top + 2\sigma^2 I` (A: +1 at the loser,
    -1 at the winner of each duel).

    * ``method="ep-truncated"``: EP on v itself with one-dimensional moment matching: the seed's cavity,
      truncated-normal moments and site updates :math:`\tilde\mu_j, \tilde\sigma^2_j` (three typos of the
      seed corrected: :math:`E_{r_j}[v_j] = \bar\mu - \lambda\bar\sigma` and
      :math:`\tilde\mu_j = \bar\mu - \bar\sigma/(\beta+\lambda)` for the truncation to :math:`v < 0`,
      :math:`\mu = \Sigma(\tilde\Sigma^{-1}\tilde\mu + \Sigma_0^{-1}\mu_0)`, and the probit form's prior
      :math:`\Sigma_0 - 2\sigma^2 I`);
    * ``method="ep-probit"``: EP on :math:`z_i = f(x_{l,i}) - f(x_{w,i})` with probit sites
      :math:`\Phi(-z_i/(\sqrt2\sigma))` as in GP classification (Rasmussen & Williams, ch. 3).

    The two reach the same fixed point (a v-site of variance :math:`\tilde\sigma^2` is the z-site of
    variance :math:`\tilde\sigma^2 + 2\sigma^2`), so predictions and :math:`\log Z_{EP}` agree to the EP
    tolerance. Predictions: :math:`\mu_* = \Sigma_{*v}(\Sigma_0 + \tilde\Sigma)^{-1}\tilde\mu`,
    :math:`\Sigma_* = \Sigma_{**} - \Sigma_{*v}(\Sigma_0 + \tilde\Sigma)^{-1}\Sigma_{v*}`, computed in
    natural parameters. EP is parallel and damped, with stable tail formulas (log Φ, the Mills ratio's
    continued fraction) and a convergence check; both site families are log-concave, so site precisions are
    >= 0 in exact arithmetic: a cavity precision <= 0 from rounding skips that site for one sweep
    (``n_skipped_updates_``) and a negative proposed precision is clipped to 0.

    Identifiability: only :math:`f/\sigma` enters the likelihood, so :math:`\log Z_{EP}` is exactly invariant
    under :math:`(s, \sigma) \to (c^2 s, c\sigma)`. ``noise`` therefore sets the utility's unit and stays
    fixed; ``optimize=True`` maximises :math:`\log Z_{EP}` over the lengthscales and ``variance`` (the
    gradient in all three is :meth:`log_marginal_likelihood`'s, and along the invariant direction it is 0).
    With few duels that a function can satisfy without generalising (each document far from the others),
    the evidence can prefer short lengthscales and a large ``variance``: compare with ``optimize=False``.

    Cost: exact EP is O(t³) time and O(t²) memory per sweep for t duels (plus O(n²·D) for the kernel of
    the n documents in the duels); with ``n_inducing=m`` (FITC in duel space: duels conditionally
    independent given f at m inducing documents) O(t·m² + n·m·D) time and O(t·m) memory per sweep.
    Prediction costs O(n·D + n²) per row (exact) or O(m·D + m²) (sparse).

    References
    ----------
    Takeno, Nomura, Karasuyama, *Towards practical preferential Bayesian optimization with skew Gaussian
    processes*, ICML 2023. Chu & Ghahramani, *Preference learning with Gaussian processes*, ICML 2005.
    Rasmussen & Williams, *Gaussian Processes for Machine Learning*, 2006, sections 3.6 and 5.5.

    Examples
    --------
    >>> import numpy as np
    >>> from stochrank.gp import PreferenceGP
    >>> X = np.linspace(0, 1, 6)[:, None]
    >>> pairs = np.array([[5, 0], [4, 1], [3, 2], [5, 2]])  # larger x wins
    >>> gp = PreferenceGP(lengthscale=0.5, optimize=False).fit(X, pairs)
    >>> bool(gp.duel_probability(X[[5]], X[[0]])[0] > 0.5)
    True
    """

    def __init__(
        self,
        *,
        lengthscale: float | Array = 1.0,
        variance: float = 1.0,
        noise: float = 0.1,
        ard: bool = True,
        optimize: bool = True,
        method: str = "ep-truncated",
        n_inducing: int | None = None,
        alpha: float = 0.0,
        damping: float = 0.8,
        max_iter: int = 200,
        tol: float = 1e-6,
        optimizer_max_iter: int = 100,
        random_state: Any = None,
    ) -> None:
        self.lengthscale = lengthscale
        self.variance = variance
        self.noise = noise
        self.ard = ard
        self.optimize = optimize
        self.method = method
        self.n_inducing = n_inducing
        self.alpha = alpha
        self.damping = damping
        self.max_iter = max_iter
        self.tol = tol
        self.optimizer_max_iter = optimizer_max_iter
        self.random_state = random_state

    # ------------------------------------------------------------------------------------ checks
    def _check_params(self, n_features: int) -> Array:
        """Validate the parameters; return the initial θ = (log ℓ, log s, log σ)."""
        owner = "PreferenceGP"
        check_choice(self.method, "method", owner, METHODS)
        check_real(self.variance, "variance", owner, low=0.0, low_open=True)
        check_real(self.noise, "noise", owner, low=0.0, low_open=True)
        check_real(self.alpha, "alpha", owner)
        check_real(self.damping, "damping", owner, low=0.0, high=1.0, low_open=True)
        check_real(self.tol, "tol", owner, low=0.0, low_open=True)
        check_int(self.max_iter, "max_iter", owner, low=1)
        check_int(self.optimizer_max_iter, "optimizer_max_iter", owner, low=1)
        check_optional_int(self.n_inducing, "n_inducing", owner, low=1, none_means="exact EP")
        for name in ("ard", "optimize"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(
                    f"The '{name}' parameter of {owner} must be a bool. Got {getattr(self, name)!r}."
                )
        ls = np.asarray(self.lengthscale, dtype=np.float64)
        n_len = n_features if self.ard else 1
        if ls.ndim == 0:
            ls = np.full(n_len, float(ls))
        if ls.shape != (n_len,) or not np.all(np.isfinite(ls)) or not np.all(ls > 0):
            raise ValueError(
                f"The 'lengthscale' parameter of {owner} must be a positive float or, with ard=True, an "
                f"array of {n_features} positive floats (one per feature); got {self.lengthscale!r}. With "
                "ard=False pass a single float."
            )
        return np.concatenate([np.log(ls), [np.log(self.variance), np.log(self.noise)]])

    def _check_X(self, X: Any, name: str, *, fitting: bool = False) -> Array:
        arr = check_array(X, dtype=np.float64, ensure_all_finite=False, input_name=name)
        bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
        if bad.size:
            raise ValueError(
                f"PreferenceGP: '{name}' has NaN or infinite features in {bad.size} row(s) (first: row "
                f"{bad[0]}); the kernel needs finite features. Impute them or drop those rows (and their "
                "duels)."
            )
        if fitting:
            self.n_features_in_ = arr.shape[1]
        elif arr.shape[1] != self.n_features_in_:
            raise ValueError(
                f"PreferenceGP: '{name}' has {arr.shape[1]} features, but the model was fitted with "
                f"{self.n_features_in_}; pass the same feature columns as in fit."
            )
        return np.asarray(arr)

    # --------------------------------------------------------------------------------------- fit
    def fit(self, X: Any, pairs: Any) -> PreferenceGP:
        """Fit the utility to duels ``pairs`` = (winner, loser) row indices into ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite features of the documents.
        pairs : array-like of int, shape (n_duels, 2)
            Each row (w, l): document ``X[w]`` was preferred to ``X[l]``.

        Returns
        -------
        self : PreferenceGP

        Raises
        ------
        ValueError
            For invalid parameters, non-finite features, or duels that are empty, out of range or of a
            document against itself; each message names the fix.
        """
        X = self._check_X(X, "X", fitting=True)
        theta = self._check_params(X.shape[1])
        idx = check_pairs(pairs, X.shape[0], "PreferenceGP.fit")
        rows, inverse = np.unique(idx.ravel(), return_inverse=True)
        self.documents_ = X[rows]
        self.duels_ = inverse.reshape(-1, 2).astype(np.int64)
        self.inducing_points_ = choose_inducing(self.documents_, self.n_inducing, self.random_state)
        duels = Duels(self.documents_, self.duels_[:, 0], self.duels_[:, 1], self.inducing_points_)
        # Small dense products: multithreaded BLAS gains little and, on a busy machine, its spinning
        # threads made a 150 x 150 Cholesky 100 times slower (measured on 2 cores), as in SparseGP.
        with threadpool_limits(limits=1, user_api="blas"):
            theta, self.n_optimizer_iter_, jittered = (theta, 0, 0)
            if self.optimize:
                theta, self.n_optimizer_iter_, jittered = maximise_evidence(
                    duels, theta, self.ard, self.optimizer_max_iter, self._evaluate
                )
            final = self._evaluate(duels, theta, gradient=False)
        self._set_fitted(theta, final)
        if final.jitter or jittered:
            where = f"the fitted K_uu needed jitter {final.jitter:.0e} x its mean diagonal"
            if not final.jitter:
                where = f"{jittered} K_uu tried by the optimiser needed jitter (the fitted one did not)"
            warnings.warn(
                f"PreferenceGP: {where}: the inducing points are nearly collinear under the kernel. Use "
                "fewer inducing points (n_inducing) or check for duplicated documents.",
                CholeskyJitterWarning,
                stacklevel=2,
            )
        if not final.ep.converged:
            warnings.warn(
                f"PreferenceGP: EP did not converge in max_iter={self.max_iter} sweeps (tol={self.tol:g}). "
                "Raise max_iter or lower damping.",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _evaluate(
        self, duels: Duels, theta: Array, *, gradient: bool, init: tuple[Array, Array] | None = None
    ) -> Evidence:
        return evaluate(
            duels, theta, self.method, damping=self.damping, max_iter=self.max_iter, tol=self.tol,
            gradient=gradient, init=init,
        )  # fmt: skip

    def _set_fitted(self, theta: Array, ev: Evidence) -> None:
        self.theta_ = theta
        self.lengthscale_ = np.exp(theta[:-2]) * np.ones(self.n_features_in_)
        self.variance_ = float(np.exp(theta[-2]))
        self.noise_ = float(np.exp(theta[-1]))
        self.log_marginal_likelihood_ = ev.log_z
        self.basis_ = ev.basis
        self.weights_ = ev.weights
        self.variance_matrix_ = ev.variance_matrix
        self.site_precision_ = ev.ep.tau
        self.site_natural_mean_ = ev.ep.nu
        self.posterior_mean_ = ev.ep.mean
        self.posterior_var_ = ev.ep.var
        self.n_iter_ = ev.ep.n_iter
        self.converged_ = ev.ep.converged
        self.n_skipped_updates_ = ev.ep.n_skipped
        self.jitter_ = ev.jitter

    # ------------------------------------------------------------------------------ evidence
    def log_marginal_likelihood(
        self, theta: Any = None, eval_gradient: bool = False
    ) -> float | tuple[float, Array]:
        r""":math:`\log Z_{EP}` of the training duels at ``theta`` (default: the fitted one).

        Parameters
        ----------
        theta : array-like, optional
            :math:`(\log\ell_1, \dots, \log\ell_D, \log s, \log\sigma)` (one :math:`\log\ell` with
            ``ard=False``), the order of ``theta_``.
        eval_gradient : bool, default False
            Also return the analytic gradient with respect to ``theta`` (exact at the EP fixed point).

        Returns
        -------
        log_z : float
        gradient : ndarray, only with ``eval_gradient=True``
        """
        check_is_fitted(self, "theta_")
        theta = self.theta_ if theta is None else np.asarray(theta, dtype=np.float64)
        if theta.shape != self.theta_.shape or not np.all(np.isfinite(theta)):
            raise ValueError(
                f"PreferenceGP.log_marginal_likelihood: 'theta' must be {self.theta_.size} finite log "
                "hyperparameters in the order of theta_ (log lengthscales, log variance, log noise); "
                f"got {theta!r}."
            )
        duels = Duels(self.documents_, self.duels_[:, 0], self.duels_[:, 1], self.inducing_points_)
        with threadpool_limits(limits=1, user_api="blas"):
            ev = self._evaluate(duels, theta, gradient=eval_gradient)
        return (ev.log_z, np.asarray(ev.gradient)) if eval_gradient else ev.log_z

    # ---------------------------------------------------------------------------- prediction
    def _kernel(self, Xa: Array, Xb: Array) -> Array:
        return ard_linear(Xa, Xb, self.variance_, self.lengthscale_, np.zeros(self.n_features_in_))[0]

    def _moments(self, X: Any, name: str = "X") -> tuple[Array, Array, Array, Array]:
        """Posterior mean and variance of f at the validated rows ``X``, k(X, basis) and ``X``."""
        check_is_fitted(self, "theta_")
        X = self._check_X(X, name)
        with threadpool_limits(limits=1, user_api="blas"):
            Kb = self._kernel(X, self.basis_)
            var = self.variance_ - np.einsum("ij,ij->i", Kb @ self.variance_matrix_, Kb)
        return Kb @ self.weights_, np.maximum(var, 0.0), Kb, X  # the clip only removes rounding below 0

    def predict(self, X: Any, return_std: bool = False) -> Array | tuple[Array, Array]:
        r"""Posterior utility: scores :math:`\mu + \alpha\sigma`, or ``(μ, σ)`` with ``return_std=True``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default False
            Return the posterior mean and standard deviation of f (the duel noise ε not included, ``alpha``
            not applied): scikit-learn's GaussianProcessRegressor protocol, so a fitted model is a variance
            source for ``stochrank.softrank(variance=model)``.

        Returns
        -------
        scores : ndarray of shape (n_samples,), or ``(mean, std)``
        """
        mean, var, _, _ = self._moments(X)
        std = np.sqrt(var)
        if return_std:
            return mean, std
        return mean + self.alpha * std if self.alpha else mean

    def predict_cov(self, X: Any) -> Array:
        """Posterior covariance matrix of f at the rows of ``X`` (n_samples × n_samples)."""
        _, _, Kb, X = self._moments(X)
        with threadpool_limits(limits=1, user_api="blas"):
            cov = self._kernel(X, X) - Kb @ self.variance_matrix_ @ Kb.T
        return np.asarray(0.5 * (cov + cov.T))

    def duel_probability(self, Xa: Any, Xb: Any) -> Array:
        r""":math:`P(f(a) + \epsilon_a > f(b) + \epsilon_b)` for each row pair under the EP posterior.

        :math:`\Phi\big((\mu_a - \mu_b)
        / \sqrt{\sigma_a^2 + \sigma_b^2 - 2\,\mathrm{cov}_{ab} + 2\sigma^2}\big)`.
        """
        mean_a, var_a, Ka, Xa = self._moments(Xa, "Xa")
        mean_b, var_b, Kb, Xb = self._moments(Xb, "Xb")
        if mean_a.size != mean_b.size:
            raise ValueError(
                f"PreferenceGP.duel_probability: 'Xa' has {mean_a.size} rows and 'Xb' {mean_b.size}; pass "
                "one row of Xb per row of Xa (row i of each is one duel)."
            )
        k_ab = self.variance_ * np.exp(-0.5 * np.sum(((Xa - Xb) / self.lengthscale_) ** 2, axis=1))
        cov = k_ab - np.einsum("ij,ij->i", Ka @ self.variance_matrix_, Kb)
        total = np.maximum(var_a + var_b - 2.0 * cov, 0.0) + 2.0 * self.noise_**2
        return np.asarray(norm.cdf((mean_a - mean_b) / np.sqrt(total)))
