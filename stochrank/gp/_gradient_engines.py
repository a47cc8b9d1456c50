r"""Exact and inducing-point inference for Gaussian-process gradient learning (GPGL).

Model (working coordinates of dimension d, n data points): the gradients
:math:`f = (f_a(x_i))` have the prior :math:`\mathcal N(0, K_{ff} \otimes K_{XX})` with
:math:`K_{ff} = \mathrm{diag}(a_1..a_d)` and the unit RBF :math:`K_{XX}` of lengthscale ell; the Taylor pairs
(:mod:`._taylor`) give the Gaussian pseudo-likelihood
:math:`\exp(-\tfrac1{2τ^2}\sum_{ij} w_{ij}(z_{ij} - f_i^\top u_{ij})^2)`. With :math:`B_i = V_i Λ_i V_i^\top`
(positive eigenvalues only, :math:`k_i` of them) put :math:`C_i = V_i Λ_i^{1/2}` and
:math:`β_i = Λ_i^{-1/2} V_i^\top b_i`; then :math:`\sum_i f_i^\top B_i f_i - 2 b_i^\top f_i
= \lVert β - C^\top f\rVert^2 - \lVert β\rVert^2`, so the pairs are the :math:`n_k = \sum_i k_i`
pseudo-observations :math:`β = C^\top f + \mathcal N(0, τ^2 I)` and, with :math:`R = z^\top W z - \lVert β
\rVert^2` (the residual no gradient field can explain),

.. math::
    \log p = -\tfrac{c - n_k}2 \log(2πτ^2) + κ - \tfrac{R}{2τ^2} + \log\mathcal N(β; 0, K_β),
    \qquad K_β = (C^\top K_{ff} C) \odot (K_{XX})_{\mathrm{pt},\mathrm{pt}} + τ^2 I .

``count`` c and the constant κ select the likelihood: the seed's density of all :math:`c = n(n-1)` pair
differences with variances :math:`τ^2/w_{ij}` (κ = ½ Σ log w), or ``"local"`` with :math:`c = n_k`, κ = 0.

* :class:`ExactEngine` works in the :math:`n_k`-dimensional β space: :math:`K_β` is assembled from the
  Kronecker factors by a Hadamard product in O(d·n_k²) (never the (nd)² prior), factorised in
  O(n_k³) ≤ O(d³n³); gradients in O(n_k³ + d·n_k²).
* :class:`InducingEngine` restricts each :math:`f_a` to the span of r inducing inputs Z
  (:math:`f_a = s_a Φ v_a`, :math:`Φ = K_{XZ} L_Z^{-\top}`, :math:`v \sim \mathcal N(0, I_{dr})`,
  :math:`s_a = \sqrt{a_a}`); with :math:`M = \sum_i B_i \otimes φ_iφ_i^\top`, :math:`P = S M S`,
  :math:`q = S\,\mathrm{vec}(Φ^\top b)`, :math:`A = I + P/τ^2`, :math:`μ = A^{-1}q/τ^2`:
  :math:`\log p = -\tfrac c2\log(2πτ^2) + κ - \tfrac{z^\top Wz}{2τ^2} - \tfrac12\log|A|
  + \tfrac{μ^\top q}{2τ^2}`, O(n d² r² + (dr)³) per evaluation. With Z = X it equals the exact model
  (the tests check it).
Predictions at new points are DTC: the prior variance outside the inducing span is added back.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
from scipy.linalg import cho_factor, cho_solve, solve_triangular
from scipy.linalg.lapack import dpotri

from ._taylor import PairStats, rbf, sq_distances

Array = npt.NDArray[np.float64]

__all__ = ["ExactEngine", "InducingEngine"]

LOG_2PI = float(np.log(2.0 * np.pi))
JITTER = 1e-8  # relative to the unit kernel diagonal: keeps K_ZZ factorisable when inducing inputs repeat
_SAMPLE_CHUNK = 64


def unpack(theta: Array, d: int) -> tuple[float, Array, float]:
    """(ell, amplitudes (d,), τ²) from ``[log ell, log a (1 or d), log τ²]``."""
    amp = np.exp(theta[1:-1])
    return float(np.exp(theta[0])), (np.full(d, amp[0]) if amp.size == 1 else amp), float(np.exp(theta[-1]))


def _inverse_from_cholesky(L: Array) -> Array:
    """Return A⁻¹ from the lower Cholesky factor of A (LAPACK potri: a third of two triangular solves)."""
    inv, info = dpotri(L, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"potri failed with info={info}")
    return np.asarray(np.tril(inv) + np.tril(inv, -1).T, dtype=np.float64)


def _fold_amplitude(g_amp: Array, n_amp: int) -> Array:
    return np.array([g_amp.sum()]) if n_amp == 1 else g_amp


class _Engine:
    """Shared pieces: the data, the pair statistics and the likelihood's count and constant."""

    def __init__(self, T: Array, stats: PairStats, likelihood: str) -> None:
        self.T = T
        self.n, self.d = T.shape
        self.stats = stats
        self.n_k = stats.n_informative
        if likelihood == "seed":
            self.count, self.const = float(stats.n_pairs), 0.5 * stats.log_det_w
        else:
            self.count, self.const = float(self.n_k), 0.0

    def release(self) -> None:
        """Drop the arrays only training and sampling need, so that a fitted estimator pickles small.

        The O(n d²) pair statistics and the distance matrices go; predictions keep working.
        """
        for name in self._training_only:
            setattr(self, name, None)

    _training_only: tuple[str, ...] = ()

    def sample_at_data(
        self, n_samples: int, rng: np.random.Generator
    ) -> Iterator[tuple[Array, Array | None]]:
        """Yield posterior draws of the gradients at the data in chunks (S, n, d).

        With each chunk come the variances (n, d) of an independent per-point residual left out of the
        draws (None: the draws are complete).
        """
        raise NotImplementedError


