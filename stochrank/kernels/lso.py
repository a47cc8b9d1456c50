r"""CCS for learning to select with order (LSO): the paper's DCG-RR, eq. (5).

The order of a query's documents is fixed by their row order; the model only decides which to show
(noisy score > 0). With :math:`c_i = \#\{j < i : x_j > 0\}` the rank of an included document,

.. math::

    M(x) = \sum_{i:\, x_i > 0,\; c_i < k} g_i \, w_{c_i},

with :math:`w_c = 1/(c+1)` for the paper's reciprocal rank. Holding the other documents' noisy scores,
M as a function of :math:`x_d` is a single step at 0 (Corollary 1's LSO case: k' = 1, b_1 = 0), so

.. math::

    \frac{\partial}{\partial a_d} E[M \mid \text{others}] = \Delta M_d \,\varphi(a_d/\sigma)/\sigma,
    \qquad \Delta M_d = M(d \text{ shown}) - M(d \text{ hidden}).

LSO is not translation invariant (the threshold is absolute), so d's score is conditioned on its own
noise only. :math:`\Delta M_d` for all d comes from one backward pass of suffix sums: O(n) per sample.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from numba import njit

from ._fastexp import exp_nonpos

FloatArray = npt.NDArray[np.float64]

_INV_SQRT_2PI = 0.3989422804014327


@njit(cache=True)
def lso_query(
    a: FloatArray, z: FloatArray, gain: FloatArray, pos_weight: FloatArray, sigma: float, out: FloatArray
) -> None:
    """Add one sample's CCS estimate of dE[DCG-RR]/da for one query (rows in display order) to ``out``.

    ``pos_weight`` holds w_c for ranks c = 0..n (zero from rank k on); ``a + sigma * z`` are the noisy
    scores; a document is shown when its noisy score is > 0.
    """
    n = a.size
    rank = np.empty(n, dtype=np.int64)  # c_i: shown documents before i
    shown = 0
    for i in range(n):
        rank[i] = shown
        if a[i] + sigma * z[i] > 0.0:
            shown += 1
    # Walking backwards, keep for the shown documents after d:
    #   grow = sum g_j (w[c_j + 1] - w[c_j])   (effect of showing one more document before them)
    #   shrink = sum g_j (w[c_j] - w[c_j - 1]) (their gain from d being shown, if d itself is shown)
    grow = 0.0
    shrink = 0.0
    norm = _INV_SQRT_2PI / sigma
    for d in range(n - 1, -1, -1):
        c = rank[d]
        is_shown = a[d] + sigma * z[d] > 0.0
        delta = gain[d] * pos_weight[c] + (shrink if is_shown else grow)
        t = a[d] / sigma
        out[d] += delta * norm * exp_nonpos(-0.5 * t * t)
        if is_shown:
            grow += gain[d] * (pos_weight[c + 1] - pos_weight[c])
            if c > 0:
                shrink += gain[d] * (pos_weight[c] - pos_weight[c - 1])
