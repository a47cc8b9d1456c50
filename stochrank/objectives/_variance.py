"""SoftRank's score variances: a constant, one value per training row, or a fitted variance model."""

from __future__ import annotations

import inspect
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .._validation import as_float_array, check_variances
from ..conventions import per_query_sums

__all__ = [
    "OWNER",
    "VarianceModel",
    "VarianceSpec",
    "check_features",
    "check_variance_array",
    "check_variance_model",
    "check_zero_variance",
    "variances",
]

OWNER = "stochrank.softrank"
FloatArray = npt.NDArray[np.float64]


@runtime_checkable
class VarianceModel(Protocol):
    """A fitted regressor with scikit-learn's Gaussian-process ``predict`` protocol.

    For example ``sklearn.gaussian_process.GaussianProcessRegressor`` or a ``stochrank.gp`` model:
    ``predict(X, return_std=True) -> (mean, std)``.
    """

    def predict(self, X: Any, return_std: bool = ...) -> Any: ...


VarianceSpec = float | FloatArray | VarianceModel | None


def check_variance_array(variance: Any) -> FloatArray:
    """Return a validated float64 copy of a per-row variance array.

    The copy is read-only, so nobody can change it afterwards.
    """
    arr = np.asarray(variance)
    if arr.dtype.kind not in "iuf":
        raise TypeError(
            f"The 'variance' parameter of {OWNER} must be a float, a 1-D array of floats (one per training "
            "row) or a fitted model with predict(X, return_std=True); got "
            f"{type(variance).__name__}{' of ' + str(arr.dtype) if arr.ndim else ''}."
        )
    frozen = np.array(check_variances(arr, what=f"The 'variance' array of {OWNER}"), copy=True)
    frozen.flags.writeable = False
    return frozen


def check_variance_model(model: Any) -> VarianceModel:
    """Check that a variance model is a fitted instance: fail here, not at the booster's first call."""
    if inspect.isclass(model):
        raise TypeError(
            f"The 'variance' parameter of {OWNER} got the class {model.__name__}, not a fitted model: pass "
            f"an instance fitted on your features, e.g. variance={model.__name__}(...).fit(X, y)."
        )
    # scikit-learn's rule (an unfitted GaussianProcessRegressor predicts from its prior and passes); an
    # object with predict() only is not an estimator and cannot be checked
    if hasattr(model, "fit"):
        # Imported here: only variance models need scikit-learn, and `import stochrank` stays light.
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        try:
            check_is_fitted(model)
        except NotFittedError as exc:
            raise NotFittedError(
                f"The 'variance' model of {OWNER} is not fitted ({exc}) Fit it on your features first: "
                f"variance={type(model).__name__}(...).fit(X, y)."
            ) from None
    return model  # type: ignore[no-any-return]


def variances(
    spec: VarianceSpec, sigma: float | None, n: int, features: FloatArray | None, why_none: str
) -> FloatArray:
    """One score variance per document, validated (values and length).

    ``spec`` None means the constant ``sigma**2``; a model is evaluated on ``features`` (``why_none`` says
    why they are missing when they are).
    """
    if spec is None:
        assert sigma is not None  # SoftRankConfig sets sigma whenever there is no variance
        return np.full(n, sigma**2)
    if isinstance(spec, float):
        return np.full(n, spec)
    if isinstance(spec, np.ndarray):
        if spec.size != n:
            raise ValueError(
                f"The 'variance' array of {OWNER} has {spec.size} entries but the training set has {n} "
                "rows: pass one variance per training row, in row order (an array cannot follow lgb.cv's "
                "folds; use a constant or a variance model there)."
            )
        # A writeable copy for the kernels: the read-only array is another Numba type (a second compilation).
        return np.array(spec, dtype=np.float64)
    if features is None:
        raise ValueError(
            f"{OWNER}(variance=<model>) computes the variances from the training features, but {why_none}. "
            "Compute them yourself and pass the array: variance=model.predict(X, return_std=True)[1] ** 2 "
            "(X the training features in row order)."
        )
    if features.shape[0] != n:
        raise ValueError(f"The training set has {features.shape[0]} feature rows but {n} labels.")
    if np.isnan(features).any():
        raise ValueError(
            "The training features have missing values (NaN), which the variance model cannot take. Pass "
            "variance=model.predict(X, return_std=True)[1] ** 2 computed on features without missing values."
        )
    predicted = spec.predict(features, return_std=True)
    if not (isinstance(predicted, tuple) and len(predicted) == 2):
        raise TypeError(
            f"variance model {type(spec).__name__}.predict(X, return_std=True) must return (mean, std), "
            f"scikit-learn's Gaussian-process protocol; got {type(predicted).__name__}."
        )
    std = as_float_array(predicted[1], "the variance model's predicted std", n)
    return check_variances(std * std, n, what="The variance model's predicted variance")


def check_zero_variance(
    variance: FloatArray, offsets: npt.NDArray[np.int64], active: npt.NDArray[np.bool_]
) -> None:
    zero = variance == 0.0
    if not zero.any():
        return
    per_query = per_query_sums(zero, offsets)
    bad = np.flatnonzero((per_query >= 2) & active)
    if bad.size:
        q = int(bad[0])
        rows = offsets[q] + np.flatnonzero(zero[offsets[q] : offsets[q + 1]])[:2]
        raise ValueError(
            f"Rows {rows[0]} and {rows[1]} (query {q}) both have score variance 0: their SoftRank pairwise "
            "probability is then a step in the score difference, with no gradient and undefined at a tie "
            "(where boosting starts). Floor the variances, e.g. variance = np.maximum(variance, 1e-6)."
        )


def check_features(X: Any, n: int) -> np.ndarray:
    """``X`` of :meth:`SoftRankObjective.value_and_gradient`: float64, 2-D, one row per document."""
    try:
        features = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"'X' must be a 2-D array of numeric features; got {type(X).__name__}: {exc}"
        ) from None
    if features.ndim != 2:
        raise ValueError(
            f"'X' must be 2-D (one row of features per document); got shape {features.shape}. "
            "For a single feature pass X.reshape(-1, 1)."
        )
    if features.shape[0] != n:
        raise ValueError(
            f"'X' has {features.shape[0]} rows but there are {n} documents (labels); pass the features of "
            "the same documents, row-aligned with scores and labels."
        )
    return features
