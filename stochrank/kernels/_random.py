"""Counter-based random streams: one independent stream per (seed, call, query, purpose).

Numba's ``np.random`` inside ``prange`` keeps one state per thread, so what a query draws would
depend on which thread ran it. Instead every query derives its own SplitMix64 stream from a hash of
(seed, call number, query index, purpose); the gradients are then bit-identical for any number of
threads and any scheduling. SplitMix64 (Steele, Lea & Flood, OOPSLA 2014) passes BigCrush and needs
one 64-bit word of state, which suits per-query streams.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit, prange

from ._fastexp import _EXP_BIAS, _LN2_HI, _LN2_LO, _MANTISSA_BITS, _as_float64, _as_int64

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
UIntArray = npt.NDArray[np.uint64]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_INV_2_53 = 1.0 / 9007199254740992.0
_TWO_PI = 2.0 * np.pi
_MANTISSA_MASK = (1 << _MANTISSA_BITS) - 1
_ONE_BITS = _EXP_BIAS << _MANTISSA_BITS  # the bits of 1.0
_SQRT2 = 1.4142135623730951
# fdlibm (e_log.c, k_sin.c, k_cos.c) minimax coefficients.
_LG1, _LG2, _LG3 = 6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01
_LG4, _LG5 = 2.222219843214978396e-01, 1.818357216161805012e-01
_LG6, _LG7 = 1.531383769920937332e-01, 1.479819860511658591e-01
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11

# Purposes, so that the smoothing noise and the Langevin noise of one query never share a stream.
PURPOSE_SMOOTHING = 0
PURPOSE_LANGEVIN = 1


@njit(cache=True)
def mix64(z: np.uint64) -> np.uint64:
    """SplitMix64 finaliser: a bijective avalanche hash of a uint64."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    mixed: np.uint64 = z ^ (z >> _S31)  # numpy's stubs type uint64 arithmetic as Any
    return mixed


@njit(cache=True)
def stream_state(seed: int, call: int, query: int | np.uint64, purpose: int) -> np.uint64:
    """Return the initial state of the stream for ``(seed, call, query, purpose)`` (all non-negative ints)."""
    h = mix64(np.uint64(seed) ^ _GOLDEN)
    h = mix64(h ^ np.uint64(call))
    h = mix64(h ^ np.uint64(query))
    return mix64(h ^ np.uint64(purpose))


@njit(cache=True)
def _uniform_bits(state: np.uint64) -> float:
    """53 random bits from the SplitMix64 output at ``state``."""
    bits: float = np.float64(mix64(state) >> _S11)
    return bits


@njit(cache=True, error_model="numpy")
def _log_unit(u: float) -> float:
    """log(u) for u in [2^-53, 1]: fdlibm's e_log.c (< 1 ulp), branch-free so that loops vectorise.

    u = 2^e m with m in [sqrt(2)/2, sqrt(2)); log m = 2 atanh(s), s = (m - 1) / (m + 1), by a
    minimax polynomial in s^2.
    """
    bits = _as_int64(u)
    e = np.float64((bits >> _MANTISSA_BITS) - _EXP_BIAS)
    m = _as_float64((bits & _MANTISSA_MASK) | _ONE_BITS)  # in [1, 2)
    big = m > _SQRT2
    m = 0.5 * m if big else m
    e = e + 1.0 if big else e
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    hfsq = 0.5 * f * f
    log_u: float = e * _LN2_HI - ((hfsq - (s * (hfsq + t1 + t2) + e * _LN2_LO)) - f)
    return log_u


@njit(cache=True)
def _cos_sin_turn(u: float) -> tuple[float, float]:
    """Return (cos 2 pi u, sin 2 pi u) for u in [0, 1).

    Exact quarter-turn reduction, fdlibm's k_cos.c / k_sin.c polynomials on [-pi/4, pi/4] (< 1 ulp),
    quadrant by selects.
    """
    j = np.floor(4.0 * u + 0.5)  # nearest quarter turn, 0..4
    y = _TWO_PI * (u - 0.25 * j)  # u - j/4 is exact; |y| <= pi/4
    z = y * y
    sin = y + z * y * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
    r = z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6)))))
    hz = 0.5 * z
    w = 1.0 - hz
    cos = w + (((1.0 - w) - hz) + z * r)
    odd = (j == 1.0) | (j == 3.0)
    c = sin if odd else cos
    s = cos if odd else sin
    c = -c if (j == 1.0) | (j == 2.0) else c
    s = -s if (j == 2.0) | (j == 3.0) else s
    return c, s


@njit(cache=True)
def fill_normal(state: np.uint64, out: FloatArray) -> np.uint64:
    """Fill ``out`` with standard normal draws (Box–Muller); return the advanced state.

    Draw pair j uses the stream's outputs 2j+1 (radius) and 2j+2 (angle) and fills out[2j], out[2j+1]
    (an odd last entry takes the cosine only). The pairs are independent, so the loop vectorises;
    log, cos and sin are branch-free polynomials for that reason (libm calls would stay scalar).
    """
    n = out.size
    n_pairs = (n + 1) // 2
    for j in range(n_pairs):
        step = np.uint64(2 * j + 1) * _GOLDEN
        u1 = (_uniform_bits(state + step) + 1.0) * _INV_2_53  # in (0, 1]: log is finite
        u2 = _uniform_bits(state + step + _GOLDEN) * _INV_2_53
        r = np.sqrt(-2.0 * _log_unit(u1))
        c, s = _cos_sin_turn(u2)
        out[2 * j] = r * c
        if 2 * j + 1 < n:
            out[2 * j + 1] = r * s
    advanced: np.uint64 = state + np.uint64(2 * n_pairs) * _GOLDEN
    return advanced


@njit(cache=True, parallel=True)
def query_keys(labels: FloatArray, offsets: IntArray) -> UIntArray:
    """Return a 64-bit identity of every query, hashed from its content: its size and labels in row order.

    Labels are hashed at float32 precision, so float64 and float32 copies of the same data (a NumPy
    array, a LightGBM Dataset, a CatBoost Pool) give the same keys.

    The noise streams are keyed by it rather than by the query's position, so a query draws the same
    noise wherever it is: in another order of the queries, or in a Dask partition on another worker.
    Queries with identical labels get identical keys here; :attr:`stochrank.protocol.DatasetInfo.query_keys`
    tells them apart by their order of appearance.
    """
    n_queries = offsets.size - 1
    out = np.empty(n_queries, dtype=np.uint64)
    for qi in prange(n_queries):
        h = mix64(np.uint64(offsets[qi + 1] - offsets[qi]) ^ _GOLDEN)
        for i in range(offsets[qi], offsets[qi + 1]):
            # float32 first: the precision boosters store labels in, so every copy of the data agrees
            h = mix64(h ^ np.uint64(_as_int64(np.float64(np.float32(labels[i])))))
        out[qi] = h
    return out
