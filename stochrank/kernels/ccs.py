r"""Coordinate-conditional sampling (CCS) for the cascade family of ranking metrics.

The family is eq. (7) of Ustimenko & Prokhorenkova (ICML 2020), written as a quality (higher is
better). With :math:`\pi` the ranking by decreasing noisy score :math:`x = a + \sigma z`,

.. math::

    M(x) = \sum_{p \ge 0} w_p \, g_{\pi(p)} \, P_p, \qquad P_p = \prod_{j < p} c_{\pi(j)},

where :math:`w_p` is the weight of 0-based position p (zero from position k on), :math:`g` a per-document
gain and :math:`c` a per-document continuation factor. DCG: c = 1. ERR: g = R, c = 1 - R, w_p = 1/(p+1).
PFound: g = R, c = decay (1 - R), w_p = 1. MRR: ERR with R = 1{relevant}. CatBoost's FilteredDCG is DCG
plus a noise-free virtual document at score 0 with g = 0 and c = 0 (nothing below it counts).

**The estimate.** Fix one draw of the noise. For document d, hold the other documents' noisy scores
and integrate d's own score over its conditional law :math:`N(m_d, \sigma_d^2)`; then
:math:`E[M \mid \text{others}] = \sum_q M_q \Pr(d \text{ lands at } q)` and

.. math::

    \frac{\partial}{\partial m_d} E[M \mid \text{others}] = \sum_q \Delta M(p \to q) \,
    \frac{\partial}{\partial m_d} \Pr(q),

with :math:`\Delta M(p \to q)` the change of M when d moves from its sampled position p to q
(Theorem 3 / Corollary 1 of the paper; Appendix D gives these differences in O(1)). Landing at q means
lying between the others' (q-1)-th and q-th scores, so :math:`\partial \Pr(q)/\partial m` is a difference
of two normal densities :math:`D(y) = \varphi((y - m_d)/\sigma_d)/\sigma_d`. Summing by parts turns the
sum into one density per neighbouring position:

.. math::

    \sum_q \Delta M_q (D_q - D_{q-1})
    = \sum_{q<p} D(x_{\pi(q)}) \bigl(g_d \alpha_q + c_d \beta_q - \gamma_q\bigr)
    + \sum_{q>p} D(x_{\pi(q)}) (\Delta M_{q-1} - \Delta M_q),

with :math:`\alpha_q = w_q P_q - w_{q+1} P_{q+1}`, :math:`\beta_q = w_{q+1} g_{\pi(q)} P_q`,
:math:`\gamma_q = w_q g_{\pi(q)} P_q` (moving d up past the document at q is a swap with it), and for
moves down an incremental update that never divides by a continuation factor (so R = 1 needs no
special branch, unlike CatBoost's).

**Conditioning.** For translation-invariant metrics (all of the above without the virtual document)
the estimate conditions on the others' noise *relative to their mean*, which integrates d's noise and
the common shift at once: :math:`m_d = a_d + \sigma \bar z_{\setminus d}` and
:math:`\sigma_d = \sigma \sqrt{n/(n-1)}`. This is CatBoost's estimator with one deliberate difference:
CatBoost uses :math:`m_d = a_d + (\sum_j z_j - \sigma z_d)/(n-1)` (the noise sum unscaled), which equals
ours only for :math:`\sigma = 1` and is biased otherwise. With the virtual document the metric is not
translation invariant and :math:`m_d = a_d`, :math:`\sigma_d = \sigma`.

**Cost.** Only positions 0..T matter, T = min(k-1, first position whose c is 0). A document below T
needs T+1 densities, one above it at most k+1, plus an O(n) selection of the top k+1: O(n (k + 1))
per sample instead of the O(n^2) of evaluating every move, and O(n log n) only when k is about n.
A cascade that stops needs even less order: moves down end at the next c = 0 document, so only the
positions up to the second c = 0 document (or k) have to be sorted, however large k is (MRR sorts a
head of about 16 instead of the whole list).

**Layout.** Per sample, every document's conditional mean, gain and continuation are copied into
position order; moves up then run position q by position over all documents below q, and each head
document's moves down evaluate their densities in one loop after the (sequential, cheap) recurrence
for their coefficients. Both inner loops are elementwise, so the branch-free
:func:`._fastexp.exp_nonpos` vectorises (np.exp in Numba is a scalar libm call). One query's scratch
arrays come from :func:`ccs_workspace` and serve every sample.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from ._fastexp import exp_nonpos
from ._order import order_head

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_INV_SQRT_2PI = 0.3989422804014327
_HEAD_START = 16  # first sorted head when the cascade may stop early; doubled while too short

# Rows of the float workspace: noisy scores; every document's conditional mean, gain, continuation,
# density sum and absolute density sum (the curvature) in position order; the head's noisy scores and
# cascade products P; one document's moves-down terms.
_X, _POS_M, _POS_G, _POS_C, _POS_ACC, _POS_CURV, _HEAD_X, _HEAD_P, _DOWN = 0, 1, 2, 3, 4, 5, 6, 7, 8
_WS_ROWS = 9


@njit(cache=True)
def ccs_workspace(n: int) -> tuple[FloatArray, IntArray]:
    """Scratch for :func:`ccs_query_ws` on a query of ``n`` documents: (float rows, order)."""
    return np.empty((_WS_ROWS, n + 1)), np.empty(n, dtype=np.int64)


@njit(cache=True)
def ccs_query(
    a: FloatArray,
    z: FloatArray,
    gain: FloatArray,
    cont: FloatArray,
    pos_weight: FloatArray,
    k: int,
    sigma: float,
    shift_invariant: bool,
    out: FloatArray,
    curv: FloatArray,
) -> None:
    r"""Add one sample's CCS estimate of dE[M]/da for one query to ``out`` (and its curvature to ``curv``).

    Parameters
    ----------
    a : float64[n]
        Smoothing centres (scores after the relevance shift; centring does not matter).
    z : float64[n]
        Standard normal draws; the noisy scores are ``a + sigma * z``.
    gain, cont : float64[n]
        Per-document gain g and continuation factor c of the metric.
    pos_weight : float64[>= min(n, k) + 2]
        Weight of each 0-based position; must be 0 from position ``k`` on.
    k : int
        Truncation; ``k >= n`` or ``k <= 0`` means the whole list.
    sigma : float
        Noise scale.
    shift_invariant : bool
        Condition on the others' noise relative to their mean (translation-invariant metrics).
    out : float64[n]
        Accumulator; the estimate of the ascent direction is added to it.
    curv : float64[n] or float64[0]
        Accumulator of the positive curvature :math:`\sum_b |c_b| D(b) / s_d` (see the module docs);
        an empty array skips it.
    """
    work, order = ccs_workspace(a.size)
    ccs_query_ws(a, z, gain, cont, pos_weight, k, sigma, shift_invariant, out, curv, work, order)


@njit(cache=True)
def _last_needed_position(cont: FloatArray, order: IntArray, h: int, K: int, Q: int) -> int:
    """Deepest position the estimate reads, from a sorted head of length h; -1 if h is too short.

    Moves down stop at Q or right after passing a c = 0 document; the deepest such stop is the second
    c = 0 document Z2 (the first one, at T, still moves down until the next). Past Z2 nothing is read.
    """
    zeros = 0
    for j in range(h):
        # A first c = 0 document below the top k cuts nothing (T = K - 1 then), so it is not counted.
        if cont[order[j]] == 0.0 and (zeros > 0 or j < K):
            zeros += 1
            if zeros == 2:
                return min(j, Q)
    return Q if h > Q else -1


@njit(cache=True)
def ccs_query_ws(
    a: FloatArray,
    z: FloatArray,
    gain: FloatArray,
    cont: FloatArray,
    pos_weight: FloatArray,
    k: int,
    sigma: float,
    shift_invariant: bool,
    out: FloatArray,
    curv: FloatArray,
    work: FloatArray,
    order: IntArray,
) -> None:
    """:func:`ccs_query` with caller-provided scratch from ``ccs_workspace(n)`` (or larger)."""
    n = a.size
    newton = curv.size > 0
    if n == 0:
        return
    K = n if (k <= 0 or k > n) else k
    Q = min(n - 1, K)  # deepest move down (Q = K lumps "falls out of the top k")
    x = work[_X, :n]
    for i in range(n):
        x[i] = a[i] + sigma * z[i]
        order[i] = i

    # Sort only as deep as the estimate reads (see _last_needed_position).
    lo = 0
    h = min(Q + 1, _HEAD_START)
    while True:
        order_head(x, order[:n], lo, h)
        L = _last_needed_position(cont, order, h, K, Q)
        if L >= 0:
            break
        lo = h
        h = min(Q + 1, 2 * h)
    H = L + 1

    z_sum = 0.0
    if shift_invariant:
        for i in range(n):
            z_sum += z[i]
        sd = sigma * np.sqrt(n / (n - 1.0))
    else:
        sd = sigma
    half_inv_var = 0.5 / (sd * sd)
    norm = _INV_SQRT_2PI / sd

    # Contiguous copies in position order (sorted head, then the rest in any order), so that the
    # density loops below run elementwise and vectorise.
    M = work[_POS_M, :n]  # conditional mean of d's noisy score given the others
    G = work[_POS_G, :n]
    C = work[_POS_C, :n]
    acc = work[_POS_ACC, :n]
    hsum = work[_POS_CURV, :n]
    for p in range(n):
        d = order[p]
        M[p] = a[d] + sigma * (z_sum - z[d]) / (n - 1.0) if shift_invariant else a[d]
        G[p] = gain[d]
        C[p] = cont[d]
        acc[p] = 0.0
        hsum[p] = 0.0
    X = work[_HEAD_X, :H]
    P = work[_HEAD_P, : H + 1]
    P[0] = 1.0
    for j in range(H):
        X[j] = x[order[j]]
        P[j + 1] = P[j] * C[j]

    # T: last position that can carry weight (top-k cut, or the cascade stops at a c = 0 document).
    T = K - 1
    for j in range(min(K, H)):
        if C[j] == 0.0:
            T = j
            break

    # Moves up: the document at p passes every q < min(p, T + 1), a swap with the document at q.
    # Position by position, the inner loop runs over all documents below q. (It indexes slices from
    # 0 because Numba's range(q + 1, n) loops do not vectorise.)
    for q in range(T + 1):
        wq = pos_weight[q] * P[q]
        alpha = wq - pos_weight[q + 1] * P[q + 1]
        beta = pos_weight[q + 1] * G[q] * P[q]
        gamma = wq * G[q]
        xq = X[q]
        M_below = M[q + 1 :]
        G_below = G[q + 1 :]
        C_below = C[q + 1 :]
        acc_below = acc[q + 1 :]
        if newton:
            h_below = hsum[q + 1 :]
            for i in range(M_below.size):
                t = xq - M_below[i]
                term = exp_nonpos(-t * t * half_inv_var) * (G_below[i] * alpha + C_below[i] * beta - gamma)
                acc_below[i] += term
                h_below[i] += abs(term)
        else:
            for i in range(M_below.size):
                t = xq - M_below[i]
                swap = G_below[i] * alpha + C_below[i] * beta - gamma
                acc_below[i] += exp_nonpos(-t * t * half_inv_var) * swap

    # Moves down (only documents at p <= T gain by them) to q = p+1 .. Q. The differences
    # Delta M(p -> q-1) - Delta M(p -> q) come from a cheap sequential recurrence; their densities
    # are then one elementwise loop.
    down = work[_DOWN, :]
    for p in range(T + 1):
        gd = G[p]
        wp_pp = pos_weight[p] * P[p]
        R_prev = P[p]  # cascade product in front of d at its new position
        dm_prev = 0.0  # Delta M(p -> q-1); zero for q-1 = p
        up = 0.0  # change of the documents that moved up by one
        last = Q
        for q in range(p + 1, Q + 1):
            up += pos_weight[q - 1] * G[q] * R_prev - pos_weight[q] * G[q] * P[q]
            R = R_prev * C[q]
            dm = gd * (pos_weight[q] * R - wp_pp) + up
            down[q] = dm_prev - dm
            dm_prev = dm
            R_prev = R
            if R == 0.0:
                # d has passed a c = 0 document: Delta M is constant from here on, so the
                # remaining terms telescope to zero.
                last = q
                break
        m = M[p]
        X_below = X[p + 1 : last + 1]
        terms = down[p + 1 : last + 1]
        for i in range(terms.size):
            t = X_below[i] - m
            terms[i] *= exp_nonpos(-t * t * half_inv_var)
        acc[p] += terms.sum()
        if newton:
            hsum[p] += np.abs(terms).sum()

    for p in range(n):
        out[order[p]] += norm * acc[p]
    if newton:
        # |c_b| D(b) / s_d: the 1/s_d makes |gradient| <= s_d * curvature for every draw
        for p in range(n):
            curv[order[p]] += norm / sd * hsum[p]
