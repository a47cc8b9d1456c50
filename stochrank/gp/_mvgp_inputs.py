"""Inputs of the trace-norm matrix-variate GP: kernel, index and value checks, the validated problem.

Shared by :class:`~stochrank.gp.TraceNormMVGP` and :class:`~stochrank.gp.BipartiteMVGPRanker`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np
from threadpoolctl import threadpool_limits

from ._mvgp_core import (
    FloatArray,
    GridSampling,
    IntArray,
    KernelBasis,
    Sampling,
    ScatteredSampling,
    kernel_basis,
)

Method = TypeVar("Method", bound=Callable[..., Any])

SYMMETRY_TOLERANCE = 1e-8  # relative to the largest absolute kernel entry
SAME_KERNEL_TOLERANCE = 1e-9  # an extended kernel's old block must match the fitted one to this (relative)


def single_threaded_blas(method: Method) -> Method:
    """Run ``method`` with one BLAS thread.

    The solver's products are small and many: on a shared 2-core machine OpenBLAS's spinning threads made a
    70 × 500 SVD 150 times and a Frobenius norm 2000 times slower (measured under load 12).
    """

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with threadpool_limits(limits=1, user_api="blas"):
            return method(*args, **kwargs)

    return cast(Method, wrapper)


def check_kernel(K: Any, name: str, owner: str) -> FloatArray:
    """Return K as a finite, square, symmetric float64 matrix (PSD is checked on its observed block)."""
    try:
        arr: FloatArray = np.asarray(K, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"'{name}' of {owner} must be a square matrix of numbers; got {type(K).__name__}: {exc}"
        ) from None
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] == 0:
        raise ValueError(
            f"'{name}' of {owner} must be a square (n, n) kernel matrix with n >= 1; got shape {arr.shape}. "
            "Pass the kernel between all rows (tasks) or all columns (items), not features or a cross-kernel."
        )
    if not np.isfinite(arr).all():
        raise ValueError(
            f"'{name}' of {owner} contains NaN or infinite entries; pass a finite kernel matrix."
        )
    asymmetry = float(np.max(np.abs(arr - arr.T)))
    if asymmetry > SYMMETRY_TOLERANCE * max(float(np.max(np.abs(arr))), 1e-300):
        raise ValueError(
            f"'{name}' of {owner} is not symmetric (largest |K - K.T| = {asymmetry:.3g}). A kernel matrix is "
            "symmetric; symmetrise it with (K + K.T) / 2 if the asymmetry is rounding."
        )
    return arr


def check_extended_kernel(K: Any, fitted: FloatArray, name: str, owner: str) -> FloatArray:
    """Return the fitted kernel, or an extended one after checking that it agrees on the fitted indices.

    Theorem 1 extends the posterior to new rows and columns under one kernel function.
    """
    if K is None:
        return fitted
    extended = check_kernel(K, name, owner)
    n = fitted.shape[0]
    atol = SAME_KERNEL_TOLERANCE * max(float(np.max(np.abs(fitted))), 1e-300)
    if extended.shape[0] < n or not np.allclose(extended[:n, :n], fitted, rtol=0, atol=atol):
        raise ValueError(
            f"The leading {n} x {n} block of '{name}' passed to predict differs from the kernel given to "
            f"fit (shape {extended.shape}). Theorem 1 extends the posterior to new indices under the "
            "same kernel: compute the kernel once over the old indices followed by the new ones, and fit "
            "on its leading block."
        )
    return extended


def check_indices(idx: Any, name: str, size: int, kernel: str, owner: str) -> IntArray:
    arr = np.asarray(idx)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"'{name}' of {owner} must be a non-empty 1-D array of indices; got shape {arr.shape}."
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(
            f"'{name}' of {owner} must hold integer indices into '{kernel}'; got dtype {arr.dtype}. "
            f"Pass e.g. np.asarray({name}, dtype=int)."
        )
    if arr.min() < 0 or arr.max() >= size:
        raise ValueError(
            f"'{name}' of {owner} must index into '{kernel}' (0 .. {size - 1}); got values {arr.min()} .. "
            f"{arr.max()}. Give the kernel over every row/column you index."
        )
    return arr.astype(np.intp)


def check_values(values: Any, name: str, n: int, owner: str) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size != n:
        raise ValueError(
            f"'{name}' of {owner} must be 1-D with one value per observed entry ({n}, the length of 'rows' "
            f"and 'cols'); got shape {arr.shape}."
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"'{name}' of {owner} contains NaN or infinite values; drop those entries instead.")
    return arr


@dataclass
class Problem:
    """Validated data of one fit: the kernels' observed blocks and bases, the observation operator."""

    row_basis: KernelBasis
    col_basis: KernelBasis
    row_local: IntArray  # observation -> position among the observed rows
    col_local: IntArray
    op: Sampling
    K_rows: FloatArray
    K_cols: FloatArray


def build_problem(K_rows: Any, K_cols: Any, rows: Any, cols: Any, owner: str) -> Problem:
    K_rows = check_kernel(K_rows, "K_rows", owner)
    K_cols = check_kernel(K_cols, "K_cols", owner)
    rows = check_indices(rows, "rows", K_rows.shape[0], "K_rows", owner)
    cols = check_indices(cols, "cols", K_cols.shape[0], "K_cols", owner)
    if rows.size != cols.size:
        raise ValueError(
            f"'rows' and 'cols' of {owner} must have one entry per observation; got {rows.size} and "
            f"{cols.size}. Pass the row and column index of every observed entry."
        )
    row_index, row_local = np.unique(rows, return_inverse=True)
    col_index, col_local = np.unique(cols, return_inverse=True)
    rb = kernel_basis(K_rows[np.ix_(row_index, row_index)], row_index, "K_rows", owner)
    cb = kernel_basis(K_cols[np.ix_(col_index, col_index)], col_index, "K_cols", owner)
    flat = row_local * col_index.size + col_local
    grid = rows.size == row_index.size * col_index.size and np.unique(flat).size == flat.size
    op: Sampling = (GridSampling if grid else ScatteredSampling)(rb, cb, row_local, col_local)
    return Problem(rb, cb, row_local, col_local, op, K_rows.copy(), K_cols.copy())
