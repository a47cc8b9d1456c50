"""Input and parameter checks shared by every layer above the kernels.

Every check raises ``ValueError`` or ``TypeError`` whose message names the argument, what was
received, and how to fix it. Nothing here imports a booster.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

__all__ = [
    "as_float_array",
    "check_choice",
    "check_int",
    "check_labels",
    "check_length",
    "check_optional_int",
    "check_real",
    "check_scores",
    "check_variances",
]


def check_choice(value: Any, name: str, owner: str, options: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``options``, else raise naming the valid options."""
    if not isinstance(value, str) or value not in options:
        opts = ", ".join(repr(o) for o in options)
        raise ValueError(f"The '{name}' parameter of {owner} must be one of {opts}. Got {value!r} instead.")
    return value


# The kernels count in int64: a larger count overflows there (n_samples of 2**63 drew no sample: all-zero
# gradients, under a StartWarning that blamed sigma); callers that hand a count to a kernel pass ``high``.
INT_MAX = 2**62


def check_int(value: Any, name: str, owner: str, *, low: int, high: int | None = None) -> int:
    """Return ``value`` as an int ``>= low`` (and ``<= high`` when given)."""
    top = "inf)" if high is None else ("2**62]" if high == INT_MAX else f"{high}]")
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be an int in the range [{low}, {top}. "
            f"Got {value!r} instead."
        )
    number = int(value)
    if high is not None and number > high:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be an int in the range [{low}, {top} (the kernels "
            f"count in int64). Got {value!r} instead."
        )
    return number


def check_optional_int(value: Any, name: str, owner: str, *, low: int, none_means: str) -> int | None:
    """Return ``value`` as an int ``>= low``, or None (whose meaning ``none_means`` names in the message)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ValueError(
            f"The '{name}' parameter of {owner} must be an int in the range [{low}, inf) or None "
            f"({none_means}). Got {value!r} instead."
        )
    return int(value)


def check_real(
    value: Any,
    name: str,
    owner: str,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float inside the given interval."""
    ok = not isinstance(value, bool) and isinstance(value, Real) and math.isfinite(float(value))
    if ok:
        v = float(value)
        ok = (v > low if low_open else v >= low) and (v < high if high_open else v <= high)
    if not ok:
        left = "(" if low_open or low == -math.inf else "["
        right = ")" if high_open or high == math.inf else "]"
        raise ValueError(
            f"The '{name}' parameter of {owner} must be a float in the range {left}{low}, {high}{right}. "
            f"Got {value!r} instead."
        )
    return float(value)


def as_float_array(x: Any, name: str, n: int | None = None) -> np.ndarray:
    """1-D contiguous float64 copy-free view of ``x`` (a copy only when needed), length-checked."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"'{name}' must be a 1-D array of numbers; got {type(x).__name__}: {exc}") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise ValueError(
            f"'{name}' must be 1-D (one value per document); got shape {arr.shape}. "
            "Pass a flat array, e.g. x.ravel()."
        )
    check_length(arr, name, n)
    return np.ascontiguousarray(arr)


def check_length(arr: np.ndarray, name: str, n: int | None) -> None:
    """Raise unless the 1-D ``arr`` holds one entry per document (``n`` of them; None: any number)."""
    if n is not None and arr.shape[0] != n:
        raise ValueError(
            f"'{name}' has {arr.shape[0]} entries but there are {n} documents; pass one per row."
        )


def check_scores(scores: Any, n: int | None = None, name: str = "scores") -> np.ndarray:
    """Scores as float64, rejecting NaN and inf (a ranking of NaN is undefined)."""
    arr = as_float_array(scores, name, n)
    if not np.isfinite(arr).all():
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(
            f"'{name}' contains {bad.size} NaN or infinite values (first at row {bad[0]}: {arr[bad[0]]}). "
            "Ranking needs finite scores: check the model's inputs, init_score/base_margin, or a diverging "
            "learning rate."
        )
    return arr


def check_labels(
    labels: Any,
    n: int | None,
    owner: str,
    *,
    low: float = 0.0,
    high: float = math.inf,
    hint: str = "",
) -> np.ndarray:
    """Labels as float64 inside ``[low, high]``; ``hint`` says how to get there."""
    arr = as_float_array(labels, "labels", n)
    if not np.isfinite(arr).all():
        raise ValueError(f"'labels' for {owner} contain NaN or inf; every document needs a finite label.")
    if arr.size and (arr.min() < low or arr.max() > high):
        bad = arr[(arr < low) | (arr > high)]
        raise ValueError(
            f"{owner} needs labels in [{low}, {high}]; found {bad.size} outside (e.g. {float(bad[0])!r}). "
            f"{hint}".rstrip()
        )
    return arr


def check_variances(
    variance: Any, n: int | None = None, name: str = "variance", what: str = ""
) -> np.ndarray:
    """Return per-document variances as float64, checked finite and >= 0.

    ``what`` describes them in the messages (default: the argument name).
    """
    arr = as_float_array(variance, name, n)
    what = what or f"'{name}'"
    if not np.isfinite(arr).all():
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(
            f"{what} contains {bad.size} NaN or infinite values (first at row {bad[0]}: {arr[bad[0]]}). "
            "Every document needs a finite score variance >= 0."
        )
    if arr.size and arr.min() < 0.0:
        bad = np.flatnonzero(arr < 0.0)
        raise ValueError(
            f"{what} contains {bad.size} negative values (first at row {bad[0]}: {arr[bad[0]]}). "
            "A variance is >= 0: pass the squared standard deviation (std ** 2), not a log-variance."
        )
    return arr
