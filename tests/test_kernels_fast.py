"""The CCS kernels' speed devices against naive twins: the branch-free exp against ``np.exp``, the
vectorisable Box–Muller against numpy's log/cos/sin on the same SplitMix64 outputs, the growing partial
order against a stable argsort, the adaptive cascade head and the reused workspace against the
brute-force estimate of ``tests/naive.py``; the one-pass float64 conversion and finiteness count against
NumPy's ``astype`` and ``isfinite``.
"""

from __future__ import annotations

import numpy as np
import numpy.testing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numba import njit

from stochrank._parallel import PARALLEL_MIN_ROWS
from stochrank.kernels._fastexp import exp_nonpos
from stochrank.kernels._finite import count_nonfinite, float64_count_nonfinite
from stochrank.kernels._order import order_head, top_order
from stochrank.kernels._random import fill_normal, stream_state
from stochrank.kernels.ccs import ccs_query, ccs_query_ws, ccs_workspace
from stochrank.protocol.call import _finite_float64

from .naive import naive_ccs_query, naive_position_weights

DBL_MIN = np.finfo(np.float64).tiny  # 2^-1022, the smallest normal float64


@njit
def _exp_loop(v, out):
    """exp_nonpos over an array: the vectorised form the CCS tail loop compiles to."""
    for i in range(v.size):
        out[i] = exp_nonpos(v[i])


@njit
def _exp_scalar(v):
    return exp_nonpos(v)


# FAST EXP =========================================================================================


def _check_exp(v):
    got = np.empty_like(v)
    _exp_loop(v, got)
    ref = np.exp(v)
    normal = ref >= DBL_MIN
    rel = np.abs(got[normal] - ref[normal]) / ref[normal]
    assert rel.max() <= 1e-14, f"max relative error {rel.max():.3g} at v={v[normal][np.argmax(rel)]!r}"
    # Where np.exp is subnormal or 0 the fast exp is exactly 0.
    npt.assert_array_equal(got[~normal], 0.0)
    return got


def test_exp_dense_grid():
    """Every 1/4096 (and random points) over [-745.2, 0]: within 1e-14 relative, 0 below the normal range."""
    rng = np.random.default_rng(0)
    v = np.concatenate([-np.arange(0, 745.2 * 4096) / 4096, -745.2 * rng.random(1_000_000)])
    got = _check_exp(v)
    assert np.count_nonzero(got == 0.0) > 0 and np.count_nonzero(got) > 0


def test_exp_edge_cases():
    lowest = np.log(DBL_MIN)  # -708.396...: below it np.exp is subnormal
    v = np.array(
        [0.0, -0.0, -5e-324, -1e-300, -1e-17, -0.5 * np.log(2), -np.log(2), -1.0, -20.0,
         lowest, np.nextafter(lowest, 0), np.nextafter(lowest, -np.inf), -708.5, -745.13, -745.14,
         -1e4, -1e308, -np.inf]
    )  # fmt: skip
    got = _check_exp(v)
    assert got[0] == 1.0 and got[1] == 1.0
    assert got[-1] == 0.0
    # The scalar (inlined, not vectorised) form gives the same values.
    npt.assert_allclose([_exp_scalar(x) for x in v], got, rtol=1e-15, atol=0)


def test_exp_near_half_ln2_multiples():
    """Arguments around the reduction's rounding points k ln2 / 2, where |r| is largest."""
    k = np.arange(0, 2045)
    centres = -k * np.log(2) / 2
    eps = np.array([-1e-12, -1e-15, 0.0, 1e-15, 1e-12])
    v = np.minimum((centres[:, None] + eps[None, :]).ravel(), 0.0)
    _check_exp(v)


# NOISE ============================================================================================


def _naive_splitmix_normals(state, n):
    """Box–Muller with numpy's log/cos/sin on SplitMix64 outputs 1, 2, ... of ``state`` (uint64 arithmetic
    wraps in numpy arrays)."""
    golden = np.uint64(0x9E3779B97F4A7C15)
    n_pairs = (n + 1) // 2
    z = state + np.arange(1, 2 * n_pairs + 1, dtype=np.uint64) * golden
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    bits = ((z ^ (z >> np.uint64(31))) >> np.uint64(11)).astype(np.float64)
    u1 = (bits[0::2] + 1.0) / 2.0**53
    u2 = bits[1::2] / 2.0**53
    r = np.sqrt(-2.0 * np.log(u1))
    out = np.empty(2 * n_pairs)
    out[0::2] = r * np.cos(2.0 * np.pi * u2)
    out[1::2] = r * np.sin(2.0 * np.pi * u2)
    return out[:n], np.uint64((int(state) + 2 * n_pairs * int(golden)) % 2**64)


@pytest.mark.parametrize("n", [1, 2, 7, 120, 100_001])
def test_fill_normal_matches_numpy_box_muller(n):
    """Same stream, same pairs; the polynomial log/cos/sin differ from numpy's by rounding only (numpy's
    2 pi u is itself rounded, hence the absolute tolerance of a few ulp of 2 pi)."""
    for query in range(3):
        state = np.uint64(stream_state(3, 1, query, 0))
        got = np.empty(n)
        got_state = fill_normal(state, got)
        expected, expected_state = _naive_splitmix_normals(state, n)
        assert np.uint64(got_state) == expected_state
        npt.assert_allclose(got, expected, rtol=1e-14, atol=1e-14)


