r"""Numerical core of the trace-norm matrix-variate GP (Koyejo, Lee & Ghosh).

Kernel bases, the observation operator in basis coordinates, the accelerated proximal-gradient solver of
eq. (14)/(16) and the posterior covariance of eq. (10)/(2).

The MN × MN Kronecker matrix :math:`K_N \otimes K_M` is never formed. With :math:`M_o, N_o` the observed
rows and columns, :math:`D_M \le M_o, D_N \le N_o` the basis ranks and T observations, one solver
iteration costs

* grid observations (every entry of the observed rows × columns, once): :math:`O(D_M D_N)` for the loss
  and gradient (both are diagonal in the kernels' eigen-bases) plus the SVD,
* scattered observations: :math:`O(T D_N + M_o D_M D_N)` (a sparse product and two dense ones) plus the SVD,

the SVD of singular-value thresholding :math:`O(D_M D_N \min(D_M, D_N))` (skipped when the trace weight is
0), and memory :math:`O(M_o^2 + N_o^2 + D_M D_N + T)`. Setting up costs the two eigen-decompositions,
:math:`O(M_o^3 + N_o^3)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.linalg
import scipy.sparse

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

# Eigenvalues below this fraction of the largest are left out of the basis G = U Λ^½: their directions carry
# no function (up to rounding) and Λ^-½ would amplify rounding in the extension to new rows (Theorem 1).
EIGEN_FLOOR = 1e-10
# A kernel block is positive semi-definite when its smallest eigenvalue is above -PSD_TOLERANCE · largest.
PSD_TOLERANCE = 1e-8
# Floats per temporary block in the row-wise products and covariance reductions (16 MB).
CHUNK = 1 << 21
# Scattered observations: the posterior covariance needs the T × T Cholesky factor of eq. (2) (8·T² bytes).
MAX_SCATTERED_COVARIANCE = 8000


# --------------------------------------------------------------------------------------- kernel bases
@dataclass(frozen=True)
class KernelBasis:
    r"""Eigen-decomposition :math:`K[I, I] = U Λ U^\top` of a kernel restricted to the observed indices I.

    The basis of eq. (14) is :math:`G = U_+ Λ_+^{1/2}` over the ``keep`` largest eigenpairs; ``to_basis``
    :math:`= U_+ Λ_+^{-1/2}` maps a kernel row :math:`k(m, I)` to the basis coordinates of m (for the
    observed indices this gives back the rows of G, for any other index it is the GP extension).
    """

    index: IntArray  # observed indices into the kernel, sorted
    vectors: FloatArray  # every eigenvector, columns in ascending eigenvalue order
    values: FloatArray  # every eigenvalue, ascending, negative rounding clipped to 0
    keep: int

    @property
    def basis(self) -> FloatArray:
        return self.vectors[:, -self.keep :] * np.sqrt(self.values[-self.keep :])

    @property
    def to_basis(self) -> FloatArray:
        return self.vectors[:, -self.keep :] / np.sqrt(self.values[-self.keep :])


def kernel_basis(K_sub: FloatArray, index: IntArray, name: str, owner: str) -> KernelBasis:
    """Eigen-decompose the observed block of a kernel, checking that it is positive semi-definite."""
    values, vectors = np.linalg.eigh(K_sub)
    top = float(values[-1])
    if top <= 0.0 or values[0] < -PSD_TOLERANCE * top:
        raise ValueError(
            f"'{name}' of {owner} is not positive semi-definite on the observed indices: eigenvalues "
            f"{values[0]:.3g} .. {top:.3g}. Pass a covariance (kernel) matrix, e.g. symmetrise it and add a "
            "small multiple of the identity, or build it from a graph Laplacian with expm(-beta * L)."
        )
    values = np.maximum(values, 0.0)
    keep = int(np.count_nonzero(values > EIGEN_FLOOR * top))
    return KernelBasis(index, vectors, values, keep)


# ---------------------------------------------------------------------------- observation operators
class GridSampling:
    r"""Every entry of the observed rows × columns observed once: the loss is diagonal in the eigen-bases.

    With :math:`Ψ = G_M B G_N^\top = U_M (Λ_M^{1/2} B Λ_N^{1/2}) U_N^\top`, the squared loss on the grid is
    :math:`\|Λ_M^{1/2} B Λ_N^{1/2} - U_M^\top R U_N\|_F^2` plus the part of R outside the bases (a
    constant), so the operator works on :math:`D_M × D_N` matrices.
    """

    def __init__(
        self, rows: KernelBasis, cols: KernelBasis, row_local: IntArray, col_local: IntArray
    ) -> None:
        self.row_scale = np.sqrt(rows.values[-rows.keep :])
        self.col_scale = np.sqrt(cols.values[-cols.keep :])
        self.row_vectors = rows.vectors[:, -rows.keep :]
        self.col_vectors = cols.vectors[:, -cols.keep :]
        self.shape = (rows.index.size, cols.index.size)
        self.flat = row_local * self.shape[1] + col_local
        self.norm_sq = float(self.row_scale.max() ** 2 * self.col_scale.max() ** 2)

    def encode(self, values: FloatArray) -> tuple[FloatArray, float]:
        """Target in operator space and the constant ``½‖r‖² - ½‖encoded‖²`` left out of it."""
        R = np.empty(self.shape[0] * self.shape[1])
        R[self.flat] = values
        rotated = self.row_vectors.T @ R.reshape(self.shape) @ self.col_vectors
        return rotated, max(0.0, 0.5 * (float(values @ values) - float(np.sum(rotated * rotated))))

    def forward(self, B: FloatArray) -> FloatArray:
        return self.row_scale[:, None] * B * self.col_scale[None, :]

    adjoint = forward

    def at_observed(self, B: FloatArray) -> FloatArray:
        """ψ at the observations, in the order they were given."""
        left = self.row_vectors * self.row_scale
        right = self.col_vectors * self.col_scale
        psi: FloatArray = ((left @ B) @ right.T).ravel()[self.flat]
        return psi


class ScatteredSampling:
    r"""Observation operator for any set of observed entries.

    :math:`B \mapsto (G_M B G_N^\top)_{t \in T}` and its adjoint :math:`e \mapsto G_M^\top E G_N`, with E
    the sparse :math:`M_o × N_o` matrix holding e at T.
    """

    def __init__(
        self, rows: KernelBasis, cols: KernelBasis, row_local: IntArray, col_local: IntArray
    ) -> None:
        self.row_basis = rows.basis
        self.col_basis = cols.basis
        self.row_local = row_local
        self.col_local = col_local
        self.order = np.lexsort((col_local, row_local))
        self.indices = col_local[self.order]
        counts = np.bincount(row_local, minlength=rows.index.size)
        self.indptr = np.concatenate(([0], np.cumsum(counts)))
        self.shape = (rows.index.size, cols.index.size)
        self.norm_sq = self._norm_sq()

    def encode(self, values: FloatArray) -> tuple[FloatArray, float]:
        return values.astype(np.float64, copy=True), 0.0

    def forward(self, B: FloatArray) -> FloatArray:
        H = self.row_basis @ B
        out = np.empty(self.row_local.size)
        step = max(1, CHUNK // H.shape[1])
        for s in range(0, out.size, step):
            e = s + step
            out[s:e] = np.einsum("ij,ij->i", H[self.row_local[s:e]], self.col_basis[self.col_local[s:e]])
        return out

    at_observed = forward

    def adjoint(self, e: FloatArray) -> FloatArray:
        E = scipy.sparse.csr_array((e[self.order], self.indices, self.indptr), shape=self.shape)
        grad: FloatArray = self.row_basis.T @ (E @ self.col_basis)
        return grad

    def _norm_sq(self, n_iter: int = 15) -> float:
        """Squared operator norm by power iteration (the solver backtracks if it is underestimated)."""
        rng = np.random.default_rng(0)
        B = rng.standard_normal((self.row_basis.shape[1], self.col_basis.shape[1]))
        estimate = 0.0
        for _ in range(n_iter):
            B = B / np.linalg.norm(B)
            B = self.adjoint(self.forward(B))
            estimate = float(np.linalg.norm(B))
        return estimate


Sampling = GridSampling | ScatteredSampling


# ----------------------------------------------------------------------------------------- solver
@dataclass
class Solution:
    """Solver output: B, its thin SVD (nonzero singular values only), objective history, status."""

    coef: FloatArray
    left: FloatArray
    singular: FloatArray
    right_t: FloatArray
    objective: float
    history: list[float]
    n_iter: int
    converged: bool
    lipschitz: float


def _svd(Y: FloatArray, threshold: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Thin SVD of Y with the singular values shrunk by ``threshold``; zero ones dropped."""
    U, s, Vt = np.linalg.svd(Y, full_matrices=False)
    s = s - threshold
    k = int(np.count_nonzero(s > 0.0))
    return U[:, :k], s[:k], Vt[:k]


