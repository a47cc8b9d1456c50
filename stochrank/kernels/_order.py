"""Partial descending order: the top ``h`` positions sorted, the rest only known to lie below.

A top-k metric only needs the first k+1 positions of the noisy ranking in order; every other
document merely has to be known to rank below them. Quickselect (O(n) expected) plus a sort of the
head replaces the O(n log n) full argsort when h is small against n. Ties (probability zero under
Gaussian smoothing) go to the smaller index in a head sorted by insertion, arbitrarily otherwise.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@njit(cache=True)
def _select_top(x: FloatArray, idx: IntArray, h: int) -> None:
    """Rearrange ``idx`` so that ``idx[:h]`` index the h largest values of ``x`` (any order)."""
    lo = 0
    hi = idx.size - 1
    target = h - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        # median of three as pivot keeps sorted/adversarial inputs O(n)
        a, b, c = x[idx[lo]], x[idx[mid]], x[idx[hi]]
        if a < b:
            a, b = b, a
        if b < c:
            b = c
            b = min(b, a)
        pivot = b
        i = lo
        j = hi
        while i <= j:
            while x[idx[i]] > pivot:
                i += 1
            while x[idx[j]] < pivot:
                j -= 1
            if i <= j:
                t = idx[i]
                idx[i] = idx[j]
                idx[j] = t
                i += 1
                j -= 1
        if target <= j:
            hi = j
        elif target >= i:
            lo = i
        else:
            break


_INSERTION_MAX = 32  # heads up to this length are insertion-sorted (no allocation, few compares)


@njit(cache=True)
def _ranks_before(x: FloatArray, i: int, j: int) -> bool:
    """Document i ranks before j: larger x, ties by smaller index."""
    return x[i] > x[j] or (x[i] == x[j] and i < j)


@njit(cache=True)
def order_head(x: FloatArray, idx: IntArray, lo: int, hi: int) -> None:
    """Extend a sorted head of ``idx`` from ``lo`` to ``hi`` documents.

    Given ``idx[:lo]`` the top ``lo`` documents in order and ``idx[lo:]`` the rest, make ``idx[lo:hi]``
    the next ``hi - lo`` in exact order (``idx[hi:]`` stays unordered).

    Growing the head in steps lets a caller that cannot know in advance how much of the order it needs
    (a cascade that stops at its first c = 0 document) sort no more than that.
    """
    n = idx.size
    if hi <= lo:
        return
    if hi < n:
        _select_top(x, idx[lo:], hi - lo)
    if hi - lo <= _INSERTION_MAX:
        for j in range(lo + 1, hi):
            d = idx[j]
            i = j
            while i > lo and _ranks_before(x, d, idx[i - 1]):
                idx[i] = idx[i - 1]
                i -= 1
            idx[i] = d
    else:
        head = idx[lo:hi].copy()
        sub = np.argsort(-x[head], kind="mergesort")
        for j in range(hi - lo):
            idx[lo + j] = head[sub[j]]


@njit(cache=True)
def top_order(x: FloatArray, h: int) -> IntArray:
    """Document indices by decreasing ``x``; the first ``min(h, n)`` entries are in exact order."""
    n = x.size
    idx = np.arange(n)
    order_head(x, idx, 0, min(h, n))
    return idx
