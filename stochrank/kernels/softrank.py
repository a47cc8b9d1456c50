r"""Exact SoftRank (Taylor et al., WSDM 2008): expected DCG@k under Thurstonian rank distributions.

Each document's score is :math:`S_j \sim N(m_j, v_j)`. SoftRank replaces the distribution of the
ranking by per-document rank distributions built from the pairwise probabilities

.. math:: \pi_{ij} = P(S_i > S_j) = \Phi\Big(\frac{m_i - m_j}{\sqrt{v_i + v_j}}\Big),

treating "i beats j" for the different i as *independent* Bernoulli variables: the rank of j (0-based,
the number of documents above it) is a sum of independent Bernoullis, whose law :math:`p_j(r)` is built
one competitor at a time (the SoftRank recursion)

.. math:: p_j^{(t)}(r) = p_j^{(t-1)}(r)\,(1 - \pi_{i_t j}) + p_j^{(t-1)}(r-1)\,\pi_{i_t j},
          \qquad p_j^{(0)} = \delta_0 .

The value is :math:`V = \sum_j g_j \sum_{r<k} p_j(r)\, w_r` (expected DCG@k; SoftNDCG = V / IDCG). Only
:math:`r < k` matters and :math:`p^{(t)}(r)` depends on :math:`p^{(t-1)}` at ranks :math:`\le r` only, so
the recursion is truncated at k: O(n·k) per document, O(n²·k) per query, and documents with zero gain
are skipped (they add nothing to V; their scores still enter the others' :math:`\pi`).

**Gradient** (reverse mode through the recursion). With the adjoint :math:`\lambda^{(T)}(r) = g_j w_r`,

.. math:: \frac{\partial V}{\partial \pi_{i_t j}} = \sum_{r<k} \lambda^{(t)}(r)\,
          \big(p^{(t-1)}(r-1) - p^{(t-1)}(r)\big), \qquad
          \lambda^{(t-1)}(r) = \lambda^{(t)}(r)(1 - \pi_{i_t j}) + \lambda^{(t)}(r+1)\,\pi_{i_t j}

(:math:`\lambda(k) = 0`), then with :math:`s = \sqrt{v_i + v_j}`, :math:`z = (m_i - m_j)/s`:
:math:`\partial\pi_{ij}/\partial m_i = -\partial\pi_{ij}/\partial m_j = \varphi(z)/s` and
:math:`\partial\pi_{ij}/\partial v_i = \partial\pi_{ij}/\partial v_j = -\varphi(z)\,z/(2 s^2)`.
The forward distributions are stored (an n×k workspace per query), so the gradient costs the same
O(n²·k) as the value. Two documents with :math:`v_i + v_j = 0` compare by a step (1/2 on a tie), whose
derivatives are 0 (the limits of the Gaussian ones away from a tie).

**Linear discount over the whole list** (:func:`softrank_linear_query`, GP-Rank's training objective):
with :math:`w_r = 1 - r/n` the value depends on the rank laws only through the expected ranks
:math:`E[r_j] = \sum_i \pi_{ij}`, so it and its gradient cost O(n²) per query, without the recursion.

**Variance relative to the query's spread** (:func:`query_spread`, :func:`add_spread_gradient`): with
:math:`v_j = \sigma^2 s_q^2` for every document of query q, where
:math:`s_q^2 = \frac1n\sum_{i\in q}(m_i - \bar m_q)^2`, V is invariant to scaling the query's scores, and
its total derivative adds the variance path:
:math:`\frac{dV}{dm_i} = \frac{\partial V}{\partial m_i}
+ \big(\sum_{j\in q}\frac{\partial V}{\partial v_j}\big)\,\sigma^2\,\frac{2(m_i - \bar m_q)}{n}`.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from numba import njit, prange

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@njit(cache=True)
def _pair(m_i: float, m_j: float, v_sum: float) -> tuple[float, float, float]:
    """(pi, dpi/dm_i, dpi/dv_i) for P(S_i > S_j) with total variance ``v_sum``."""
    d = m_i - m_j
    if v_sum <= 0.0:
        if d > 0.0:
            return 1.0, 0.0, 0.0
        if d < 0.0:
            return 0.0, 0.0, 0.0
        return 0.5, 0.0, 0.0
    s = math.sqrt(v_sum)
    z = d / s
    pi = 0.5 * math.erfc(-z * _INV_SQRT2)
    dens = _INV_SQRT_2PI * math.exp(-0.5 * z * z) / s
    return pi, dens, -0.5 * dens * z / s


@njit(cache=True)
def _forward(mean: FloatArray, var: FloatArray, j: int, kk: int, pair: FloatArray, dist: FloatArray) -> None:
    """Rank distribution of document j, truncated to ranks < kk.

    Fills ``pair[t]`` with (pi, dpi/dm_i, dpi/dv_i) of the t-th competitor i (t runs over i != j in
    index order; pi = P(i beats j)) and ``dist[t]`` with p^{(t)} (``dist[0]`` = delta_0): the final
    distribution is ``dist[n - 1]``.
    """
    n = mean.size
    dist[0, :] = 0.0
    dist[0, 0] = 1.0
    t = 0
    for i in range(n):
        if i == j:
            continue
        p_beat, dm, dv = _pair(mean[i], mean[j], var[i] + var[j])
        pair[t, 0] = p_beat
        pair[t, 1] = dm
        pair[t, 2] = dv
        prev = dist[t]
        cur = dist[t + 1]
        top = min(t + 2, kk)  # after t + 1 competitors the rank is at most t + 1
        cur[0] = prev[0] * (1.0 - p_beat)
        for r in range(1, top):
            cur[r] = prev[r] * (1.0 - p_beat) + prev[r - 1] * p_beat
        for r in range(top, kk):
            cur[r] = 0.0
        t += 1


@njit(cache=True)
def softrank_rank_distribution(mean: FloatArray, var: FloatArray, k: int, out: FloatArray) -> None:
    """Write p_j(r) for every document j and rank r < min(k, n) to ``out``.

    ``k = -1`` means all n ranks; ``out`` has shape (n, min(k, n)).
    """
    n = mean.size
    if n == 0:
        return
    kk = n if (k < 0 or k > n) else k
    pair = np.empty((max(n - 1, 1), 3))
    dist = np.empty((n, kk))
    for j in range(n):
        _forward(mean, var, j, kk, pair, dist)
        out[j, :] = dist[n - 1, :kk]


@njit(cache=True)
def softrank_query(
    mean: FloatArray,
    var: FloatArray,
    gain: FloatArray,
    pos_weight: FloatArray,
    k: int,
    d_mean: FloatArray,
    d_var: FloatArray,
) -> float:
    r"""Compute the expected DCG@k of one query under SoftRank's rank distributions, and its gradient.

    Returns :math:`V = \sum_j g_j \sum_{r<k} p_j(r) w_r` and overwrites ``d_mean[j]`` =
    :math:`\partial V/\partial m_j`, ``d_var[j]`` = :math:`\partial V/\partial v_j`. ``k = -1`` (or k > n)
    uses the whole list; ``pos_weight`` needs at least min(k, n) entries.
    """
    n = mean.size
    d_mean[:] = 0.0
    d_var[:] = 0.0
    if n == 0:
        return 0.0
    kk = n if (k < 0 or k > n) else k
    pair = np.empty((max(n - 1, 1), 3))
    dist = np.empty((n, kk))
    lam = np.empty(kk + 1)
    value = 0.0
    for j in range(n):
        g = gain[j]
        if g == 0.0:
            continue
        _forward(mean, var, j, kk, pair, dist)
        final = dist[n - 1]
        for r in range(kk):
            value += g * final[r] * pos_weight[r]
            lam[r] = g * pos_weight[r]
        lam[kk] = 0.0
        # Reverse pass over the competitors: t = n - 2 .. 0, competitor index i (skipping j).
        i = n - 1
        for t in range(n - 2, -1, -1):
            if i == j:
                i -= 1
            prev = dist[t]
            top = min(t + 1, kk)  # p^{(t)} is zero at ranks > t
            d_pi = -lam[0] * prev[0]
            for r in range(1, top):
                d_pi += lam[r] * (prev[r - 1] - prev[r])
            if top < kk:
                d_pi += lam[top] * prev[top - 1]
            p_beat = pair[t, 0]
            for r in range(kk):
                lam[r] = lam[r] * (1.0 - p_beat) + lam[r + 1] * p_beat
            dm = d_pi * pair[t, 1]
            dv = d_pi * pair[t, 2]
            d_mean[i] += dm
            d_mean[j] -= dm
            d_var[i] += dv
            d_var[j] += dv
            i -= 1
    return value


@njit(cache=True, parallel=True)
def softrank_batch(
    mean: FloatArray,
    var: FloatArray,
    gain: FloatArray,
    offsets: IntArray,
    pos_weight: FloatArray,
    k: int,
    query_scale: FloatArray,
    values: FloatArray,
    d_mean: FloatArray,
    d_var: FloatArray,
) -> None:
    """Run :func:`softrank_query` for every query (``prange`` over queries).

    ``values[q]`` = ``query_scale[q]`` · V_q, and the rows of q in ``d_mean`` / ``d_var`` are scaled
    likewise.
    """
    n_queries = offsets.size - 1
    for qi in prange(n_queries):
        s = offsets[qi]
        e = offsets[qi + 1]
        c = query_scale[qi]
        v = softrank_query(mean[s:e], var[s:e], gain[s:e], pos_weight, k, d_mean[s:e], d_var[s:e])
        values[qi] = c * v
        for i in range(s, e):
            d_mean[i] *= c
            d_var[i] *= c


@njit(cache=True)
def softrank_linear_query(
    mean: FloatArray, var: FloatArray, gain: FloatArray, d_mean: FloatArray, d_var: FloatArray
) -> float:
    r"""Compute the expected DCG of one query under the whole-list linear discount, and its gradient.

    The discount is :math:`d(r) = 1 - r/n`; value and exact gradient take O(n²) instead of the
    recursion's O(n³).

    A linear discount needs only the expected ranks :math:`E[r_j] = \sum_{i \ne j} \pi_{ij}`:

    .. math:: V = \sum_j g_j \Big(1 - \frac{E[r_j]}{n}\Big)
              = \sum_j g_j - \frac1n \sum_{i<j} \big(g_i\,(1 - \pi_{ij}) + g_j\,\pi_{ij}\big),

    equal to :func:`softrank_query` with ``pos_weight`` :math:`= 1 - r/n` and ``k = -1``. A pair with equal
    gains adds a constant (its two terms sum to g), so only pairs of different gains evaluate
    :math:`\pi_{ij}`; :math:`\partial V/\partial\pi_{ij} = (g_i - g_j)/n`. Returns V and overwrites
    ``d_mean`` / ``d_var`` with :math:`\partial V/\partial m`, :math:`\partial V/\partial v`.
    """
    n = mean.size
    d_mean[:] = 0.0
    d_var[:] = 0.0
    if n == 0:
        return 0.0
    total = 0.0
    displaced = 0.0  # sum over pairs of gain times the probability of being beaten by the other
    for i in range(n):
        g_i = gain[i]
        total += g_i
        for j in range(i + 1, n):
            g_j = gain[j]
            if g_i == g_j:
                displaced += g_i
                continue
            p_beat, dm, dv = _pair(mean[i], mean[j], var[i] + var[j])  # P(i beats j)
            displaced += g_i * (1.0 - p_beat) + g_j * p_beat
            c = (g_i - g_j) / n
            d_mean[i] += c * dm
            d_mean[j] -= c * dm
            d_var[i] += c * dv
            d_var[j] += c * dv
    return total - displaced / n


@njit(cache=True, parallel=True)
def softrank_linear_batch(
    mean: FloatArray,
    var: FloatArray,
    gain: FloatArray,
    offsets: IntArray,
    query_scale: FloatArray,
    values: FloatArray,
    d_mean: FloatArray,
    d_var: FloatArray,
) -> None:
    """Run :func:`softrank_linear_query` for every query (``prange`` over queries).

    ``values[q]`` = ``query_scale[q]`` · V_q, the rows of q in ``d_mean`` / ``d_var`` scaled likewise; a
    query with ``query_scale[q] == 0`` is skipped (zeros).
    """
    n_queries = offsets.size - 1
    for qi in prange(n_queries):
        s = offsets[qi]
        e = offsets[qi + 1]
        c = query_scale[qi]
        if c == 0.0:
            values[qi] = 0.0
            d_mean[s:e] = 0.0
            d_var[s:e] = 0.0
            continue
        v = softrank_linear_query(mean[s:e], var[s:e], gain[s:e], d_mean[s:e], d_var[s:e])
        values[qi] = c * v
        for i in range(s, e):
            d_mean[i] *= c
            d_var[i] *= c


@njit(cache=True, parallel=True)
def query_spread(mean: FloatArray, offsets: IntArray, out: FloatArray) -> None:
    """Write the root-mean-square deviation of each query's scores from their mean to ``out`` (0 if empty)."""
    n_queries = offsets.size - 1
    for qi in prange(n_queries):
        s = offsets[qi]
        e = offsets[qi + 1]
        if e <= s:
            out[qi] = 0.0
            continue
        centre = 0.0
        for i in range(s, e):
            centre += mean[i]
        centre /= e - s
        total = 0.0
        for i in range(s, e):
            total += (mean[i] - centre) ** 2
        out[qi] = math.sqrt(total / (e - s))


@njit(cache=True, parallel=True)
def add_spread_gradient(
    mean: FloatArray, offsets: IntArray, sigma2: float, d_var: FloatArray, d_mean: FloatArray
) -> None:
    r"""Add the variance path of :math:`v_j = \sigma^2 s_q^2` to ``d_mean`` (module docs), query by query."""
    n_queries = offsets.size - 1
    for qi in prange(n_queries):
        s = offsets[qi]
        e = offsets[qi + 1]
        if e <= s:
            continue
        centre = 0.0
        d_v = 0.0
        for i in range(s, e):
            centre += mean[i]
            d_v += d_var[i]
        centre /= e - s
        factor = d_v * sigma2 * 2.0 / (e - s)
        for i in range(s, e):
            d_mean[i] += factor * (mean[i] - centre)