# PARTIAL ORDER ====================================================================================


def _naive_order(x):
    """Decreasing x, ties by index."""
    return np.lexsort((np.arange(x.size), -x))


@pytest.mark.parametrize("n", [1, 2, 7, 33, 120, 500])
def test_order_head_grows_to_the_sorted_order(n):
    """Growing the head in steps (as the cascade does) sorts exactly the requested prefix."""
    rng = np.random.default_rng(n)
    for ties in (False, True):
        x = rng.integers(0, 5, n).astype(np.float64) if ties else rng.standard_normal(n)
        expected = _naive_order(x)
        idx = np.arange(n)
        lo = 0
        for hi in sorted({min(n, h) for h in (1, 3, 16, 32, 64, 128, n)}):
            order_head(x, idx, lo, hi)
            if ties:  # tied values may swap between head and rest; the sorted values may not
                npt.assert_array_equal(x[idx[:hi]], x[expected[:hi]])
            else:
                npt.assert_array_equal(idx[:hi], expected[:hi])
            npt.assert_array_equal(np.sort(idx), np.arange(n))  # still a permutation
            assert hi == n or x[idx[hi:]].max() <= x[idx[hi - 1]]
            lo = hi
        if not ties:
            npt.assert_array_equal(top_order(x, min(n, 11))[: min(n, 11)], expected[: min(n, 11)])


# ADAPTIVE CASCADE HEAD AND WORKSPACE ==============================================================


@pytest.mark.parametrize("n_relevant", [1, 2, 3])
@pytest.mark.parametrize("k", [-1, 30])
def test_sparse_cascade_widens_its_head(n_relevant, k):
    """MRR with few relevant documents far down the noisy order: the sorted head has to grow past its
    first 16 positions (to the second relevant document, or all the way); the estimate stays exact."""
    n, sigma = 70, 1.0
    rng = np.random.default_rng(n_relevant)
    a = np.linspace(3.0, -3.0, n)
    z = rng.standard_normal(n)
    gain = np.zeros(n)
    gain[rng.choice(np.arange(20, n), n_relevant, replace=False)] = 1.0
    cont = 1.0 - gain
    K = n if k <= 0 else k
    w = naive_position_weights("position", n + 4, K)
    for shift_invariant in (True, False):
        got = np.zeros(n)
        ccs_query(a, z, gain, cont, w, k, sigma, shift_invariant, got, np.empty(0))
        expected = naive_ccs_query(a, z, gain, cont, w, k, sigma, shift_invariant)
        npt.assert_allclose(got, expected, rtol=0, atol=1e-10 * (1 + np.abs(expected).max()))


def test_workspace_reuse_matches_fresh_calls():
    """One workspace, sized for the largest query, reused across queries and samples of other sizes
    and metrics, gives what fresh calls give."""
    rng = np.random.default_rng(11)
    work, order = ccs_workspace(90)
    for n in (90, 5, 60, 2, 90, 17):
        for k in (3, 10, -1):
            a = rng.standard_normal(n)
            z = rng.standard_normal(n)
            gain = (rng.random(n) < 0.3).astype(np.float64)
            cont = 1.0 - gain if k != 10 else np.ones(n)
            w = naive_position_weights("position", n + 4, n if k <= 0 else k)
            fresh = np.zeros(n)
            ccs_query(a, z, gain, cont, w, k, 1.0, True, fresh, np.empty(0))
            reused = np.zeros(n)
            ccs_query_ws(a, z, gain, cont, w, k, 1.0, True, reused, np.empty(0), work, order)
            npt.assert_array_equal(reused, fresh)


# ONE-PASS FINITE CHECK ============================================================================


@settings(max_examples=80, deadline=None)
@given(
    arrays(
        st.sampled_from([np.float32, np.float64]),
        st.integers(0, 300),
        elements=st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True),
    )
)
def test_finite_pass_matches_numpy(values):
    """The count is NumPy's, the float64 copy is astype's bit for bit (signed zeros, subnormals, NaN)."""
    expected = int((~np.isfinite(values)).sum())
    if values.dtype == np.float64:
        assert count_nonfinite(values) == expected
        return
    out = np.empty(values.size)
    assert float64_count_nonfinite(values, out) == expected
    npt.assert_array_equal(out.view(np.int64), values.astype(np.float64).view(np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_booster_scores_checked_in_one_pass(dtype):
    """Above the parallel threshold too: every dtype converts exactly; a NaN or inf names its row."""
    n = PARALLEL_MIN_ROWS + 7
    scores = np.random.default_rng(0).normal(size=n).astype(dtype)
    got = _finite_float64(scores, n)
    assert got.dtype == np.float64 and got.flags.c_contiguous
    npt.assert_array_equal(got, scores.astype(np.float64))
    if dtype == np.float64:
        assert got is scores  # LightGBM's scores are checked in place, not copied
    for bad in (np.nan, np.inf, -np.inf):
        broken = scores.copy()
        broken[n - 1] = bad
        with pytest.raises(
            ValueError, match=rf"'predictions' contains 1 NaN or infinite values \(first at row {n - 1}"
        ):
            _finite_float64(broken, n)
    with pytest.raises(ValueError, match=rf"'predictions' has {n} entries but there are {n + 1} documents"):
        _finite_float64(scores, n + 1)
