"""LETOR's QueryLevelNorm: min-max scaling of every feature within every query.

A Numba kernel with ``prange`` over queries, launched through ``stochrank._parallel.run_parallel``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from .._parallel import run_parallel
from ..conventions import offsets_from_sizes

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

__all__ = ["query_level_norm"]


@njit(cache=True, parallel=True)
def _query_minmax(X: FloatArray, offsets: IntArray, out: FloatArray) -> None:  # pragma: no cover - compiled
    """Min-max scale every feature within each query (LETOR's QueryLevelNorm).

    ``out[i, j] = (X[i, j] - min_q X[., j]) / (max_q - min_q)`` over the rows of i's query q (0 if the
    feature is constant in q).

    Min, max and the division run in float64 whatever the storage dtype, so a float32 matrix is scaled
    exactly as its float64 copy would be (then rounded once on store).
    """
    n_features = X.shape[1]
    for q in prange(offsets.size - 1):
        start = offsets[q]
        end = offsets[q + 1]
        for j in range(n_features):
            lo = np.inf
            hi = -np.inf
            for i in range(start, end):
                v = np.float64(X[i, j])
                lo = min(lo, v)
                hi = max(hi, v)
            span = hi - lo
            for i in range(start, end):
                out[i, j] = (np.float64(X[i, j]) - lo) / span if span > 0.0 else 0.0


def query_level_norm(X: Any, group: Any) -> np.ndarray:
    r"""Min-max normalise every feature within every query (LETOR's *QueryLevelNorm*).

    For document i of query q and feature j,

    .. math:: x'_{ij} = \frac{x_{ij} - \min_{d \in q} x_{dj}}{\max_{d \in q} x_{dj} - \min_{d \in q} x_{dj}},

    and :math:`x'_{ij} = 0` when feature j is constant within q (LETOR 4.0's convention). Scores of a
    ranking model then depend only on a document's position among its query's documents.

    Parameters
    ----------
    X : array-like of shape (n_documents, n_features)
        Finite real feature values, rows in query order; float32 stays float32 (computed in float64), any
        other real dtype (integers, bool, float16, long double) is converted to float64.
    group : array-like of shape (n_queries,)
        Documents per query, in row order.

    Returns
    -------
    ndarray of shape (n_documents, n_features)
        A new array, float32 for float32 ``X`` and float64 otherwise, values in [0, 1].
    """
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"'X' must be a 2-D feature matrix (documents x features); got shape {arr.shape}.")
    if not (
        np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool
    ):
        raise ValueError(
            f"'X' must hold real numbers; got dtype {arr.dtype}. Convert it first, e.g. X.astype(np.float64)."
        )
    if arr.dtype not in (np.float32, np.float64):  # the compiled kernel has float32 and float64 versions only
        arr = arr.astype(np.float64)
    arr = np.ascontiguousarray(arr)
    offsets = offsets_from_sizes(group, arr.shape[0])
    if not np.isfinite(arr).all():
        raise ValueError(
            "'X' contains NaN or infinite values; query-level normalisation needs finite features. "
            "Impute or clip them first (e.g. np.nan_to_num(X, posinf=big, neginf=-big))."
        )
    out = np.empty_like(arr)
    run_parallel(_query_minmax, arr.shape[0], arr, offsets, out)
    return out
