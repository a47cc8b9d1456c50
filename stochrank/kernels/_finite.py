"""The booster's scores as float64 and the count of NaN / inf among them, in one pass over the memory.

A booster hands its objective fresh scores on every call (XGBoost float32, LightGBM float64); with NumPy,
float32 scores are copied and then checked, and either dtype's check writes a boolean temporary that
``.all()`` reads again. ``v - v`` is 0 for every finite ``v`` and NaN for NaN and ±inf, so the test is a
subtraction and a compare that LLVM vectorises; ``prange`` splits the documents between threads, and the
count is a reduction, so the result does not depend on the thread count.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit, prange


@njit(cache=True, parallel=True)
def count_nonfinite(values: npt.NDArray[np.float64]) -> int:
    """Return how many of ``values`` are NaN or ±inf."""
    bad = 0
    for i in prange(values.size):
        v = values[i]
        if v - v != 0.0:
            bad += 1
    return bad


@njit(cache=True, parallel=True)
def float64_count_nonfinite(values: npt.NDArray[np.float32], out: npt.NDArray[np.float64]) -> int:
    """Write ``values`` into ``out`` as float64 (exactly) and return how many are NaN or ±inf."""
    bad = 0
    for i in prange(values.size):
        v = np.float64(values[i])
        out[i] = v
        if v - v != 0.0:
            bad += 1
    return bad
