r"""The ARD + linear covariance of the GP-Rank paper and its reverse-mode derivatives.

Guiver & Snelson, SIGIR 2008, eq. 8:

.. math::
    K(\mathbf a, \mathbf b) = c \exp\Big(-\tfrac12 \sum_d \frac{(a_d - b_d)^2}{\lambda_d^2}\Big)
        + \sum_d \eta_d\, a_d b_d

Every derivative is returned with respect to the logarithm of the positive hyper-parameter
(``log c``, ``log lambda_d``, ``log eta_d``), the coordinates the optimiser works in. The backward
functions take the gradient ``G`` of a scalar objective with respect to a kernel matrix and contract
it with the kernel's partial derivatives using matrix products only (cost O(M·S·D) for an M×S matrix).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["ard_linear", "ard_linear_backward", "ard_linear_diag", "ard_linear_diag_backward"]

_EXPONENT_FLOOR = -600.0


def ard_linear(
    Xa: np.ndarray, Xb: np.ndarray, amplitude: float, lengthscale: np.ndarray, linear: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Cross-covariance ``K(Xa, Xb)`` and its ARD part ``R`` (kept for the backward pass)."""
    A = Xa / lengthscale
    B = Xb / lengthscale
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)
    np.maximum(sq, 0.0, out=sq)  # the expansion can round a zero distance to a tiny negative
    # c·exp(-sq/2) as one exponential, set to 0 below e^-600: subnormal floats (a small amplitude times a
    # small exponential) would slow every later product a hundredfold, for terms below 1e-260
    exponent = np.log(amplitude) - 0.5 * sq
    R = np.exp(exponent, where=exponent > _EXPONENT_FLOOR, out=np.zeros_like(sq))
    return R + (Xa * linear) @ Xb.T, R


def ard_linear_diag(
    X: npt.NDArray[np.float64], amplitude: float, linear: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """``K(x, x) = c + sum_d eta_d x_d^2`` for every row of ``X``."""
    return amplitude + (X * X) @ linear


def ard_linear_backward(
    G: np.ndarray, Xa: np.ndarray, Xb: np.ndarray, R: np.ndarray, lengthscale: np.ndarray, linear: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    r"""Return the gradient of :math:`\sum_{ij} G_{ij} K(a_i, b_j)` in the log parameters and ``Xa``.

    The parameters are ``log c``, ``log lambda``, ``log eta`` and the first argument ``Xa`` (``Xb`` is
    held fixed).

    For a symmetric use ``K(Xu, Xu)`` pass the symmetrised ``(G + G.T) / 2`` and double the ``Xa``
    gradient: each prototype enters both arguments.
    """
    W = G * R
    w_a = W.sum(1)
    WXb = W @ Xb
    GXb = G @ Xb
    inv_l2 = 1.0 / (lengthscale * lengthscale)
    # sum_ij W_ij (a_id - b_jd)^2, expanded so that it is three matrix products
    sq_dist = w_a @ (Xa * Xa) + W.sum(0) @ (Xb * Xb) - 2.0 * (Xa * WXb).sum(0)
    g_log_amplitude = float(W.sum())
    g_log_lengthscale = sq_dist * inv_l2
    g_log_linear = linear * (Xa * GXb).sum(0)
    g_Xa = (WXb - Xa * w_a[:, None]) * inv_l2 + GXb * linear
    return g_log_amplitude, g_log_lengthscale, g_log_linear, g_Xa


def ard_linear_diag_backward(
    g: np.ndarray, X: np.ndarray, amplitude: float, linear: np.ndarray
) -> tuple[float, np.ndarray]:
    """Gradient of ``sum_j g_j K(x_j, x_j)`` with respect to ``log c`` and ``log eta``."""
    return float(amplitude * g.sum()), linear * (g @ (X * X))