def gradient_at_zero(op: Sampling, data: FloatArray) -> FloatArray:
    """∇f(0) = -Aᵀ data: its spectral norm is the smallest trace weight with the zero solution."""
    return -op.adjoint(data)


def solve(
    op: Sampling,
    data: FloatArray,
    const: float,
    ridge: float,
    trace: float,
    start: FloatArray,
    *,
    max_iter: int,
    tol: float,
    lipschitz: float,
    callback: Callable[[FloatArray, float], None] | None = None,
) -> Solution:
    r"""Minimise :math:`F(B) = ½\|A B - d\|^2 + c + \frac{ρ}{2}\|B\|_F^2 + τ\|B\|_*` from ``start``.

    FISTA (Beck & Teboulle 2009) with singular-value thresholding as the proximal step, backtracking on
    the Lipschitz constant and function-value restart (O'Donoghue & Candès 2015): a step that would raise
    F is discarded and momentum restarts from the current iterate, where a plain proximal-gradient step
    cannot raise F. So the accepted iterates' objectives never increase, and the restart gives linear
    convergence when ρ > 0 (F is then ρ-strongly convex). Stops when the gradient mapping
    :math:`L\|y - \mathrm{prox}(y - ∇f(y)/L)\|_F` is at most ``tol`` times :math:`\|∇f(0)\|_F`.
    """
    scale = float(np.linalg.norm(gradient_at_zero(op, data)))

    def smooth(residual: FloatArray, B: FloatArray) -> float:
        return 0.5 * float(np.sum(residual * residual)) + 0.5 * ridge * float(np.sum(B * B))

    if scale == 0.0:  # ∇f(0) = 0: B = 0 is the minimiser
        x = np.zeros_like(start)
        left, right_t = np.zeros((x.shape[0], 0)), np.zeros((0, x.shape[1]))
        return Solution(x, left, np.zeros(0), right_t, const, [const], 0, True, lipschitz)
    x = start.copy()
    ax = op.forward(x)
    svd_x = _svd(x, 0.0) if trace > 0.0 else (x, np.zeros(0), x)
    Fx = smooth(ax - data, x) + const + trace * float(svd_x[1].sum())
    history = [Fx]
    y, ay, t, L = x, ax, 1.0, lipschitz
    restarted, converged, n_iter = True, False, 0
    while n_iter < max_iter:
        n_iter += 1
        residual = ay - data
        grad = op.adjoint(residual) + ridge * y
        fy = smooth(residual, y)
        while True:
            step = y - grad / L
            if trace > 0.0:
                svd_z = _svd(step, trace / L)
                z = (svd_z[0] * svd_z[1]) @ svd_z[2]
            else:
                z = step
            az = op.forward(z)
            d = z - y
            fz = smooth(az - data, z)
            if fz <= fy + float(np.sum(grad * d)) + 0.5 * L * float(np.sum(d * d)) + 1e-13 * abs(fy):
                break
            L *= 2.0
        nuclear = float(svd_z[1].sum()) if trace > 0.0 else 0.0
        Fz = fz + const + trace * nuclear
        gap = L * float(np.linalg.norm(d))
        # F(z) - F(x) from differences: near the optimum F(z) and F(x) agree to ~16 digits, and comparing
        # them directly would stop the solver at a relative error near sqrt(machine epsilon). From x itself
        # (after a restart, y = x) the expansion around x with ∇f(x) = grad is accurate to rounding in d.
        if restarted:
            change = (
                float(np.sum(grad * d))
                + 0.5 * float(np.sum((az - ay) ** 2))
                + 0.5 * ridge * float(np.sum(d * d))
            )
        else:
            dz = az - ax
            change = float(np.sum(dz * (0.5 * (az + ax) - data))) + ridge * float(
                np.sum((z - x) * (0.5 * (z + x)))
            )
        if trace > 0.0:
            change += trace * (nuclear - float(svd_x[1].sum()))
        if change > 0.0:
            if restarted:  # a proximal step from x itself: F can only have risen by rounding
                converged = True
                break
            y, ay, t, restarted = x, ax, 1.0, True
            continue
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        beta = (t - 1.0) / t_next
        y, ay = z + beta * (z - x), az + beta * (az - ax)
        x, ax, Fx, t, restarted = z, az, Fz, t_next, beta == 0.0
        if trace > 0.0:
            svd_x = svd_z
        history.append(Fx)
        if callback is not None:
            callback(x, Fx)
        if gap <= tol * scale:
            converged = True
            break
    if trace == 0.0:
        U, s, Vt = np.linalg.svd(x, full_matrices=False)
        k = int(np.count_nonzero(s > 1e-14 * max(float(s[0]), 1e-300)))
        svd_x = (U[:, :k], s[:k], Vt[:k])
    return Solution(x, svd_x[0], svd_x[1], svd_x[2], Fx, history, n_iter, converged, L)


