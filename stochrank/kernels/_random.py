"""Counter-based random streams: one independent stream per (seed, call, query, purpose).

Numba's ``np.random`` inside ``prange`` keeps one state per thread, so what a query draws would
depend on which thread ran it. Instead every query derives its own SplitMix64 stream from a hash of
(seed, call number, query index, purpose); the gradients are then bit-identical for any number of
threads and any scheduling. SplitMix64 (Steele, Lea & Flood, OOPSLA 2014) passes BigCrush and needs
one 64-bit word of state, which suits per-query streams.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_INV_2_53 = 1.0 / 9007199254740992.0
_TWO_PI = 2.0 * np.pi

# Purposes, so that the smoothing noise and the Langevin noise of one query never share a stream.
PURPOSE_SMOOTHING = 0
PURPOSE_LANGEVIN = 1


@njit(cache=True)
def mix64(z):
    """SplitMix64 finaliser: a bijective avalanche hash of a uint64."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True)
def stream_state(seed, call, query, purpose):
    """Initial state of the stream for ``(seed, call, query, purpose)`` (all non-negative ints)."""
    h = mix64(np.uint64(seed) ^ _GOLDEN)
    h = mix64(h ^ np.uint64(call))
    h = mix64(h ^ np.uint64(query))
    return mix64(h ^ np.uint64(purpose))


@njit(cache=True)
def fill_normal(state, out):
    """Fill ``out`` with standard normal draws (Box–Muller); return the advanced state."""
    n = out.size
    i = 0
    while i < n:
        state = state + _GOLDEN
        u1 = (np.float64(mix64(state) >> _S11) + 1.0) * _INV_2_53  # in (0, 1]: log is finite
        state = state + _GOLDEN
        u2 = np.float64(mix64(state) >> _S11) * _INV_2_53
        r = np.sqrt(-2.0 * np.log(u1))
        t = _TWO_PI * u2
        out[i] = r * np.cos(t)
        if i + 1 < n:
            out[i + 1] = r * np.sin(t)
        i += 2
    return state
