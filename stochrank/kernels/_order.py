"""Partial descending order: the top ``h`` positions sorted, the rest only known to lie below.

A top-k metric only needs the first k+1 positions of the noisy ranking in order; every other
document merely has to be known to rank below them. Quickselect (O(n) expected) plus a sort of the
head replaces the O(n log n) full argsort when h is small against n.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _select_top(x, idx, h):
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


@njit(cache=True)
def top_order(x, h):
    """Document indices by decreasing ``x``; the first ``min(h, n)`` entries are in exact order.

    Ties keep index order within the sorted head (a stable sort), which matters only for exactly
    equal noisy scores (probability zero under Gaussian smoothing).
    """
    n = x.size
    if 4 * h >= n:
        return np.argsort(-x, kind="mergesort")
    idx = np.arange(n)
    _select_top(x, idx, h)
    head = idx[:h].copy()
    sub = np.argsort(-x[head], kind="mergesort")
    for j in range(h):
        idx[j] = head[sub[j]]
    return idx