# ------------------------------------------------------------------------------ posterior covariance
class GridCovariance:
    r"""Eq. (2) on grid observations, through the kernels' eigen-decompositions.

    :math:`K_T + σ^2 I = (U_N ⊗ U_M)(Λ_N ⊗ Λ_M + σ^2)(U_N ⊗ U_M)^\top`, so
    :math:`k_T(q)^\top (K_T + σ^2 I)^{-1} k_T(q') = \sum_{ij} a_{iq} a_{iq'} b_{jq} b_{jq'} / (λ_i ν_j + σ^2)`
    with :math:`a = U_M^\top K_M[I, m]`, :math:`b = U_N^\top K_N[J, n]`: O(M_o N_o) per query, no T × T
    matrix.
    """

    def __init__(self, rows: KernelBasis, cols: KernelBasis, noise_var: float) -> None:
        self.row_vectors = rows.vectors
        self.col_vectors = cols.vectors
        self.weights = 1.0 / (rows.values[:, None] * cols.values[None, :] + noise_var)

    def project_rows(self, k_rows: FloatArray) -> FloatArray:
        projected: FloatArray = self.row_vectors.T @ k_rows
        return projected

    def project_cols(self, k_cols: FloatArray) -> FloatArray:
        projected: FloatArray = self.col_vectors.T @ k_cols
        return projected

    def reduction_diag(self, a: FloatArray, b: FloatArray, ri: IntArray, ci: IntArray) -> FloatArray:
        out = np.empty(ri.size)
        step = max(1, CHUNK // max(a.shape[0], b.shape[0]))
        for s in range(0, ri.size, step):
            A, Bm = a[:, ri[s : s + step]], b[:, ci[s : s + step]]
            out[s : s + step] = np.sum(A * A * (self.weights @ (Bm * Bm)), axis=0)
        return out

    def reduction_full(self, a: FloatArray, b: FloatArray, ri: IntArray, ci: IntArray) -> FloatArray:
        root = np.sqrt(self.weights)
        V = (a[:, None, ri] * b[None, :, ci] * root[:, :, None]).reshape(-1, ri.size)
        gram: FloatArray = V.T @ V
        return gram


class ScatteredCovariance:
    r"""Eq. (2) on scattered observations, through the Cholesky factor of :math:`K_T + σ^2 I_T`.

    :math:`(K_T)_{tt'} = K_M[m_t, m_{t'}] K_N[n_t, n_{t'}]` (T × T: O(T³) time, 8·T² bytes).
    """

    def __init__(
        self, K_rows_obs: FloatArray, K_cols_obs: FloatArray, row_local: IntArray, col_local: IntArray,
        noise_var: float,
    ) -> None:  # fmt: skip
        K_T = K_rows_obs[np.ix_(row_local, row_local)] * K_cols_obs[np.ix_(col_local, col_local)]
        K_T[np.diag_indices_from(K_T)] += noise_var
        self.factor = scipy.linalg.cholesky(K_T, lower=True, overwrite_a=True)
        self.row_local = row_local
        self.col_local = col_local

    def project_rows(self, k_rows: FloatArray) -> FloatArray:
        return k_rows

    project_cols = project_rows

    def _whiten(self, a: FloatArray, b: FloatArray, ri: IntArray, ci: IntArray) -> FloatArray:
        k_T = a[self.row_local][:, ri] * b[self.col_local][:, ci]
        return np.asarray(scipy.linalg.solve_triangular(self.factor, k_T, lower=True))

    def reduction_diag(self, a: FloatArray, b: FloatArray, ri: IntArray, ci: IntArray) -> FloatArray:
        out = np.empty(ri.size)
        step = max(1, CHUNK // self.row_local.size)
        for s in range(0, ri.size, step):
            V = self._whiten(a, b, ri[s : s + step], ci[s : s + step])
            out[s : s + step] = np.sum(V * V, axis=0)
        return out

    def reduction_full(self, a: FloatArray, b: FloatArray, ri: IntArray, ci: IntArray) -> FloatArray:
        V = self._whiten(a, b, ri, ci)
        gram: FloatArray = V.T @ V
        return gram


Covariance = GridCovariance | ScatteredCovariance
