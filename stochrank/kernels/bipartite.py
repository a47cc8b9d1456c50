r"""Coordinate-conditional sampling (CCS) for the bipartite metrics AUC and MAP (binary relevance).

As for the cascade metrics (:mod:`.ccs`), fix one noise draw, hold the other documents' noisy scores
:math:`x_b` and integrate document d's own score over its conditional law :math:`N(m_d, s_d^2)`
(translation-invariant conditioning: :math:`m_d = a_d + \sigma \bar z_{\setminus d}`,
:math:`s_d = \sigma\sqrt{n/(n-1)}`). The derivative is one density per break point b (another document's
noisy score) times the metric's jump there:

.. math::

    \frac{\partial}{\partial m_d} E[M \mid \text{others}] = \sum_b J_b\, D(x_b), \qquad
    D(y) = \varphi((y - m_d)/s_d)/s_d,

and, as for the cascade metrics, the Newton curvature is :math:`\sum_b |J_b| D(x_b) / s_d`. Passing a
document with the same label changes neither metric (the two swap places in every count), so only the
documents with the other label are break points, and all of d's jumps have one sign (up for a relevant d):
the curvature is :math:`|\partial| / s_d`.

**AUC** :math:`= \frac{1}{PN}\sum_{i \in +, j \in -} [x_i > x_j]`: every jump is
:math:`\pm 1/(PN)` (the 1/(PN) is the query scale applied by the caller), so the derivative of a relevant d
is :math:`\sum_{b \in -} D(x_b)` and of an irrelevant one :math:`-\sum_{b \in +} D(x_b)`.

**MAP@K** :math:`= \frac{1}{\min(R, K)} \sum_{p < K,\ \mathrm{rel}} \mathrm{hits}_p/(p+1)`
(``stochrank.metrics.map``; the normaliser is the caller's query scale). In the ranking of the others,
let the break point b sit at 0-based position q with C relevant others above it. Document d moving from
just below b to just above it swaps the two; only their own precision terms change, by

.. math::

    J = \pm (C + 1) \Bigl( \frac{[q < K]}{q + 1} - \frac{[q + 1 < K]}{q + 2} \Bigr)

(+ for a relevant d passing an irrelevant b, − for an irrelevant d passing a relevant b). In the full
sampled ranking, with b at position :math:`P_b` and :math:`A_b` relevant documents above it, q and C are
:math:`P_b - 1` and :math:`A_b - [d \text{ relevant}]` when d is ranked above b, else :math:`P_b` and
:math:`A_b`: two weights per break point, one for targets below it and one for targets above it, read
from one O(n) pass over the ranking. With K < n only break points at :math:`P_b \le K` have a jump, so
only the top K + 1 positions are sorted (a partial sort).

**Cost.** Each target's sum is a Gaussian sum over the other label's noisy scores; :func:`.gauss.gauss_sum`
evaluates all of them in O(n) after the sort (error at most :math:`10^{-11}` of the sum of the weights'
magnitudes, see :mod:`.gauss`): O(n log n) per sample for AUC and MAP, O(n + K log K + n min(K, 288))
for MAP@K, never O(n^2).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from ._order import order_head
from .gauss import gauss_sum

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_INV_SQRT_2PI = 0.3989422804014327


@njit(cache=True)
def _map_jump(q: int, c: float, K: int) -> float:
    """|J| of a relevant document passing an irrelevant one at position q of the others' ranking.

    q = -1 (a target above the top source, which cannot happen) gives 0 rather than a division by zero.
    """
    if q < 0:
        return 0.0
    above = 1.0 / (q + 1.0) if q < K else 0.0
    below = 1.0 / (q + 2.0) if q + 1 < K else 0.0
    return (c + 1.0) * (above - below)


@njit(cache=True)
def bipartite_query(
    a: FloatArray,
    z: FloatArray,
    relevant: BoolArray,
    is_map: bool,
    k: int,
    sigma: float,
    out: FloatArray,
    curv: FloatArray,
) -> None:
    r"""Add one sample's CCS estimate of dE[M]/da for AUC or MAP@k to ``out`` (and its curvature to ``curv``).

    Parameters
    ----------
    a : float64[n]
        Smoothing centres; the noisy scores are ``a + sigma * z``.
    z : float64[n]
        Standard normal draws.
    relevant : bool[n]
        Binary relevance.
    is_map : bool
        MAP@k (True) or AUC (False); both unnormalised (the caller scales by 1/min(R, K) or 1/(PN)).
    k : int
        MAP's cut-off; ``k <= 0`` or ``k >= n`` means the whole list. Ignored for AUC.
    sigma : float
        Noise scale.
    out : float64[n]
        Accumulator of the ascent direction.
    curv : float64[n] or float64[0]
        Accumulator of the curvature :math:`\sum_b |J_b| D(x_b)/s_d`; an empty array skips it.
    """
    n = a.size
    if n < 2:
        return
    K = n if (k <= 0 or k >= n) else k
    x = a + sigma * z
    order = np.arange(n)
    head = min(K + 1, n) if is_map else n  # positions that can be break points
    if head == n:
        order = np.argsort(-x, kind="mergesort")
    else:
        order_head(x, order, 0, head)
    # Sources (the head's documents, by label, in decreasing x) and their weights.
    n_rel = 0
    for p in range(head):
        n_rel += relevant[order[p]]
    src_x = np.empty(head)
    w_above = np.empty(head)  # weight when the target is ranked below the source
    w_below = np.empty(head)  # weight when the target is ranked above the source
    rel_src = 0  # relevant sources fill 0.., irrelevant ones head-1 downwards (then reversed)
    irr_src = head - 1
    hits = 0.0  # A_b: relevant documents above position p
    for p in range(head):
        d = order[p]
        if relevant[d]:
            i = rel_src
            rel_src += 1
            src_x[i] = x[d]
            # An irrelevant target passes it (minus): C = A_b. AUC: every jump is -1.
            w_above[i] = -_map_jump(p, hits, K) if is_map else -1.0
            w_below[i] = -_map_jump(p - 1, hits, K) if is_map else -1.0
            hits += 1.0
        else:
            i = irr_src
            irr_src -= 1
            src_x[i] = x[d]
            # A relevant target passes it: C = A_b, or A_b - 1 when the target is above. AUC: +1.
            w_above[i] = _map_jump(p, hits, K) if is_map else 1.0
            w_below[i] = _map_jump(p - 1, hits - 1.0, K) if is_map else 1.0
    n_irr = head - n_rel
    # The irrelevant sources were filled from the end: reverse them into decreasing order.
    src_x[n_rel:] = src_x[n_rel:][::-1].copy()
    w_above[n_rel:] = w_above[n_rel:][::-1].copy()
    w_below[n_rel:] = w_below[n_rel:][::-1].copy()

    # Targets: every document, with its conditional mean and the sources of the other label above it.
    z_sum = z.sum()
    sd = sigma * np.sqrt(n / (n - 1.0))
    n_targets_rel = 0
    for d in range(n):
        n_targets_rel += relevant[d]
    m_rel = np.empty(n_targets_rel)
    split_rel = np.empty(n_targets_rel, dtype=np.int64)
    id_rel = np.empty(n_targets_rel, dtype=np.int64)
    m_irr = np.empty(n - n_targets_rel)
    split_irr = np.empty(n - n_targets_rel, dtype=np.int64)
    id_irr = np.empty(n - n_targets_rel, dtype=np.int64)
    seen_rel = 0
    seen_irr = 0
    i_rel = 0
    i_irr = 0
    for p in range(n):
        d = order[p]
        md = a[d] + sigma * (z_sum - z[d]) / (n - 1.0)
        if relevant[d]:
            m_rel[i_rel] = md
            split_rel[i_rel] = min(seen_irr, n_irr)  # below the head: every source is above
            id_rel[i_rel] = d
            i_rel += 1
            seen_rel += 1
        else:
            m_irr[i_irr] = md
            split_irr[i_irr] = min(seen_rel, n_rel)
            id_irr[i_irr] = d
            i_irr += 1
            seen_irr += 1
    two_sided = is_map
    sum_rel = np.empty(n_targets_rel)
    sum_irr = np.empty(n - n_targets_rel)
    gauss_sum(
        src_x[n_rel:], w_above[n_rel:], w_below[n_rel:], m_rel, split_rel, sd, two_sided, sum_rel
    )  # relevant targets against the irrelevant sources
    gauss_sum(src_x[:n_rel], w_above[:n_rel], w_below[:n_rel], m_irr, split_irr, sd, two_sided, sum_irr)
    norm = _INV_SQRT_2PI / sd
    newton = curv.size > 0
    for i in range(n_targets_rel):
        g = norm * sum_rel[i]
        out[id_rel[i]] += g
        if newton:
            curv[id_rel[i]] += abs(g) / sd
    for i in range(n - n_targets_rel):
        g = norm * sum_irr[i]
        out[id_irr[i]] += g
        if newton:
            curv[id_irr[i]] += abs(g) / sd