class ExactEngine(_Engine):
    """Exact GPGL in the space of the :math:`n_k` whitened pseudo-observations β."""

    _training_only = ("stats", "D2", "D2p", "beta")

    def __init__(self, T: Array, stats: PairStats, likelihood: str) -> None:
        super().__init__(T, stats, likelihood)
        lam, vec = np.linalg.eigh(stats.B)
        cols, owners, betas = [], [], []
        for i in range(self.n):
            keep = (
                np.arange(self.d) >= self.d - stats.rank[i]
            )  # eigh sorts ascending; rank from pair_statistics
            root = np.sqrt(lam[i, keep])
            cols.append(vec[i][:, keep] * root)
            owners.append(np.full(root.size, i))
            betas.append((vec[i][:, keep].T @ stats.b[i]) / root)
        self.C = np.hstack(cols) if cols else np.zeros((self.d, 0))
        self.pt = np.concatenate(owners).astype(np.int64)
        self.beta = np.concatenate(betas)
        self.R = max(stats.zWz - float(self.beta @ self.beta), 0.0)
        self.D2 = sq_distances(T, T)
        self.D2p = self.D2[np.ix_(self.pt, self.pt)]

    def _K_beta(self, ell: float, amp: Array, tau2: float) -> tuple[Array, Array, Array]:
        Kp = np.exp(-self.D2p / (2.0 * ell * ell))
        CaC = (self.C * amp[:, None]).T @ self.C
        Kb = Kp * CaC
        Kb[np.diag_indices_from(Kb)] += tau2
        return Kb, Kp, CaC

    def objective(self, theta: Array, with_grad: bool = True) -> tuple[float, Array]:
        """Log marginal likelihood and (unless ``with_grad=False``: empty) its gradient in ``theta``."""
        ell, amp, tau2 = unpack(theta, self.d)
        Kb, Kp, CaC = self._K_beta(ell, amp, tau2)
        factor = cho_factor(Kb, lower=True)
        alpha = cho_solve(factor, self.beta)
        value = self._value(factor[0], alpha, tau2)
        if not with_grad:
            return float(value), np.empty(0)
        Q = np.outer(alpha, alpha) - _inverse_from_cholesky(np.tril(factor[0]))
        QK = Q * Kp
        g_ell = 0.5 * float((QK * CaC * self.D2p).sum()) / (ell * ell)
        g_amp = 0.5 * amp * ((self.C @ QK) * self.C).sum(1)
        g_tau = -0.5 * (self.count - self.n_k) + self.R / (2.0 * tau2) + 0.5 * tau2 * float(np.trace(Q))
        grad = np.concatenate(([g_ell], _fold_amplitude(g_amp, theta.size - 2), [g_tau]))
        return float(value), grad

    def _value(self, L: Array, alpha: Array, tau2: float) -> float:
        log_det = 2.0 * float(np.log(np.diag(L)).sum())
        return float(
            -0.5 * (self.count - self.n_k) * (LOG_2PI + np.log(tau2)) + self.const - self.R / (2.0 * tau2)
            - 0.5 * (self.n_k * LOG_2PI + log_det + float(self.beta @ alpha))
        )  # fmt: skip

    def condition(self, theta: Array) -> float:
        """Fix the hyper-parameters, factorise the posterior and return the log marginal likelihood."""
        self.ell, self.amp, self.tau2 = unpack(theta, self.d)
        self.factor = cho_factor(self._K_beta(self.ell, self.amp, self.tau2)[0], lower=True)
        alpha = cho_solve(self.factor, self.beta)
        self.G = np.zeros((self.n, self.d))
        np.add.at(
            self.G, self.pt, (self.C * alpha).T
        )  # G_i = C_i alpha_i: mean f_a(x) = a_a Σ_i k(x, x_i) G_ia
        return self._value(self.factor[0], alpha, self.tau2)

    def representer(self) -> tuple[Array, Array]:
        """Points and coefficients of the posterior mean: f_a(x) = Σ_z k(x, z) coef[z, a]."""
        return self.T, self.G * self.amp

    def mean(self, Tq: Array) -> Array:
        """Posterior mean gradients (nq, d) at the rows of ``Tq``."""
        return (rbf(Tq, self.T, self.ell) @ self.G) * self.amp

    def _whitened_cross(self, Kq: Array) -> list[Array]:
        """L⁻¹ Cov(β, f_a(x_q)) for every coordinate a: d arrays of shape (n_k, nq)."""
        L = np.tril(self.factor[0])
        Kp = Kq[:, self.pt]
        return [solve_triangular(L, (Kp * (self.amp[a] * self.C[a])).T, lower=True) for a in range(self.d)]

    def covariance(self, Tq: Array, full: bool) -> Array:
        """Return the posterior covariance of the gradient at each row: (nq, d, d), or (nq, d) variances."""
        S = self._whitened_cross(rbf(Tq, self.T, self.ell))
        if not full:
            return np.stack([self.amp[a] - (S[a] * S[a]).sum(0) for a in range(self.d)], axis=1)
        cov = np.empty((Tq.shape[0], self.d, self.d))
        for a in range(self.d):
            for b in range(a, self.d):
                cov[:, a, b] = cov[:, b, a] = (a == b) * self.amp[a] - (S[a] * S[b]).sum(0)
        return cov

    def sample_at_data(
        self, n_samples: int, rng: np.random.Generator
    ) -> Iterator[tuple[Array, Array | None]]:
        """Joint posterior draws over all n·d gradient values at the data."""
        K = rbf(self.T, self.T, self.ell)
        S = np.stack(self._whitened_cross(K))  # (d, n_k, n)
        flat = S.transpose(1, 0, 2).reshape(self.n_k, self.d * self.n)  # columns ordered (a, i)
        cov = np.kron(np.diag(self.amp), K) - flat.T @ flat
        cov[np.diag_indices_from(cov)] += JITTER * float(self.amp.max())
        L = np.linalg.cholesky(cov)
        mean = self.mean(self.T).T.reshape(-1)  # (a, i) order
        for start in range(0, n_samples, _SAMPLE_CHUNK):
            m = min(_SAMPLE_CHUNK, n_samples - start)
            draws = mean[None, :] + rng.standard_normal((m, mean.size)) @ L.T
            yield draws.reshape(m, self.d, self.n).transpose(0, 2, 1), None


