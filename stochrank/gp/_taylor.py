r"""First-order Taylor pair statistics shared by the gradient learners (Mukherjee & Zhou 2006; GPGL).

For inputs :math:`x_i` (rows of ``T``) and targets :math:`y_i`, every ordered pair :math:`i \ne j` gives
one equation of the first-order Taylor expansion of the regression function at :math:`x_i`,

.. math::
    z_{ij} := y_j - y_i \approx f(x_i)^\top u_{ij}, \qquad u_{ij} := x_j - x_i,

weighted by :math:`w_{ij} = \exp(-\lVert u_{ij}\rVert^2 / 2s^2)`. A quadratic loss in the gradients
:math:`f_i := f(x_i)` only needs, per anchor :math:`i`,

.. math::
    B_i = \sum_j w_{ij} u_{ij} u_{ij}^\top, \qquad b_i = \sum_j w_{ij} z_{ij} u_{ij},
    \qquad \sum_{ij} w_{ij} (z_{ij} - f_i^\top u_{ij})^2
        = z^\top W z - 2\sum_i b_i^\top f_i + \sum_i f_i^\top B_i f_i,

computed here in O(n² d²) time and O(n d²) memory (anchors in chunks, no n x n x d array).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float64]

__all__ = [
    "PairStats",
    "bandwidth_from_rule",
    "pair_statistics",
    "principal_directions",
    "rbf",
    "sq_distances",
    "taylor_predict",
]

# Entries of a chunk of anchors x all points x coordinates held at once while accumulating B_i.
_CHUNK_ENTRIES = 2_000_000
# Eigenvalues of B_i below this fraction of its largest (or of the largest of all anchors): rank deficiency.
RANK_TOL = 1e-10


def sq_distances(A: Array, B: Array) -> Array:
    """Squared Euclidean distances between the rows of ``A`` and of ``B`` (clipped at 0)."""
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)
    return np.asarray(np.maximum(sq, 0.0), dtype=np.float64)


def rbf(A: Array, B: Array, length_scale: float) -> Array:
    """Unit-variance squared-exponential kernel ``exp(-|a - b|^2 / (2 length_scale^2))``."""
    return np.exp(-sq_distances(A, B) / (2.0 * length_scale * length_scale))


def _pairwise(T: Array) -> Array:
    d2 = sq_distances(T, T)
    np.fill_diagonal(d2, np.inf)  # a point is not its own neighbour
    return np.sqrt(d2)


def bandwidth_from_rule(T: Array, rule: str, n_neighbors: int) -> float:
    """Return the Taylor-weight bandwidth ``s`` of a rule.

    ``"median"``: the median distance over all pairs (the seed's rule); ``"knn"``: the median over points
    of the distance to their ``n_neighbors``-th nearest neighbour.
    """
    dist = _pairwise(T)
    if rule == "median":
        upper = dist[np.triu_indices(T.shape[0], 1)]
        return float(np.median(upper))
    k = min(n_neighbors, T.shape[0] - 1)
    return float(np.median(np.partition(dist, k - 1, axis=1)[:, k - 1]))


def principal_directions(T: Array, variance_fraction: float) -> tuple[Array, int]:
    """Return the leading principal directions of the centred ``T`` and their number ``d`` (at least 1).

    The directions (columns) are the right singular vectors explaining ``variance_fraction`` of the variance.
    """
    _, sv, vt = np.linalg.svd(T, full_matrices=False)
    energy = sv * sv
    cumulative = np.cumsum(energy) / energy.sum()
    d = int(np.searchsorted(cumulative, variance_fraction - 1e-12) + 1)
    d = min(d, int((sv > RANK_TOL * sv[0]).sum()))
    return np.ascontiguousarray(vt[: max(d, 1)].T), max(d, 1)


@dataclass
class PairStats:
    """Sufficient statistics of the weighted Taylor pairs (see the module docstring)."""

    B: Array  # (n, d, d)
    b: Array  # (n, d)
    zWz: float  # sum_ij w_ij z_ij^2
    n_pairs: int  # n (n - 1) ordered pairs
    log_det_w: float  # sum_{i != j} log w_ij
    rank: npt.NDArray[np.int64]  # numerical rank of every B_i

    @property
    def n_informative(self) -> int:
        """Sum of the ranks of the B_i: the directions in which the pairs inform the gradients."""
        return int(self.rank.sum())


def _ranks(B: Array) -> npt.NDArray[np.int64]:
    lam = np.linalg.eigvalsh(B)
    floor = RANK_TOL * max(float(lam.max()), np.finfo(np.float64).tiny)
    keep = (lam > RANK_TOL * lam[:, -1:]) & (lam > floor * 1e-4)
    return np.asarray(keep.sum(1), dtype=np.int64)


def pair_statistics(T: Array, y: Array, bandwidth: float) -> PairStats:
    r"""Return ``B_i``, ``b_i``, ``z'Wz`` and the log-weights of all ordered pairs of the rows of ``T``.

    Expanded so that the O(n² d²) work is one matrix product per chunk of anchors,
    :math:`B_i = \sum_j w_{ij} x_j x_j^\top - x_i s_i^\top - s_i x_i^\top + (\sum_j w_{ij}) x_i x_i^\top` with
    :math:`s_i = \sum_j w_{ij} x_j` (about four times faster than the batched dxd products); the rows are
    centred first, so the cancellation costs about :math:`\log_{10}(\lVert x\rVert^2/s^2)` digits.
    """
    n, d = T.shape
    T = T - T.mean(0)
    outer = (T[:, :, None] * T[:, None, :]).reshape(n, d * d)
    B = np.empty((n, d, d))
    b = np.empty((n, d))
    zWz = 0.0
    log_det_w = 0.0
    step = max(1, _CHUNK_ENTRIES // max(n, 1))
    inv_two_s2 = 1.0 / (2.0 * bandwidth * bandwidth)
    for start in range(0, n, step):
        rows = np.arange(start, min(start + step, n))
        log_w = -sq_distances(T[rows], T) * inv_two_s2
        log_w[np.arange(rows.size), rows] = 0.0  # the diagonal is excluded below; keeps the sum finite
        w = np.exp(log_w)
        w[np.arange(rows.size), rows] = 0.0
        xi, yi = T[rows], y[rows]
        total = w.sum(1)
        s = w @ T  # Σ_j w_ij x_j
        wy = w @ y  # Σ_j w_ij y_j
        B[rows] = (w @ outer).reshape(-1, d, d)
        B[rows] -= xi[:, :, None] * s[:, None, :] + s[:, :, None] * xi[:, None, :]
        B[rows] += total[:, None, None] * (xi[:, :, None] * xi[:, None, :])
        b[rows] = (w * y[None, :]) @ T - yi[:, None] * s - wy[:, None] * xi + (yi * total)[:, None] * xi
        z = y[None, :] - yi[:, None]
        zWz += float((w * z * z).sum())
        log_det_w += float(log_w.sum())
    return PairStats(B, b, zWz, n * (n - 1), log_det_w, _ranks(B))


def taylor_predict(T_train: Array, y_train: Array, gradients: Array, T_new: Array, bandwidth: float) -> Array:
    r"""Predict targets by first-order Taylor expansion from the training anchors.

    :math:`\hat y(x) = \sum_i w_i(x)\,(y_i + f_i^\top (x - x_i)) / \sum_i w_i(x)`, Gaussian weights of
    bandwidth ``s`` (shifted by the largest log-weight, so a far point takes its nearest anchors).
    """
    log_w = -sq_distances(T_new, T_train) / (2.0 * bandwidth * bandwidth)
    w = np.exp(log_w - log_w.max(1, keepdims=True))
    local = y_train[None, :] + T_new @ gradients.T - (gradients * T_train).sum(1)[None, :]
    return np.asarray((w * local).sum(1) / w.sum(1))
