"""Input and parameter checks shared by the objectives, the metrics and the adapters.

Every check raises ``ValueError`` or ``TypeError`` whose message names the argument, what was
received, and how to fix it. Nothing here imports a booster.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np

# Largest label fed to an exponential gain 2**r - 1: exact in float64 up to 2**50; a larger grade is
# almost surely a units mistake (raw scores or counts passed as relevance).
MAX_EXP_LABEL = 50.0

__all__ = [
    "MAX_EXP_LABEL",
    "as_float_array",
    "check_choice",
    "check_int",
    "check_labels",
    "check_offsets",
    "check_real",
    "check_scores",
    "check_variances",
    "offsets_from_qid",
    "offsets_from_sizes",
    "query_weights",
    "stop_probabilities",
]


def check_choice(value: Any, name: str, owner: str, options: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``options``, else raise naming the valid options."""
    if not isinstance(value, str) or value not in options:
        opts = ", ".join(repr(o) for o in options)
        raise ValueError(f"The '{name}' parameter of {owner} must be one of {opts}. Got {value!r} instead.")
    return value


def check_int(
    value: Any, name: str, owner: str, *, low: int, none_ok: bool = False, none_means: str = ""
) -> int | None:
    """Return ``value`` as an int ``>= low`` (or None when allowed)."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        extra = f" or None ({none_means})" if none_ok else ""
        raise ValueError(
            f"The '{name}' parameter of {owner} must be an int in the range [{low}, inf){extra}. "
            f"Got {value!r} instead."
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
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(float(value))
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
    if n is not None and arr.shape[0] != n:
        raise ValueError(
            f"'{name}' has {arr.shape[0]} entries but there are {n} documents; pass one per row."
        )
    return np.ascontiguousarray(arr)


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
            f"{owner} needs labels in [{low}, {high}]; found {bad.size} outside (e.g. {bad[0]!r}). {hint}".rstrip()
        )
    return arr


def stop_probabilities(labels: np.ndarray, max_grade: float | None, owner: str) -> np.ndarray:
    """Cascade stopping probabilities R (ERR, pFound) from validated float labels.

    ``max_grade=None``: the labels are the probabilities and must lie in [0, 1] (CatBoost's convention);
    a grade G: labels r in [0, G] map to R = (2**r - 1) / 2**G (Chapelle et al., 2009).
    """
    if max_grade is None:
        check_labels(
            labels, None, owner, low=0.0, high=1.0,
            hint="Labels are read as stopping probabilities in [0, 1] (CatBoost) when max_grade=None; for "
            "graded labels 0..G pass max_grade=G, which maps a grade r to (2**r - 1) / 2**G (Chapelle et al. 2009).",
        )  # fmt: skip
        return labels.copy()
    check_labels(
        labels, None, owner, low=0.0, high=float(max_grade),
        hint=f"Raise max_grade above {labels.max():g}: pass a larger max_grade (now {max_grade:g}) or clip the labels.",
    )  # fmt: skip
    return (np.exp2(labels) - 1.0) / 2.0**max_grade


def offsets_from_sizes(group: Any, n_rows: int, name: str = "group") -> np.ndarray:
    """Query boundaries ``[0, s0, s0+s1, ..., n_rows]`` (int64) from query sizes."""
    if group is None:
        raise ValueError(
            f"'{name}' is required: ranking needs query boundaries. Pass the number of documents of each "
            "query, in row order (LightGBM style), e.g. group=np.unique(qid, return_counts=True)[1] for "
            "sorted qid, or use stochrank.group_sizes(qid)."
        )
    sizes = np.asarray(group)
    if sizes.ndim != 1 or sizes.size == 0:
        raise ValueError(f"'{name}' must be a non-empty 1-D array of query sizes; got shape {sizes.shape}.")
    if not np.issubdtype(sizes.dtype, np.number) or not np.all(sizes == np.round(sizes)) or sizes.min() < 1:
        raise ValueError(
            f"'{name}' must hold positive integer query sizes (documents per query); got {sizes[:5]!r}... "
            "If you have one query id per row, convert with stochrank.group_sizes(qid)."
        )
    offsets = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes.astype(np.int64), out=offsets[1:])
    if offsets[-1] != n_rows:
        raise ValueError(
            f"'{name}' sums to {offsets[-1]} documents but there are {n_rows} rows. '{name}' must be the "
            "number of documents per query in row order (LightGBM style), not query ids; convert query ids "
            "with stochrank.group_sizes(qid)."
        )
    return offsets


def offsets_from_qid(qid: Any, name: str = "qid") -> np.ndarray:
    """Query boundaries from per-row query ids whose rows are contiguous (not necessarily sorted)."""
    q = np.asarray(qid)
    if q.ndim != 1 or q.size == 0:
        raise ValueError(
            f"'{name}' must be a non-empty 1-D array with one query id per row; got shape {q.shape}."
        )
    change = np.flatnonzero(q[1:] != q[:-1]) + 1
    offsets = np.concatenate(([0], change, [q.size])).astype(np.int64)
    starts = q[offsets[:-1]]
    if np.unique(starts).size != starts.size:
        _, counts = np.unique(starts, return_counts=True)
        dup = np.unique(starts)[counts > 1][0].item()
        raise ValueError(
            f"The rows of query {dup!r} in '{name}' are not contiguous: a query's documents must be adjacent. "
            f"Reorder the rows, e.g. order = np.argsort({name}, kind='stable'); X, y, {name} = X[order], "
            f"y[order], {name}[order]."
        )
    return offsets


def query_weights(weight: Any, offsets: np.ndarray, name: str = "weight") -> np.ndarray | None:
    """One non-negative weight per query from per-row (constant within a query) or per-query weights."""
    if weight is None:
        return None
    w = np.asarray(weight, dtype=np.float64).reshape(-1)
    if w.size == 0:
        return None
    n_queries, n_rows = offsets.size - 1, int(offsets[-1])
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(
            f"'{name}' must be finite and non-negative; found {w[~(np.isfinite(w) & (w >= 0))][:3]}."
        )
    if w.size == n_rows and n_rows != n_queries:
        per_query = w[offsets[:-1]]
        varies = np.flatnonzero(np.maximum.reduceat(w, offsets[:-1]) != np.minimum.reduceat(w, offsets[:-1]))
        if varies.size:
            qi = varies[0]
            raise ValueError(
                f"'{name}' varies within query {qi} (rows {offsets[qi]}..{offsets[qi + 1] - 1}). Ranking "
                "metrics weight whole queries: give every row of a query the same weight (or pass one "
                "weight per query)."
            )
        return per_query
    if w.size == n_queries:
        return w
    raise ValueError(
        f"'{name}' has {w.size} entries; expected one per row ({n_rows}) or one per query ({n_queries})."
    )


def check_variances(variance: Any, n: int | None = None, name: str = "variance", what: str = "") -> np.ndarray:
    """Per-document variances as float64: finite and >= 0. ``what`` describes them in the messages
    (default: the argument name)."""
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


def check_offsets(offsets: Any, n_rows: int, name: str = "offsets") -> np.ndarray:
    """Query boundaries ``[0, e_0, e_1, ..., n_rows]`` as int64, strictly increasing (no empty query)."""
    arr = np.asarray(offsets)
    integral = arr.ndim == 1 and np.issubdtype(arr.dtype, np.number) and bool(np.all(arr == np.round(arr)))
    if not integral or arr.size < 2:
        raise ValueError(
            f"'{name}' must be a 1-D integer array of query boundaries [0, end of query 0, ..., {n_rows}] (at "
            f"least two entries); got {arr[:5]!r} of shape {arr.shape}. From query sizes: "
            f"{name} = np.r_[0, np.cumsum(group)]."
        )
    if arr[0] != 0 or arr[-1] != n_rows:
        raise ValueError(
            f"'{name}' must start at 0 and end at the number of documents ({n_rows}); got {arr[0]} .. {arr[-1]}."
            f" From query sizes: {name} = np.r_[0, np.cumsum(group)]."
        )
    if np.any(np.diff(arr) < 1):
        q = int(np.flatnonzero(np.diff(arr) < 1)[0])
        raise ValueError(
            f"'{name}' must increase strictly (every query has a document); query {q} spans "
            f"{arr[q]} .. {arr[q + 1]}."
        )
    return arr.astype(np.int64)