class InducingEngine(_Engine):
    """GPGL with every coordinate of the gradient field in the span of r inducing inputs (SoR/DTC)."""

    _training_only = ("stats", "Bflat", "Dxz", "Phi", "T")

    def __init__(self, T: Array, stats: PairStats, likelihood: str, Z: Array) -> None:
        super().__init__(T, stats, likelihood)
        self.Z = Z
        self.r = Z.shape[0]
        self.Dxz = sq_distances(T, Z)
        self.Dzz = sq_distances(Z, Z)
        self.Bflat = stats.B.reshape(self.n, self.d * self.d)

    def _kron_gram(self, P1: Array, P2: Array) -> Array:
        """Σ_i B_i ⊗ p1_i p2_iᵀ as a (d r, d r) matrix with (coordinate, basis) blocks."""
        r, d = self.r, self.d
        out = np.zeros((d * d, r * r))
        step = max(1, 4_000_000 // (r * r))
        for s in range(0, self.n, step):
            outer = (P1[s : s + step, :, None] * P2[s : s + step, None, :]).reshape(-1, r * r)
            out += self.Bflat[s : s + step].T @ outer
        return np.asarray(out.reshape(d, d, r, r).transpose(0, 2, 1, 3).reshape(d * r, d * r))

    def _basis(self, ell: float) -> tuple[Array, Array, Array, Array]:
        Kxz: Array = np.exp(-self.Dxz / (2.0 * ell * ell))
        Kzz: Array = np.exp(-self.Dzz / (2.0 * ell * ell))
        Lz = np.asarray(np.linalg.cholesky(Kzz + JITTER * np.eye(self.r)), dtype=np.float64)
        Phi = np.asarray(solve_triangular(Lz, Kxz.T, lower=True).T, dtype=np.float64)
        return Kxz, Kzz, Lz, Phi

    def _posterior(self, amp: Array, tau2: float, M: Array, Phi: Array) -> tuple[Array, Array, Array, Array]:
        srep = np.repeat(np.sqrt(amp), self.r)
        P = M * np.outer(srep, srep)
        q = srep * (Phi.T @ self.stats.b).T.reshape(-1)
        A = P / tau2
        A[np.diag_indices_from(A)] += 1.0
        LA = np.asarray(np.linalg.cholesky(A), dtype=np.float64)
        mu = np.asarray(cho_solve((LA, True), q), dtype=np.float64) / tau2
        return P, q, LA, mu

    def objective(self, theta: Array, with_grad: bool = True) -> tuple[float, Array]:
        """Log marginal likelihood of the inducing model and (unless ``with_grad=False``) its gradient."""
        ell, amp, tau2 = unpack(theta, self.d)
        Kxz, Kzz, Lz, Phi = self._basis(ell)
        M = self._kron_gram(Phi, Phi)
        P, q, LA, mu = self._posterior(amp, tau2, M, Phi)
        mq = float(mu @ q)
        value = self._value(LA, mq, tau2)
        if not with_grad:
            return float(value), np.empty(0)
        Ainv = _inverse_from_cholesky(LA)
        Y = Ainv + np.outer(mu, mu)
        YP = Y * P
        d, r = self.d, self.r
        row_blocks = YP.reshape(d, r, d * r).sum((1, 2))
        g_amp = 0.5 * ((mu * q).reshape(d, r).sum(1) - row_blocks) / tau2
        g_tau = (
            -0.5 * self.count + (self.stats.zWz + float(np.sum(Ainv * P)) - 2.0 * mq + float(mu @ P @ mu))
            / (2.0 * tau2)
        )  # fmt: skip
        # d/d log ell: dΦ = dK_xz L_z^{-T} - ½ Φ L_z^{-1} dK_zz L_z^{-T} (a valid choice: the likelihood
        # depends on Φ only through ΦΦᵀ)
        dKxz = Kxz * self.Dxz / (ell * ell)
        Xi = solve_triangular(
            Lz, solve_triangular(Lz, Kzz * self.Dzz / (ell * ell), lower=True).T, lower=True
        )
        dPhi = solve_triangular(Lz, dKxz.T, lower=True).T - 0.5 * Phi @ Xi
        srep = np.repeat(np.sqrt(amp), r)
        dq = srep * (dPhi.T @ self.stats.b).T.reshape(-1)
        dM_half = self._kron_gram(dPhi, Phi)
        tr_Y_dP = 2.0 * float(np.sum(Y * np.outer(srep, srep) * dM_half))
        g_ell = (float(mu @ dq) - 0.5 * tr_Y_dP) / tau2
        grad = np.concatenate(([g_ell], _fold_amplitude(g_amp, theta.size - 2), [g_tau]))
        return float(value), grad

    def _value(self, LA: Array, mq: float, tau2: float) -> float:
        log_det_A = 2.0 * float(np.log(np.diag(LA)).sum())
        return float(
            -0.5 * self.count * (LOG_2PI + np.log(tau2)) + self.const - self.stats.zWz / (2.0 * tau2)
            - 0.5 * log_det_A + 0.5 * mq / tau2
        )  # fmt: skip

    def condition(self, theta: Array) -> float:
        """Fix the hyper-parameters, factorise the inducing posterior, return the log marginal likelihood."""
        self.ell, self.amp, self.tau2 = unpack(theta, self.d)
        _, _, self.Lz, self.Phi = self._basis(self.ell)
        _, q, self.LA, mu = self._posterior(
            self.amp, self.tau2, self._kron_gram(self.Phi, self.Phi), self.Phi
        )
        self.W = mu.reshape(self.d, self.r).T * np.sqrt(self.amp)  # f_a(x) = φ(x)ᵀ W[:, a]
        self.Ainv = _inverse_from_cholesky(self.LA)
        return self._value(self.LA, float(mu @ q), self.tau2)

    def _phi(self, Tq: Array) -> Array:
        return np.asarray(
            solve_triangular(self.Lz, rbf(Tq, self.Z, self.ell).T, lower=True).T, dtype=np.float64
        )

    def representer(self) -> tuple[Array, Array]:
        """Points and coefficients of the posterior mean: f_a(x) = Σ_z k(x, z) coef[z, a]."""
        return self.Z, solve_triangular(self.Lz.T, self.W, lower=False)

    def mean(self, Tq: Array) -> Array:
        """Posterior mean gradients (nq, d) at the rows of ``Tq``."""
        return np.asarray(self._phi(Tq) @ self.W, dtype=np.float64)

    def covariance(self, Tq: Array, full: bool) -> Array:
        """DTC posterior covariance (nq, d, d), or (nq, d) variances if not ``full``."""
        phi = self._phi(Tq)
        resid = np.maximum(1.0 - (phi * phi).sum(1), 0.0)
        s = np.sqrt(self.amp)
        r, d = self.r, self.d

        def block(a: int, b: int) -> Array:  # s_a s_b φᵀ (A⁻¹)_ab φ for every row
            block_ab = self.Ainv[a * r : (a + 1) * r, b * r : (b + 1) * r]
            return np.asarray(s[a] * s[b] * ((phi @ block_ab) * phi).sum(1), dtype=np.float64)

        if not full:
            return np.stack([resid * self.amp[a] + block(a, a) for a in range(d)], axis=1)
        cov = np.empty((Tq.shape[0], d, d))
        for a in range(d):
            cov[:, a, a] = resid * self.amp[a] + block(a, a)
            for b in range(a + 1, d):
                cov[:, a, b] = cov[:, b, a] = block(a, b)
        return cov

    def sample_at_data(
        self, n_samples: int, rng: np.random.Generator
    ) -> Iterator[tuple[Array, Array | None]]:
        """Yield draws of the inducing weights mapped to the data.

        The DTC residual (independent across points and coordinates, variance a_a(1 - |φ_i|²)) is returned
        as variances, not drawn.
        """
        resid_var = np.maximum(1.0 - (self.Phi * self.Phi).sum(1), 0.0)[:, None] * self.amp
        s = np.sqrt(self.amp)
        for start in range(0, n_samples, _SAMPLE_CHUNK):
            m = min(_SAMPLE_CHUNK, n_samples - start)
            v = solve_triangular(self.LA.T, rng.standard_normal((self.d * self.r, m)), lower=False)
            weights = self.W + v.T.reshape(m, self.d, self.r).transpose(0, 2, 1) * s  # (m, r, d)
            yield np.matmul(self.Phi, weights), resid_var
