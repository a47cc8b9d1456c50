r"""Sparse GP predictive moments and their exact reverse-mode derivatives.

The two forms are those of Guiver & Snelson (SIGIR 2008).

Notation: ``X`` the N training inputs (rows), ``Xu`` the M prototypes (inducing inputs), ``K`` the
ARD + linear kernel of :mod:`._kernel`, σ² the noise variance, ``k_j = K(Xu, x_j)``.

* ``form="prototype"`` (GP-Rank, eq. 11): M virtual outputs ``y_u`` at the prototypes,
  ``A = K(Xu, Xu) + σ² I``;
  :math:`\bar s_j = k_j^\top A^{-1} y_u`, :math:`v_j = σ^2 + K(x_j, x_j) - k_j^\top A^{-1} k_j`.
* ``form="fitc"`` (FITC-Rank, eqs. 29–30): N virtual outputs ``y`` at the training inputs,
  :math:`Λ = \mathrm{diag}(K_{ff} - Q_{ff}) + σ^2 I` with :math:`Q_{ff} = K_{fu} K_{uu}^{-1} K_{uf}`,
  :math:`B = K_{uu} + K_{uf} Λ^{-1} K_{fu}`;
  :math:`\bar s_j = k_j^\top B^{-1} K_{uf} Λ^{-1} y`,
  :math:`v_j = σ^2 + K(x_j, x_j) - k_j^\top (K_{uu}^{-1} - B^{-1}) k_j`.

Both are :math:`\bar s_j = k_j^\top w` and :math:`v_j = σ^2 + K(x_j,x_j) - k_j^\top P k_j` with a weight
vector ``w`` and an M×M matrix ``P`` fixed after training (:func:`posterior`), so a prediction costs
O(M·D + M²) per document. During training the moments are taken at the training inputs themselves,
each treated as a new prediction location (the paper's ``j``), and every derivative — with respect to
the kernel hyper-parameters (in log space), the noise (log σ²), the prototypes and the virtual outputs —
is propagated backwards by matrix algebra: the paper's appendix (eqs. 14–34) organised as reverse-mode
differentiation, O(N·M² + N·M·D) per evaluation, no per-document Python loop.

``K_uu`` of the FITC form carries a jitter of ``1e-6`` times its mean diagonal, itself part of the
model (differentiated like the rest), so that a FITC model with prototypes at training inputs stays
factorisable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.linalg import cho_factor, cho_solve

from ._kernel import ard_linear, ard_linear_backward, ard_linear_diag, ard_linear_diag_backward

__all__ = ["FORMS", "GPState", "posterior", "predictive_moments", "training_moments"]

FORMS = ("fitc", "prototype")
FITC_JITTER = 1e-6

FloatArray = npt.NDArray[np.float64]


@dataclass
class GPState:
    """Free parameters of a sparse GP, positive ones as logarithms.

    ``outputs`` holds the virtual outputs: one per prototype (``form="prototype"``) or one per training
    document (``form="fitc"``).
    """

    log_amplitude: float
    log_lengthscale: FloatArray  # (D,)
    log_linear: FloatArray  # (D,)
    log_noise: float
    inducing: FloatArray  # (M, D)
    outputs: FloatArray  # (M,) or (N,)

    def pack(self) -> np.ndarray:
        """All parameters as one float64 vector (the optimiser's coordinates)."""
        return np.concatenate(
            (
                [self.log_amplitude],
                self.log_lengthscale,
                self.log_linear,
                [self.log_noise],
                self.inducing.ravel(),
                self.outputs,
            )
        )

    def unpack(self, theta: np.ndarray) -> GPState:
        """Return a state shaped like ``self`` holding the values of ``theta``."""
        D = self.log_lengthscale.size
        M = self.inducing.shape[0]
        cut = np.cumsum([1, D, D, 1, M * D])
        return GPState(
            float(theta[0]),
            theta[cut[0] : cut[1]].copy(),
            theta[cut[1] : cut[2]].copy(),
            float(theta[cut[2]]),
            theta[cut[3] : cut[4]].reshape(M, D).copy(),
            theta[cut[4] :].copy(),
        )

    def bounds(self) -> list[tuple[float | None, float | None]]:
        """Return the L-BFGS-B box for :meth:`pack`.

        Logs are kept where exp() neither overflows nor loses the matrices' positive definiteness;
        prototypes and outputs are free.
        """
        D = self.log_lengthscale.size
        free = self.inducing.size + self.outputs.size
        return (
            [(-20.0, 20.0)]
            + [(np.log(1e-3), np.log(1e4))] * D
            + [(-40.0, 10.0)] * D
            + [(np.log(1e-6), 20.0)]
            + [(None, None)] * free
        )

    def rescaled(self, factor: float) -> GPState:
        """Return the same model in output units multiplied by ``factor`` > 0.

        The kernel (amplitude and linear weights), the noise and the FITC jitter scale by factor², the
        virtual outputs by factor, so the predictive mean scales by factor and the variance by factor²
        (prototypes and lengthscales stay).
        """
        log_f2 = 2.0 * float(np.log(factor))
        return GPState(
            self.log_amplitude + log_f2, self.log_lengthscale.copy(), self.log_linear + log_f2,
            self.log_noise + log_f2, self.inducing.copy(), self.outputs * factor,
        )  # fmt: skip

    @property
    def amplitude(self) -> float:
        return float(np.exp(self.log_amplitude))

    @property
    def lengthscale(self) -> np.ndarray:
        return np.exp(self.log_lengthscale)

    @property
    def linear(self) -> np.ndarray:
        return np.exp(self.log_linear)

    @property
    def noise(self) -> float:
        return float(np.exp(self.log_noise))


Backward = Callable[[np.ndarray, np.ndarray], np.ndarray]


def training_moments(form: str, state: GPState, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, Backward]:
    """Predictive mean and variance at the training inputs ``X`` and the backward function.

    ``backward(g_mean, g_var)`` returns the gradient of ``sum(g_mean * mean + g_var * var)`` with
    respect to ``state.pack()`` — chain it with dJ/dmean and dJ/dvar of any objective J.
    """
    if form == "prototype":
        return _prototype_moments(state, X)
    return _fitc_moments(state, X)


def _kernel_matrices(
    state: GPState, X: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``K_uu``, its ARD part ``R_uu``, ``K_uf``, ``R_uf`` and ``diag K_ff``."""
    c, lengthscale, linear = state.amplitude, state.lengthscale, state.linear
    Xu = state.inducing
    Kuu, Ruu = ard_linear(Xu, Xu, c, lengthscale, linear)
    Kuf, Ruf = ard_linear(Xu, X, c, lengthscale, linear)
    return Kuu, Ruu, Kuf, Ruf, ard_linear_diag(X, c, linear)


def _kernel_backward(
    state: GPState,
    X: np.ndarray,
    G_uu: np.ndarray,
    Ruu: np.ndarray,
    G_uf: np.ndarray,
    Ruf: np.ndarray,
    g_diag: np.ndarray,
    g_diag_u: np.ndarray | None,
    g_log_noise: float,
    g_outputs: np.ndarray,
) -> np.ndarray:
    """Collect dJ/dK_uu, dJ/dK_uf, dJ/ddiag K_ff (and dJ/ddiag K_uu) into the packed parameter gradient."""
    c, lengthscale, linear = state.amplitude, state.lengthscale, state.linear
    Xu = state.inducing
    G_sym = 0.5 * (G_uu + G_uu.T)
    a_uu, l_uu, e_uu, x_uu = ard_linear_backward(G_sym, Xu, Xu, Ruu, lengthscale, linear)
    a_uf, l_uf, e_uf, x_uf = ard_linear_backward(G_uf, Xu, X, Ruf, lengthscale, linear)
    a_d, e_d = ard_linear_diag_backward(g_diag, X, c, linear)
    g_inducing = 2.0 * x_uu + x_uf
    g_amp = a_uu + a_uf + a_d
    g_lin = e_uu + e_uf + e_d
    if g_diag_u is not None:
        a_du, e_du = ard_linear_diag_backward(g_diag_u, Xu, c, linear)
        g_amp += a_du
        g_lin = g_lin + e_du
        g_inducing = g_inducing + 2.0 * g_diag_u[:, None] * Xu * linear
    return np.concatenate(([g_amp], l_uu + l_uf, g_lin, [g_log_noise], g_inducing.ravel(), g_outputs))


def _prototype_moments(state: GPState, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, Backward]:
    s2 = state.noise
    y_u = state.outputs
    Kuu, Ruu, Kuf, Ruf, kdiag = _kernel_matrices(state, X)
    A = cho_factor(Kuu + s2 * np.eye(Kuu.shape[0]))
    w = cho_solve(A, y_u)
    C = cho_solve(A, Kuf)  # A^{-1} k_j for every j
    mean = Kuf.T @ w
    var = s2 + kdiag - (Kuf * C).sum(0)

    def backward(g_mean: np.ndarray, g_var: np.ndarray) -> np.ndarray:
        Cg = C * g_var
        G_uf = np.outer(w, g_mean) - 2.0 * Cg
        b = cho_solve(A, Kuf @ g_mean)  # dJ/dy_u
        G_A = Cg @ C.T - np.outer(b, w)  # d(k^T A^-1 k) and d(A^-1 y) with respect to A
        g_log_noise = s2 * (np.trace(G_A) + g_var.sum())
        return _kernel_backward(state, X, G_A, Ruu, G_uf, Ruf, g_var, None, g_log_noise, b)

    return mean, var, backward


def _fitc_moments(state: GPState, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, Backward]:
    s2 = state.noise
    y = state.outputs
    M = state.inducing.shape[0]
    Kuu, Ruu, Kuf, Ruf, kdiag = _kernel_matrices(state, X)
    jitter = FITC_JITTER * np.trace(Kuu) / M
    Luu = cho_factor(Kuu + jitter * np.eye(M))
    P = cho_solve(Luu, Kuf)  # K_uu^{-1} k_j
    q = (Kuf * P).sum(0)  # diag Q_ff
    lam = kdiag - q + s2
    Kl = Kuf / lam
    LB = cho_factor(Kuu + jitter * np.eye(M) + Kl @ Kuf.T)
    y_lam = y / lam
    w = cho_solve(LB, Kuf @ y_lam)
    R = cho_solve(LB, Kuf)  # B^{-1} k_j
    mean = Kuf.T @ w
    var = s2 + kdiag - q + (Kuf * R).sum(0)

    def backward(g_mean: np.ndarray, g_var: np.ndarray) -> np.ndarray:
        # the prediction locations j (the training inputs again): mean_j = k_j^T w, var_j as above
        G_uf = np.outer(w, g_mean) + 2.0 * (R - P) * g_var
        G_uu = (P * g_var) @ P.T  # from -k^T K_uu^{-1} k
        G_B = -(R * g_var) @ R.T  # from +k^T B^{-1} k
        g_diag = g_var.copy()
        g_log_noise = g_var.sum()
        # w = B^{-1} K_uf Λ^{-1} y
        h = cho_solve(LB, Kuf @ g_mean)
        G_B -= np.outer(h, w)
        Kh = Kuf.T @ h
        G_uf += np.outer(h, y_lam)
        g_outputs = Kh / lam
        g_lam = -Kh * y_lam / lam
        # B = K_uu + K_uf Λ^{-1} K_fu
        G_uu += G_B
        G_uf += (G_B + G_B.T) @ Kl
        g_lam -= (Kuf * (G_B @ Kuf)).sum(0) / (lam * lam)
        # Λ = diag K_ff - diag Q_ff + σ², diag Q_ff = sum_u K_uf * K_uu^{-1} K_uf
        g_diag += g_lam
        g_log_noise += g_lam.sum()
        G_uf -= 2.0 * P * g_lam
        G_uu += (P * g_lam) @ P.T
        # the jitter (FITC_JITTER * mean diag K_uu) I, a function of the diagonal of K_uu
        g_diag_u = np.full(M, FITC_JITTER * np.trace(G_uu) / M)
        return _kernel_backward(state, X, G_uu, Ruu, G_uf, Ruf, g_diag, g_diag_u, s2 * g_log_noise, g_outputs)

    return mean, var, backward


def posterior(form: str, state: GPState, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Return ``(w, P)`` of the predictive moments, from the state and the training inputs.

    The moments are :math:`\bar s = k^\top w`, :math:`v = σ^2 + K(x,x) - k^\top P k`.
    """
    s2 = state.noise
    Kuu, _, Kuf, _, kdiag = _kernel_matrices(state, X)
    M = Kuu.shape[0]
    eye = np.eye(M)
    if form == "prototype":
        A = cho_factor(Kuu + s2 * eye)
        return cho_solve(A, state.outputs), cho_solve(A, eye)
    Kuu = Kuu + FITC_JITTER * np.trace(Kuu) / M * eye
    q = (Kuf * cho_solve(cho_factor(Kuu), Kuf)).sum(0)
    lam = kdiag - q + s2
    LB = cho_factor(Kuu + (Kuf / lam) @ Kuf.T)
    P = cho_solve(cho_factor(Kuu), eye) - cho_solve(LB, eye)
    return cho_solve(LB, Kuf @ (state.outputs / lam)), 0.5 * (P + P.T)


def predictive_moments(
    state: GPState, weights: np.ndarray, P: np.ndarray, X: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Predictive mean and variance (noise included) at new inputs ``X``: O(M·D + M²) per row."""
    K, _ = ard_linear(X, state.inducing, state.amplitude, state.lengthscale, state.linear)
    var = state.noise + ard_linear_diag(X, state.amplitude, state.linear) - ((K @ P) * K).sum(1)
    return K @ weights, var
