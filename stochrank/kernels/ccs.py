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

    \sum_q \Delta M_q (D_q - D_{q-1}) = \sum_{q<p} D(x_{\pi(q)}) \bigl(g_d \alpha_q + c_d \beta_q - \gamma_q\bigr)
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
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._order import top_order

_INV_SQRT_2PI = 0.3989422804014327


@njit(cache=True)
def ccs_query(a, z, gain, cont, pos_weight, k, sigma, shift_invariant, out):
    """Add one sample's CCS estimate of dE[M]/da for one query to ``out``.

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
    """
    n = a.size
    if n == 0:
        return
    K = n if (k <= 0 or k > n) else k
    x = a + sigma * z
    H = min(n, K + 1)
    order = top_order(x, H)

    G = np.empty(H)
    C = np.empty(H)
    X = np.empty(H)
    P = np.empty(H + 1)
    P[0] = 1.0
    for j in range(H):
        d = order[j]
        G[j] = gain[d]
        C[j] = cont[d]
        X[j] = x[d]
        P[j + 1] = P[j] * C[j]

    # T: last position that can carry weight (top-k cut, or the cascade stops at a c = 0 document).
    T = K - 1
    for j in range(K):
        if C[j] == 0.0:
            T = j
            break

    # Swap coefficients for moving a document up past position q (q <= T).
    alpha = np.empty(T + 1)
    beta = np.empty(T + 1)
    gamma = np.empty(T + 1)
    for q in range(T + 1):
        wq = pos_weight[q] * P[q]
        alpha[q] = wq - pos_weight[q + 1] * P[q + 1]
        beta[q] = pos_weight[q + 1] * G[q] * P[q]
        gamma[q] = wq * G[q]

    if shift_invariant:
        z_sum = 0.0
        for i in range(n):
            z_sum += z[i]
        sd = sigma * np.sqrt(n / (n - 1.0))
    else:
        z_sum = 0.0
        sd = sigma
    half_inv_var = 0.5 / (sd * sd)
    norm = _INV_SQRT_2PI / sd

    for p in range(n):
        d = order[p]
        if shift_invariant:
            m = a[d] + sigma * (z_sum - z[d]) / (n - 1.0)
        else:
            m = a[d]
        gd = gain[d]
        cd = cont[d]
        acc = 0.0
        # Moves up: past every position q < min(p, T + 1).
        top = p if p <= T else T + 1
        for q in range(top):
            t = X[q] - m
            acc += norm * np.exp(-t * t * half_inv_var) * (gd * alpha[q] + cd * beta[q] - gamma[q])
        if p <= T:
            # Moves down to q = p+1 .. Q (Q = K lumps "falls out of the top k").
            Q = min(n - 1, K)
            wp_pp = pos_weight[p] * P[p]
            R_prev = P[p]  # cascade product in front of d at its new position
            dm_prev = 0.0  # Delta M(p -> q-1); zero for q-1 = p
            up = 0.0  # change of the documents that moved up by one
            for q in range(p + 1, Q + 1):
                up += pos_weight[q - 1] * G[q] * R_prev - pos_weight[q] * G[q] * P[q]
                R = R_prev * C[q]
                dm = gd * (pos_weight[q] * R - wp_pp) + up
                t = X[q] - m
                acc += norm * np.exp(-t * t * half_inv_var) * (dm_prev - dm)
                dm_prev = dm
                R_prev = R
                if R == 0.0:
                    # d has passed a c = 0 document: Delta M is constant from here on, so the
                    # remaining terms telescope to zero.
                    break
        out[d] += acc
