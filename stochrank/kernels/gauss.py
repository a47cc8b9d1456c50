r"""A one-dimensional fast Gauss transform with a split: the density sums of the bipartite metrics.

The CCS derivative of AUC or MAP (:mod:`.bipartite`) is, for every target t, a Gaussian sum over the
noisy scores :math:`x_i` of the documents with the other label,

.. math::

    G_t = \sum_{i < k_t} w^{\uparrow}_i K(x_i - m_t) + \sum_{i \ge k_t} w^{\downarrow}_i K(x_i - m_t),
    \qquad K(y) = e^{-y^2 / (2 s^2)},

with the sources sorted by decreasing x, :math:`k_t` the number of sources ranked above the target and
two weight vectors (MAP's metric differences depend on whether the target passes a source from above or
from below; AUC has one). The exact sum costs O(n) per target, O(n^2) per query. Here it costs O(1) per
target after an O(n) pass over the sorted sources:

**Boxes.** Greedily from the top, each box holds the sources in :math:`(t_j - s, t_j]` with :math:`t_j`
its first (highest) source; its centre is :math:`c_j = t_j - s/2`. A target reads only the boxes that
meet :math:`[m_t - R s, m_t + R s]` (at most 2R + 2 of them, found by bisection); every source in another
box is farther than Rs and contributes less than :math:`e^{-R^2/2}` per unit weight.

**Small boxes** (at most :data:`DIRECT_MAX` sources) are summed directly (exact).

**Large boxes** use the Hermite expansion about their centre. With :math:`\alpha = (m_t - c_j)/(s\sqrt2)`
and :math:`\beta_i = (x_i - c_j)/(s\sqrt2)`, :math:`|\beta_i| \le 1/(2\sqrt2)`, the generating function
of the Hermite polynomials gives

.. math::

    K(x_i - m_t) = e^{-(\alpha - \beta_i)^2} = \sum_{n \ge 0} \frac{\beta_i^n}{n!} h_n(\alpha),
    \qquad h_n(\alpha) = e^{-\alpha^2} H_n(\alpha),

so the box contributes :math:`\sum_{n<p} A_n h_n(\alpha)` with the moments
:math:`A_n = \sum_i w_i \beta_i^n / n!` (prefix moments inside the box give the split at :math:`k_t`),
and :math:`h_n` comes from the recurrence :math:`h_{n+1} = 2\alpha h_n - 2n h_{n-1}`.

**Error bound.** Cramér's inequality :math:`|H_n(\alpha)| e^{-\alpha^2/2} \le \kappa \sqrt{n!}\, 2^{n/2}`,
:math:`\kappa < 1.0865`, bounds term n by :math:`\kappa |w_i| 2^{-n} / \sqrt{n!}`; these shrink by a
factor of at least 2 from term to term, so the p-term truncation errs by at most
:math:`2 \kappa\, 2^{-p} / \sqrt{p!}` per unit weight: :math:`7.3 \cdot 10^{-12}` for p = 16. The boxes
left out add at most :math:`e^{-R^2/2} = 1.3 \cdot 10^{-14}` per unit weight for R = 8. Hence

.. math::

    |\hat G_t - G_t| \le 7.4 \cdot 10^{-12} \sum_i \max(|w^{\uparrow}_i|, |w^{\downarrow}_i|)
    \le 10^{-11} \, W,

relative to the largest value the sum can take (all sources at :math:`m_t`), plus floating-point
rounding of the same relative size as the direct sum's. ``tests/test_gauss_transform.py`` checks it
against the exact O(n^2) sum (``tests/naive.py``), for dense and spread scores.

**Cost.** Per target at most 2R + 2 = 18 boxes of at most max(:data:`DIRECT_MAX`, p) = 16 terms each;
the moments cost p per source of a large box: O(n) per query for any spread of the scores. Spread
scores (a trained model) leave few sources near each target and cost far less; dense scores (the all-zero
start, where every noisy score lies within a few s) use the expansion.

References
----------
Greengard, L., & Strain, J. (1991). The fast Gauss transform. SIAM J. Sci. Stat. Comput. 12(1), 79–94.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from ._fastexp import exp_nonpos

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

CUTOFF = 8.0  # R: boxes farther than R s are dropped (exp(-R^2/2) = 1.3e-14)
TERMS = 16  # p: Hermite terms of a large box (truncation error 7.3e-12 per unit weight)
DIRECT_MAX = 16  # boxes with at most this many sources are summed directly
ERROR_BOUND = 7.4e-12  # the documented bound per unit weight (module docstring)
_SQRT2 = 1.4142135623730951


@njit(cache=True)
def _boxes(x: FloatArray, s: float, start: IntArray) -> int:
    """Cut sources sorted by decreasing ``x`` into boxes of width ``s``; return their number.

    Box j holds sources ``start[j]:start[j + 1]``, all in ``(x[start[j]] - s, x[start[j]]]``.
    """
    n_boxes = 0
    i = 0
    while i < x.size:
        start[n_boxes] = i
        low = x[i] - s
        i += 1
        while i < x.size and x[i] > low:
            i += 1
        n_boxes += 1
    start[n_boxes] = x.size
    return n_boxes


@njit(cache=True)
def _moments(
    x: FloatArray,
    w_above: FloatArray,
    w_below: FloatArray,
    top: float,
    s: float,
    lo: int,
    hi: int,
    two_sided: bool,
    cum_above: FloatArray,
    cum_below: FloatArray,
) -> None:
    """Prefix moments of one large box: ``cum_*[i - lo + 1, n]`` sums ``w_i beta_i^n / n!`` over ``lo..i``."""
    centre = top - 0.5 * s
    scale = 1.0 / (s * _SQRT2)
    cum_below[0, :] = 0.0
    if two_sided:
        cum_above[0, :] = 0.0
    for i in range(lo, hi):
        beta = (x[i] - centre) * scale
        r = i - lo + 1
        term = 1.0
        for n in range(TERMS):
            cum_below[r, n] = cum_below[r - 1, n] + w_below[i] * term
            if two_sided:
                cum_above[r, n] = cum_above[r - 1, n] + w_above[i] * term
            term *= beta / (n + 1.0)


@njit(cache=True)
def gauss_sum(
    x: FloatArray,
    w_above: FloatArray,
    w_below: FloatArray,
    m: FloatArray,
    split: IntArray,
    s: float,
    two_sided: bool,
    out: FloatArray,
) -> None:
    r"""Set ``out[t]`` to :math:`G_t` of the module docstring (error at most 1e-11 times the weights' sum).

    Parameters
    ----------
    x : float64[S]
        Source positions, sorted by decreasing value.
    w_above, w_below : float64[S]
        Source weights for sources ranked above the target (index < ``split[t]``) and below it. With
        ``two_sided=False`` only ``w_below`` is read and ``split`` is ignored.
    m : float64[T]
        Target centres.
    split : int64[T]
        Number of sources ranked above each target.
    s : float
        Kernel width (> 0).
    two_sided : bool
        Whether the weights depend on the side.
    out : float64[T]
        Result (overwritten).
    """
    n_src = x.size
    out[:] = 0.0
    if n_src == 0:
        return
    start = np.empty(n_src + 1, dtype=np.int64)
    n_boxes = _boxes(x, s, start)
    # Prefix moments of the large boxes, stacked: box j's rows are first[j] .. first[j] + size.
    first = np.full(n_boxes, -1, dtype=np.int64)
    rows = 0
    for j in range(n_boxes):
        if start[j + 1] - start[j] > DIRECT_MAX:
            first[j] = rows
            rows += start[j + 1] - start[j] + 1
    cum_below = np.empty((rows, TERMS))
    cum_above = np.empty((rows if two_sided else 0, TERMS))
    for j in range(n_boxes):
        if first[j] >= 0:
            r0, r1 = first[j], first[j] + start[j + 1] - start[j] + 1
            _moments(
                x, w_above, w_below, x[start[j]], s, start[j], start[j + 1], two_sided,
                cum_above[r0:r1] if two_sided else cum_above, cum_below[r0:r1],
            )  # fmt: skip
    tops = np.empty(n_boxes)
    neg_tops = np.empty(n_boxes)  # increasing, for np.searchsorted
    for j in range(n_boxes):
        tops[j] = x[start[j]]
        neg_tops[j] = -tops[j]
    half_inv_var = 0.5 / (s * s)
    scale = 1.0 / (s * _SQRT2)
    h = np.empty(TERMS)
    for t in range(m.size):
        mt = m[t]
        k = split[t] if two_sided else 0
        # Boxes meeting [m - R s, m + R s]: tops in [m - R s, m + (R + 1) s].
        j = np.searchsorted(neg_tops, -(mt + (CUTOFF + 1.0) * s))
        total = 0.0
        while j < n_boxes and tops[j] >= mt - CUTOFF * s:
            lo, hi = start[j], start[j + 1]
            if first[j] < 0:
                for i in range(lo, hi):
                    d = x[i] - mt
                    w = w_above[i] if i < k else w_below[i]
                    total += w * exp_nonpos(-d * d * half_inv_var)
            else:
                alpha = (mt - (tops[j] - 0.5 * s)) * scale
                h[0] = exp_nonpos(-alpha * alpha)
                h[1] = 2.0 * alpha * h[0]
                for n in range(1, TERMS - 1):
                    h[n + 1] = 2.0 * alpha * h[n] - 2.0 * n * h[n - 1]
                r_end = first[j] + hi - lo
                if k <= lo:
                    for n in range(TERMS):
                        total += cum_below[r_end, n] * h[n]
                elif k >= hi:
                    for n in range(TERMS):
                        total += cum_above[r_end, n] * h[n]
                else:
                    r_k = first[j] + k - lo
                    for n in range(TERMS):
                        total += (cum_above[r_k, n] + cum_below[r_end, n] - cum_below[r_k, n]) * h[n]
            j += 1
        out[t] = total
