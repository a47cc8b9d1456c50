"""GradientGP: Gaussian-process gradient learning (GPGL) as a scikit-learn estimator."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_array, check_is_fitted
from threadpoolctl import threadpool_limits

from .._validation import check_choice, check_int, check_optional_int, check_real
from ._gradient_engines import ExactEngine, InducingEngine
from ._taylor import bandwidth_from_rule, pair_statistics, principal_directions, rbf

Array = npt.NDArray[np.float64]

__all__ = ["GradientGP", "check_gradient_inputs", "resolve_bandwidth"]

BANDWIDTH_RULES = ("median", "knn")
# "auto" takes the exact path while the β space (n · min(d, n-1) pseudo-observations) stays this small:
# an exact evaluation costs O(n_k³), about a second at 600 on the shared 2-core machine (12 s at 1500).
EXACT_MAX_PSEUDO_OBSERVATIONS = 600
# L-BFGS-B stops when the log marginal likelihood improves by less than this fraction: the learned
# relevances stop moving long before the default 2e-9 (measured: 60 against 200 iterations, 46-d ARD).
_FTOL = 1e-5
_LOG_BOX = 12.0  # L-BFGS-B box: initial log value ± 12 for amplitudes and noise, ± 5 around s for ell


def check_gradient_inputs(X: Any, y: Any, owner: str) -> tuple[Array, Array]:
    """Return ``X`` (n, m) and ``y`` (n,) as float64, checked for a gradient learner (at least 3 rows)."""
    X = check_array(X, dtype=np.float64, input_name="X")
    y = check_array(y, dtype=np.float64, ensure_2d=False, input_name="y")
    if y.ndim != 1 or y.size != X.shape[0]:
        raise ValueError(
            f"y must be 1-D with one target per row of X ({X.shape[0]} rows); got shape {y.shape}. "
            "Pass y as a flat array, e.g. y.ravel()."
        )
    if X.shape[0] < 3:
        raise ValueError(
            f"{owner} needs at least 3 rows to form Taylor pairs; got {X.shape[0]}. Pass more samples."
        )
    return X, y


def resolve_bandwidth(bandwidth: Any, n_neighbors: Any, T: Array, owner: str) -> float:
    """Return the Taylor-weight bandwidth s > 0 from a rule name or a positive float."""
    if isinstance(bandwidth, str):
        check_choice(bandwidth, "bandwidth", owner, BANDWIDTH_RULES)
        check_int(n_neighbors, "n_neighbors", owner, low=1)
        s = bandwidth_from_rule(T, bandwidth, n_neighbors)
        if not s > 0:
            raise ValueError(
                f"The bandwidth rule {bandwidth!r} of {owner} gave s = {s} (duplicated rows). Pass a "
                "positive float bandwidth, or bandwidth='median' with fewer duplicates."
            )
        return s
    return check_real(bandwidth, "bandwidth", owner, low=0.0, low_open=True)


class GradientGP(BaseEstimator):  # type: ignore[misc]  # scikit-learn ships no type stubs
    r"""Gaussian-process gradient learning (GPGL; Jiang, Gao, Wang & Kwan 2010).

    A GP posterior over the gradient field of a regression function, learned directly from first-order
    Taylor pairs.

    Prior: the m partial derivatives at the n inputs are jointly Gaussian with covariance
    :math:`K_{ff} \otimes K_{XX}` (:math:`K_{ff}` diagonal, learned amplitudes; :math:`K_{XX}` a unit RBF of
    lengthscale ell). Likelihood: every ordered pair gives
    :math:`y_j - y_i = f(x_i)^\top (x_j - x_i) + \varepsilon_{ij}` with weight
    :math:`w_{ij} = \exp(-\lVert x_i - x_j\rVert^2 / 2s^2)` and pair-noise variance :math:`τ^2/w_{ij}`.
    The posterior of the gradients (at the data and at new points) is Gaussian; ell, the amplitudes and τ²
    maximise the marginal likelihood (L-BFGS-B, analytic gradients).

    Parameters
    ----------
    bandwidth : {"median", "knn"} or float, default "median"
        The Taylor-weight bandwidth s: the median pairwise distance (the seed's rule), the median distance to
        the ``n_neighbors``-th nearest neighbour (local: use it for smooth low-dimensional functions, where
        the median over-smooths), or a fixed positive value. Distances are taken in the working coordinates.
    n_neighbors : int, default 15
        Neighbour rank of ``bandwidth="knn"``.
    coordinate_cov : {"diagonal", "isotropic"}, default "diagonal"
        :math:`K_{ff}`: one amplitude per working coordinate (ARD) or one shared amplitude.
    likelihood : {"local", "seed"}, default "local"
        How the pair-noise variance τ² is learned. ``"seed"``: the density of all n(n-1) pair differences
        (the seed's eq. 7), which counts every pair as an independent observation and drives τ² to the noise
        of the closest pairs (95 % intervals covered 2-50 % of 1-D test points). ``"local"``: the same
        pseudo-likelihood in f, counting the :math:`n_k` directions in which the pairs inform the gradients,
        :math:`\log\mathcal N(β; 0, K_β) - R/2τ^2` (module :mod:`._gradient_engines`). For fixed
        hyper-parameters both give the same posterior.
    variance_fraction : float in (0, 1], default 1.0
        Below 1, learn the gradient in the leading principal directions of the centred X that explain this
        fraction of its variance (Mukherjee & Zhou's reduction for m ≫ n) and map it back; gradient components
        outside that span are 0. 1.0 works in the original coordinates. Needed when m ≫ n: on the seed's
        80-d example (n = 30) 0.95 finds exactly the relevant coordinates; with 1.0 ARD zeroes some of them.
    method : {"auto", "exact", "inducing"}, default "auto"
        ``"exact"``: O(n_k³) per evaluation, :math:`n_k = \sum_i \mathrm{rank}\,B_i \le n\min(d, n-1)`
        (the naive dense form is O(d³n³)). ``"inducing"``: each partial derivative in the span of
        ``n_inducing`` training inputs, O(n d² r² + (d r)³). ``"auto"``: exact while
        :math:`n\min(d, n-1) \le 600`.
    n_inducing : int, default 32
        Number r of inducing inputs (drawn from the training rows with ``random_state``).
    n_hyper : int or None, default 500
        Learn the hyper-parameters on a random subsample of this many rows when there are more (None: all);
        the posterior then conditions on every row. An evaluation costs O(n d² r² + (d r)³) on the inducing
        path, so this bounds the optimisation's cost independently of n.
    length_scale, amplitude, noise : float or None, default None
        Initial ell, amplitude and τ² (None: s; the mean square of local least-squares gradients; a tenth of
        the weighted mean square pair difference). Kept as they are when ``optimizer=None``.
    optimizer : {"L-BFGS-B"} or None, default "L-BFGS-B"
        None keeps the initial hyper-parameters.
    max_iter : int, default 100
        L-BFGS-B iterations.
    n_samples : int, default 1000
        Posterior draws for ``feature_relevance_`` and its interval.
    random_state : int or None, default 0
        Seeds the inducing inputs and the posterior draws.

    Attributes
    ----------
    gradients_ : ndarray (n, m)
        Posterior mean of the gradient at every training row.
    egm_ : ndarray (m, n)
        Empirical gradient matrix: the columns are the gradients at the training rows.
    gop_ : ndarray (m, m)
        Gradient outer product :math:`\frac1n \sum_i \hat f(x_i)\hat f(x_i)^\top` (posterior means).
    ecm_ : ndarray (m, m)
        Empirical covariance matrix :math:`[\langle \hat f_p, \hat f_q\rangle_K]` of the posterior-mean
        partial derivatives in the RKHS of :math:`K_{XX}`.
    feature_relevance_ : ndarray (m,)
        Posterior mean of the RMS partial derivative :math:`rho_p = (\frac1n\sum_i f_p(x_i)^2)^{1/2}`
        (Monte Carlo over ``n_samples`` joint draws), with ``feature_relevance_std_`` and the 95 % credible
        interval ``feature_relevance_interval_`` (m, 2).
    log_marginal_likelihood_ : float
        At the learned hyper-parameters (``likelihood``'s form).
    length_scale_, amplitude_ (d,), noise_, bandwidth_ : learned ell, amplitudes, τ² and the bandwidth s.
    components_ : ndarray (d, m) or None
        Principal directions of the working space (None when ``variance_fraction=1``).
    method_ : str
        "exact" or "inducing". ``n_iter_``: L-BFGS-B iterations run.

    Notes
    -----
    Cost of the exact path: building :math:`K_β = (C^\top K_{ff} C) \odot K_{XX}[pt, pt] + τ^2 I` from the
    Kronecker factors is O(d n_k²); its Cholesky O(n_k³). Predictions use the vec trick,
    :math:`(K_{ff}\otimes K_{*X})\,\mathrm{vec}(G)` = ``(K_*X @ G) * a``.

    References
    ----------
    X. Jiang, J. Gao, T. Wang, P. W. Kwan. *Learning gradients with Gaussian processes.* PAKDD 2010.
    S. Mukherjee, D.-X. Zhou. *Learning coordinate covariances via gradients.* JMLR 7, 2006.

    Examples
    --------
    >>> import numpy as np
    >>> from stochrank.gp import GradientGP
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3))
    >>> gp = GradientGP().fit(X, X @ [2.0, 0.0, -1.0])
    >>> np.round(gp.feature_relevance_, 1)  # doctest: +SKIP
    array([2. , 0. , 1. ])
    """

    def __init__(
        self,
        *,
        bandwidth: str | float = "median",
        n_neighbors: int = 15,
        coordinate_cov: str = "diagonal",
        likelihood: str = "local",
        variance_fraction: float = 1.0,
        method: str = "auto",
        n_inducing: int = 32,
        n_hyper: int | None = 500,
        length_scale: float | None = None,
        amplitude: float | None = None,
        noise: float | None = None,
        optimizer: str | None = "L-BFGS-B",
        max_iter: int = 100,
        n_samples: int = 1000,
        random_state: int | None = 0,
    ) -> None:
        self.bandwidth = bandwidth
        self.n_neighbors = n_neighbors
        self.coordinate_cov = coordinate_cov
        self.likelihood = likelihood
        self.variance_fraction = variance_fraction
        self.method = method
        self.n_inducing = n_inducing
        self.n_hyper = n_hyper
        self.length_scale = length_scale
        self.amplitude = amplitude
        self.noise = noise
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.n_samples = n_samples
        self.random_state = random_state

    # ------------------------------------------------------------------------------------ checks
    def _check_params(self, owner: str) -> None:
        check_choice(self.coordinate_cov, "coordinate_cov", owner, ("diagonal", "isotropic"))
        check_choice(self.likelihood, "likelihood", owner, ("local", "seed"))
        check_choice(self.method, "method", owner, ("auto", "exact", "inducing"))
        check_real(self.variance_fraction, "variance_fraction", owner, low=0.0, high=1.0, low_open=True)
        check_int(self.n_inducing, "n_inducing", owner, low=1)
        check_optional_int(self.n_hyper, "n_hyper", owner, low=3, none_means="all rows")
        check_int(self.max_iter, "max_iter", owner, low=1)
        check_int(self.n_samples, "n_samples", owner, low=2)
        for name in ("length_scale", "amplitude", "noise"):
            if getattr(self, name) is not None:
                check_real(getattr(self, name), name, owner, low=0.0, low_open=True)
        if self.optimizer not in ("L-BFGS-B", None):
            raise ValueError(
                f"The 'optimizer' parameter of {owner} must be 'L-BFGS-B' or None (keep the initial "
                f"hyper-parameters). Got {self.optimizer!r} instead."
            )

    # --------------------------------------------------------------------------------------- fit
    def fit(self, X: Any, y: Any) -> GradientGP:
        """Learn the hyper-parameters and the posterior of the gradient field from ``(X, y)``."""
        # One BLAS thread: on the shared 2-core machine multithreaded BLAS made the batched dxd and (dr)²
        # products up to 100 times slower (spinning threads); the work is many mid-sized products.
        with threadpool_limits(limits=1, user_api="blas"):
            return self._fit(X, y)

    def _fit(self, X: Any, y: Any) -> GradientGP:
        owner = type(self).__name__
        self._check_params(owner)
        X, y = check_gradient_inputs(X, y, owner)
        n, m = X.shape
        self.n_features_in_ = m
        self.X_mean_ = X.mean(0)
        T = X - self.X_mean_
        self.components_: Array | None = None
        if self.variance_fraction < 1.0:
            V, _ = principal_directions(T, self.variance_fraction)
            self.components_ = V.T
            T = T @ V
        d = T.shape[1]
        self.bandwidth_ = resolve_bandwidth(self.bandwidth, self.n_neighbors, T, owner)
        rng = np.random.default_rng(self.random_state)
        exact = self.method == "exact" or (
            self.method == "auto" and n * min(d, n - 1) <= EXACT_MAX_PSEUDO_OBSERVATIONS
        )
        self.method_ = "exact" if exact else "inducing"
        # hyper-parameters on a random subsample (they describe the gradient field and the per-pair noise,
        # not n); the inducing inputs are drawn inside it so that both phases share them
        rows = np.arange(n)
        if self.n_hyper is not None and n > self.n_hyper and self.optimizer is not None:
            rows = np.sort(rng.choice(n, self.n_hyper, replace=False))
        inducing = np.sort(rng.choice(rows, min(self.n_inducing, rows.size), replace=False))

        def make_engine(index: npt.NDArray[np.int64]) -> ExactEngine | InducingEngine:
            stats = pair_statistics(T[index], y[index], self.bandwidth_)
            if exact:
                return ExactEngine(T[index], stats, self.likelihood)
            return InducingEngine(T[index], stats, self.likelihood, T[inducing])

        engine = make_engine(rows)
        theta0, bounds = self._initial_theta(engine.stats, d)
        if self.optimizer is None:
            theta, self.n_iter_ = theta0, 0
        else:
            theta, self.n_iter_ = self._optimise(engine, theta0, bounds)
        if rows.size < n:
            engine = make_engine(np.arange(n))
        if not exact:
            self.inducing_points_ = self._to_features(T[inducing]) + self.X_mean_
        self.log_marginal_likelihood_ = engine.condition(theta)
        self._engine = engine
        self.length_scale_ = engine.ell
        self.amplitude_ = engine.amp.copy()
        self.noise_ = engine.tau2
        self._summaries(engine, rng)
        engine.release()
        return self

    def _initial_theta(self, stats: Any, d: int) -> tuple[Array, list[tuple[float, float]]]:
        local = np.linalg.pinv(stats.B, hermitian=True) @ stats.b[:, :, None]  # local least-squares gradients
        mean_sq = np.maximum((local[:, :, 0] ** 2).mean(0), 1e-12)
        if self.amplitude is not None:
            log_amp = np.full(d, np.log(self.amplitude))
        else:
            log_amp = np.log(np.maximum(mean_sq, 1e-6 * mean_sq.max()))
        if self.coordinate_cov == "isotropic":
            log_amp = np.array([log_amp.mean()]) if self.amplitude is None else log_amp[:1]
        # scale-free start: a tenth of the weighted square pair difference per informative direction
        start_noise = 0.1 * stats.zWz / max(stats.n_informative, 1) + 1e-300
        log_noise = np.log(self.noise if self.noise is not None else start_noise)
        log_ell = np.log(self.length_scale if self.length_scale is not None else self.bandwidth_)
        theta0 = np.concatenate(([log_ell], log_amp, [log_noise]))
        centre = np.log(self.bandwidth_)
        bounds = [(min(centre - 5.0, log_ell), max(centre + 5.0, log_ell))]
        bounds += [(v - _LOG_BOX, v + _LOG_BOX) for v in log_amp] + [
            (log_noise - _LOG_BOX, log_noise + _LOG_BOX)
        ]
        return theta0, bounds

    def _optimise(
        self, engine: ExactEngine | InducingEngine, theta0: Array, bounds: list[tuple[float, float]]
    ) -> tuple[Array, int]:
        def negative(theta: Array) -> tuple[float, Array]:
            try:
                value, grad = engine.objective(theta)
            except (
                np.linalg.LinAlgError
            ):  # lost positive definiteness at an extreme: the line search backs off
                return np.inf, np.zeros_like(theta)
            return -value, -grad

        result = minimize(negative, theta0, jac=True, method="L-BFGS-B", bounds=bounds,
                          options={"maxiter": self.max_iter, "ftol": _FTOL})  # fmt: skip
        if not np.isfinite(result.fun):
            raise ValueError(
                "GradientGP's marginal likelihood could not be evaluated at any hyper-parameters tried (the "
                "kernel matrices were not positive definite). Pass length_scale/amplitude/noise to start "
                "elsewhere, or rescale X."
            )
        return np.asarray(result.x), int(result.nit)

    # ------------------------------------------------------------------------------- summaries
    def _to_features(self, G: Array) -> Array:
        return G if self.components_ is None else G @ self.components_

    def _summaries(self, engine: ExactEngine | InducingEngine, rng: np.random.Generator) -> None:
        n = engine.n
        self.gradients_ = self._to_features(engine.mean(engine.T))
        self.egm_ = self.gradients_.T.copy()
        self.gop_ = self.gradients_.T @ self.gradients_ / n
        points, coef = engine.representer()
        coef_m = self._to_features(coef)
        self.ecm_ = coef_m.T @ rbf(points, points, engine.ell) @ coef_m
        rho = np.concatenate(
            [self._relevance_draws(*chunk, rng) for chunk in engine.sample_at_data(self.n_samples, rng)]
        )
        self.feature_relevance_ = rho.mean(0)
        self.feature_relevance_std_ = rho.std(0, ddof=1)
        self.feature_relevance_interval_ = np.quantile(rho, [0.025, 0.975], axis=0).T

    def _relevance_draws(self, draws: Array, resid_var: Array | None, rng: np.random.Generator) -> Array:
        r"""Return draws of :math:`rho_p = (\frac1n\sum_i f_p(x_i)^2)^{1/2}`.

        A residual :math:`e_{ip}` independent across points (variance :math:`v_{ip}`) enters through the
        first two moments of its contribution to :math:`rho_p^2`: mean :math:`\bar v_p`, variance
        :math:`(4\sum_i g_{ip}^2 v_{ip} + 2\sum_i v_{ip}^2)/n^2` (exact moments; Gaussian shape, accurate
        for the large n where the inducing path runs).
        """
        F = self._to_features(draws)
        n = F.shape[1]
        mean_sq = (F * F).mean(1)
        if resid_var is not None:
            v = resid_var if self.components_ is None else resid_var @ (self.components_**2)
            spread = np.sqrt(4.0 * np.einsum("sip,ip->sp", F * F, v) + 2.0 * (v * v).sum(0)) / n
            mean_sq = mean_sq + v.mean(0) + spread * rng.standard_normal(mean_sq.shape)
        return np.asarray(np.sqrt(np.maximum(mean_sq, 0.0)), dtype=np.float64)

    # ------------------------------------------------------------------------------ prediction
    def predict_gradient(self, X: Any, return_std: bool = False) -> Array | tuple[Array, Array]:
        """Return the posterior mean (n, m) of the gradient at the rows of ``X`` (and its std if asked)."""
        check_is_fitted(self, "gradients_")
        X = check_array(X, dtype=np.float64, input_name="X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but GradientGP was fitted with {self.n_features_in_}; pass "
                "the same feature columns as in fit."
            )
        T = X - self.X_mean_
        if self.components_ is not None:
            T = T @ self.components_.T
        with threadpool_limits(limits=1, user_api="blas"):
            mean = self._to_features(self._engine.mean(T))
            if not return_std:
                return mean
            if self.components_ is None:
                var = self._engine.covariance(T, full=False)
            else:
                V = self.components_
                var = np.einsum("qab,ap,bp->qp", self._engine.covariance(T, full=True), V, V)
        return mean, np.sqrt(np.maximum(var, 0.0))

    def edr_directions(self, n_components: int = 1) -> Array:
        """Return the effective dimension-reduction directions: leading eigenvectors of ``gop_``.

        One per row, sign fixed so that the entry of largest magnitude is positive.
        """
        check_is_fitted(self, "gop_")
        check_int(n_components, "n_components", "GradientGP.edr_directions", low=1)
        if n_components > self.n_features_in_:
            raise ValueError(
                f"n_components={n_components} exceeds the {self.n_features_in_} features; ask for at most "
                f"{self.n_features_in_} e.d.r. directions."
            )
        _, vec = np.linalg.eigh(self.gop_)
        top = vec[:, ::-1][:, :n_components].T
        signs = np.sign(top[np.arange(n_components), np.abs(top).argmax(1)])
        return np.asarray(top * signs[:, None])
