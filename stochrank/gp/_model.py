"""Shared estimator machinery of :class:`SparseGP` and :class:`GPRanker`.

Input checks, corpus-level feature scaling, the paper's per-label prototype initialisation, L-BFGS
training and prediction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_array, check_is_fitted, check_random_state
from threadpoolctl import threadpool_limits

from .._validation import check_choice, check_int, check_optional_int
from ._sparse import FORMS, GPState, posterior, predictive_moments, training_moments

# Prototypes per label value when n_prototypes=None: the paper's choice on OHSUMED (section 6.1).
PROTOTYPES_PER_LABEL = {"prototype": 4, "fitc": 2}
# More distinct targets than this and the targets are treated as continuous (stratified by quantiles).
MAX_LABEL_LEVELS = 20
NOISE_INIT = 0.1  # initial σ² as a fraction of the initial amplitude (the paper does not give one)

Objective = Callable[[np.ndarray, np.ndarray], tuple[float, np.ndarray, np.ndarray]]


# scikit-learn ships no type information, so BaseEstimator is Any to mypy.
class SparseGPBase(BaseEstimator):  # type: ignore[misc]
    """Parameters and fitted state common to the sparse GP regressor and the ranker."""

    form: str
    n_prototypes: int | None
    max_iter: int
    standardize: bool
    random_state: Any
    # set by fit
    n_features_in_: int
    feature_mean_: npt.NDArray[np.float64]
    feature_scale_: npt.NDArray[np.float64]

    # ------------------------------------------------------------------------------- checking
    def _check_common_params(self, owner: str) -> None:
        check_choice(self.form, "form", owner, FORMS)
        check_optional_int(
            self.n_prototypes,
            "n_prototypes",
            owner,
            low=1,
            none_means=f"{PROTOTYPES_PER_LABEL['fitc']} per label value for 'fitc', "
            f"{PROTOTYPES_PER_LABEL['prototype']} for 'prototype'",
        )
        check_int(self.max_iter, "max_iter", owner, low=1)
        if not isinstance(self.standardize, bool):
            raise TypeError(
                f"The 'standardize' parameter of {owner} must be a bool. Got {self.standardize!r}."
            )

    def _check_X(self, X: Any, *, fitting: bool) -> npt.NDArray[np.float64]:
        checked: npt.NDArray[np.float64] = check_array(X, dtype=np.float64, input_name="X")
        if fitting:
            self.n_features_in_ = checked.shape[1]
        elif checked.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {checked.shape[1]} features, but {type(self).__name__} was fitted with "
                f"{self.n_features_in_}; pass the same feature columns as in fit."
            )
        return checked

    # ------------------------------------------------------------------------ initialisation
    def _scale_features(self, X: np.ndarray) -> np.ndarray:
        """Corpus-level z-scores (the paper scales over the whole corpus, not per query)."""
        return (X - self.feature_mean_) / self.feature_scale_

    def _fit_scaler(self, X: np.ndarray) -> np.ndarray:
        if self.standardize:
            self.feature_mean_ = X.mean(0)
            scale = X.std(0)
            self.feature_scale_ = np.where(scale > 0, scale, 1.0)  # constant columns stay constant
        else:
            self.feature_mean_ = np.zeros(X.shape[1])
            self.feature_scale_ = np.ones(X.shape[1])
        return self._scale_features(X)

    def _prototype_rows(self, y: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
        """Training rows to start the prototypes at: drawn at random within each label value.

        ``n_prototypes=None`` takes the paper's count per label value; an int is shared out as
        evenly as the label values allow. Continuous targets are stratified by quantile bins.
        """
        levels, inverse = np.unique(y, return_inverse=True)
        if levels.size > MAX_LABEL_LEVELS:
            n_bins = min(MAX_LABEL_LEVELS, self.n_prototypes or MAX_LABEL_LEVELS)
            edges = np.quantile(y, np.linspace(0, 1, n_bins + 1)[1:-1])
            inverse = np.searchsorted(edges, y, side="right")
        strata = [np.flatnonzero(inverse == s) for s in range(inverse.max() + 1)]
        strata = [rows for rows in strata if rows.size]
        sizes = np.array([rows.size for rows in strata])
        if self.n_prototypes is None:
            counts = np.minimum(sizes, PROTOTYPES_PER_LABEL[self.form])
        else:
            counts = np.zeros(len(strata), dtype=np.int64)
            for _ in range(self.n_prototypes):  # round-robin over the strata that still have rows
                open_ = np.flatnonzero(counts < sizes)
                counts[open_[np.argmin(counts[open_])]] += 1
        return np.concatenate(
            [rng.choice(rows, c, replace=False) for rows, c in zip(strata, counts, strict=True)]
        )

    def _initial_state(
        self, Xs: np.ndarray, y: np.ndarray, rng: np.random.RandomState, owner: str
    ) -> GPState:
        """Return the paper's initialisation (section 6.1), on standardised features."""
        n, D = Xs.shape
        if self.n_prototypes is not None and self.n_prototypes > n:
            raise ValueError(
                f"The 'n_prototypes' parameter of {owner} is {self.n_prototypes} but there are only {n} "
                "training rows; a sparse GP needs at most one prototype per row. Lower n_prototypes."
            )
        rows = self._prototype_rows(y, rng)
        centred = y - y.mean()
        spread = float(y.std()) if y.std() > 0 else 1.0
        # lengthscales sqrt(D): on z-scored features the typical squared distance is 2D, so the
        # ARD exponent starts near -1; linear weights 1/lambda^2 as in the paper.
        log_l = np.full(D, 0.5 * np.log(D))
        outputs = centred[rows] if self.form == "prototype" else centred
        return GPState(
            float(np.log(spread)), log_l, -2.0 * log_l, float(np.log(NOISE_INIT * spread)),
            Xs[rows].copy(), outputs.copy(),
        )  # fmt: skip

    # --------------------------------------------------------------------------- training
    def _train(
        self,
        state: GPState,
        Xs: np.ndarray,
        objective: Objective,
        *,
        train_outputs: bool = True,
        callback: Callable[[np.ndarray, float], None] | None = None,
    ) -> tuple[np.ndarray, Any]:
        """Minimise ``objective(mean, var)`` over the packed parameters by L-BFGS-B.

        ``objective`` returns (J, dJ/dmean, dJ/dvar); the chain rule through the GP is
        :func:`training_moments`' backward pass. With ``train_outputs=False`` the virtual outputs
        stay at their initial values. ``callback(theta, J)`` sees every accepted iterate and may
        raise ``StopIteration`` to end the run.
        """
        theta0 = state.pack()
        free = np.ones(theta0.size, dtype=bool)
        if not train_outputs:
            free[theta0.size - state.outputs.size :] = False
        bounds = [b for b, f in zip(state.bounds(), free, strict=True) if f]

        def full(sub: np.ndarray) -> np.ndarray:
            theta: np.ndarray = theta0.copy()  # numpy's stubs type copy() as Any
            theta[free] = sub
            return theta

        def fun(sub: np.ndarray) -> tuple[float, np.ndarray]:
            try:
                mean, var, backward = training_moments(self.form, state.unpack(full(sub)), Xs)
            except np.linalg.LinAlgError:
                # K_uu or B lost positive definiteness numerically (prototypes merging, huge lengthscales):
                # outside the model's domain, so the line search backs off
                return np.inf, np.zeros(sub.size)
            value, g_mean, g_var = objective(mean, var)
            return value, backward(g_mean, g_var)[free]

        def on_iterate(intermediate_result: Any) -> None:  # a scipy OptimizeResult
            if callback is not None:
                callback(full(intermediate_result.x), float(intermediate_result.fun))

        # The products are M×N with small M: multithreaded BLAS gains nothing on them and, on a busy
        # machine, its spinning threads made an evaluation 30 times slower (measured on 2 cores).
        with threadpool_limits(limits=1, user_api="blas"):
            result = minimize(
                fun, theta0[free], jac=True, method="L-BFGS-B", bounds=bounds,
                options={"maxiter": self.max_iter}, callback=on_iterate,
            )  # fmt: skip
        return full(result.x), result

    # --------------------------------------------------------------------------- fitted state
    def _set_fitted(self, form_state: GPState, Xs: np.ndarray) -> None:
        self.state_ = form_state
        self.weights_, self.variance_matrix_ = posterior(self.form, form_state, Xs)
        self.inducing_points_ = form_state.inducing
        self.outputs_ = form_state.outputs
        self.amplitude_ = form_state.amplitude
        self.lengthscale_ = form_state.lengthscale
        self.linear_weights_ = form_state.linear
        self.noise_ = form_state.noise

    def _moments(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        check_is_fitted(self, "state_")
        Xs = self._scale_features(self._check_X(X, fitting=False))
        with threadpool_limits(limits=1, user_api="blas"):
            mean, var = predictive_moments(self.state_, self.weights_, self.variance_matrix_, Xs)
        return mean, np.maximum(var, 0.0)  # rounding only: var >= noise > 0 in exact arithmetic


class SparseGP(SparseGPBase):
    r"""Sparse Gaussian-process regressor in the two forms of Guiver & Snelson (SIGIR 2008).

    Predictive distribution of a score at features :math:`x` (noise included), with
    :math:`k = K(X_u, x)` and the ARD + linear kernel
    :math:`K(a, b) = c\,\exp(-\frac12\sum_d (a_d-b_d)^2/\lambda_d^2) + \sum_d \eta_d a_d b_d`:

    * ``form="prototype"`` (GP-Rank, eq. 11): :math:`\bar s = k^\top (K_{uu} + σ^2 I)^{-1} y_u`,
      :math:`v = σ^2 + K(x,x) - k^\top (K_{uu} + σ^2 I)^{-1} k`, M virtual outputs :math:`y_u`;
    * ``form="fitc"`` (eqs. 29–30): :math:`\bar s = k^\top B^{-1} K_{uf} Λ^{-1} y`,
      :math:`v = σ^2 + K(x,x) - k^\top (K_{uu}^{-1} - B^{-1}) k`, with
      :math:`Λ = \mathrm{diag}(K_{ff} - K_{fu}K_{uu}^{-1}K_{uf}) + σ^2 I` and
      :math:`B = K_{uu} + K_{uf} Λ^{-1} K_{fu}`, outputs :math:`y` at the N training inputs.

    :meth:`fit` is a regression fit, the paper's pointwise objective (section 5.1, Fig. 1b): it
    minimises the mean Gaussian negative log predictive density
    :math:`\frac1N\sum_j \frac12\log(2\pi v_j) + (y_j - \bar s_j)^2 / (2 v_j)` of the training targets
    over the kernel hyper-parameters, the noise and the prototypes by L-BFGS-B with analytic gradients —
    plus the virtual outputs :math:`y_u` in the prototype form; FITC keeps its outputs at the (centred)
    targets, as FITC regression does. The fitted model is a per-document variance source for
    ``stochrank.softrank(variance=model)``: it follows scikit-learn's ``GaussianProcessRegressor``
    protocol ``predict(X, return_std=True) -> (mean, std)``. Trained on SoftNDCG instead, the same model
    is :class:`GPRanker`.

    Parameters
    ----------
    form : {"fitc", "prototype"}, default "fitc"
        The sparse approximation (see above).
    n_prototypes : int >= 1 or None, default None
        Number M of prototypes, started at training rows drawn at random within each target value
        (quantile bins for continuous targets). None: 2 per target value for ``"fitc"``, 4 for
        ``"prototype"`` (the paper's OHSUMED setting). At most the number of training rows.
    max_iter : int >= 1, default 200
        L-BFGS-B iterations.
    standardize : bool, default True
        Z-score the features over the training corpus before the kernel (the paper's corpus-level
        scaling); the learned lengthscales and prototypes live in the scaled space.
    random_state : int, RandomState or None, default None
        Seeds the choice of the initial prototypes.

    Attributes
    ----------
    inducing_points_ : ndarray (M, n_features)
        Learned prototypes (scaled feature space).
    outputs_ : ndarray (M,) or (N,)
        Virtual outputs (centred target units).
    amplitude_, lengthscale_, linear_weights_, noise_ :
        Kernel hyper-parameters c, λ (n_features,), η (n_features,) and noise variance σ² (c, η and σ²
        in squared target units).
    weights_, variance_matrix_ : ndarray (M,), (M, M)
        The fitted :math:`w`, :math:`P` of :math:`\bar s = k^\top w`, :math:`v = σ^2 + K(x,x) - k^\top P k`.
    y_mean_ : float
        Target mean added back to the predictive mean.
    y_scale_ : float
        Target standard deviation (1 for constant targets). The fit runs on the standardised targets
        :math:`(y - \bar y)/s_y` and the learned model is mapped back (outputs × :math:`s_y`; c, η, σ²
        × :math:`s_y^2`), so the fitted predictions scale with the targets' units.
    n_iter_ : int
        L-BFGS-B iterations run.
    """

    def __init__(
        self,
        form: str = "fitc",
        n_prototypes: int | None = None,
        *,
        max_iter: int = 200,
        standardize: bool = True,
        random_state: Any = None,
    ) -> None:
        self.form = form
        self.n_prototypes = n_prototypes
        self.max_iter = max_iter
        self.standardize = standardize
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> SparseGP:
        """Fit prototypes, virtual outputs (prototype form), kernel hyper-parameters and noise."""
        owner = "SparseGP"
        self._check_common_params(owner)
        X = self._check_X(X, fitting=True)
        y = check_array(y, dtype=np.float64, ensure_2d=False, input_name="y")
        if y.ndim != 1 or y.size != X.shape[0]:
            raise ValueError(
                f"y must be 1-D with one target per row of X ({X.shape[0]}); got shape {y.shape}."
            )
        Xs = self._fit_scaler(X)
        self.y_mean_ = float(y.mean())
        spread = float(y.std())
        self.y_scale_ = spread if spread > 0 else 1.0
        # Fit in standardised target units: the initialisation and the L-BFGS-B box (noise >= 1e-6,
        # amplitude within e^±20) are absolute, so targets in other units would fit another model (at
        # 1e-4 the noise sat on its bound). The fitted state is mapped back to target units below.
        target = (y - self.y_mean_) / self.y_scale_
        state = self._initial_state(Xs, target, check_random_state(self.random_state), owner)
        n = y.size

        def nlpd(mean: np.ndarray, var: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
            resid = target - mean
            value = float(np.mean(0.5 * np.log(2 * np.pi * var) + resid * resid / (2 * var)))
            return value, -resid / (var * n), (0.5 / var - resid * resid / (2 * var * var)) / n

        theta, result = self._train(state, Xs, nlpd, train_outputs=self.form == "prototype")
        self.n_iter_ = int(result.nit)
        self._set_fitted(state.unpack(theta).rescaled(self.y_scale_), Xs)
        return self

    def predict(self, X: Any, return_std: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Predictive mean (and standard deviation, observation noise included) at the rows of ``X``."""
        mean, var = self._moments(X)
        mean = mean + self.y_mean_
        return (mean, np.sqrt(var)) if return_std else mean
