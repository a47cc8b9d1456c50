r"""The preference GP's EP evidence :math:`\log Z_{EP}`, its exact gradient and the predictive weights.

Both EP formulations, both covariance forms.
Duel i (winner :math:`w_i`, loser :math:`l_i`) observes :math:`v_i = f(x_{l_i}) + \epsilon_{l,i} - f(x_{w_i})
- \epsilon_{w,i} < 0`. With the RBF kernel :math:`k(x, x') = s\exp(-\sum_d (x_d - x'_d)^2/(2\ell_d^2))`,
the difference operator A (row i: +1 at :math:`l_i`, -1 at :math:`w_i`) and documents ``X``:

* ``ep-truncated``: EP variable v, :math:`\Sigma_0 = A K A^\top + 2\sigma^2 I`, indicator sites;
* ``ep-probit``: EP variable :math:`z = A f`, :math:`\Sigma_0 = A K A^\top`, sites
  :math:`\Phi(-z_i/(\sqrt2\sigma))`.

Exact form: dense :math:`\Sigma_0`. Sparse form (FITC in the duel space, m inducing inputs :math:`X_u`):
:math:`\Sigma_0 \approx Q + \mathrm{diag}(\Sigma_0 - Q)`, :math:`Q = K_{vu}K_{uu}^{-1}K_{uv}`,
:math:`K_{vu} = A K_{fu}`, i.e. the duels are conditionally independent given :math:`f(X_u)`.

At an EP fixed point the derivative of :math:`\log Z_{EP}` through the sites vanishes, so
:math:`\partial\log Z_{EP}/\partial\theta = \mathrm{tr}(G\,\partial\Sigma_0/\partial\theta)` with
:math:`G = \frac12(bb^\top - C)`, :math:`C = (\Sigma_0 + \tilde S^{-1})^{-1}`, :math:`b = C\tilde\mu`
(Rasmussen & Williams eq. 5.27), plus, for ``ep-probit``, the explicit
:math:`\sum_i \partial\log\Phi(\beta_i)/\partial\sigma` of the sites' own noise. Parameters are
:math:`\theta = (\log\ell, \log s, \log\sigma)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import LinAlgError, cho_solve, solve_triangular
from scipy.optimize import minimize
from sklearn.utils.validation import check_random_state

from ._ep import (
    Array,
    DensePrior,
    EPResult,
    LowRankPrior,
    jittered_cholesky,
    lowrank_sensitivities,
    run_ep,
    truncation_moments,
)
from ._kernel import ard_linear, ard_linear_backward
from ._pairs import IntArray

__all__ = ["BASE_JITTER", "Duels", "Evidence", "choose_inducing", "evaluate", "maximise_evidence"]

# K_uu carries s * 1e-8 on its diagonal as part of the sparse model (differentiated with the rest), so
# that inducing points a few lengthscales apart still factorise; proportional to s, it keeps log Z_EP
# invariant under (s, σ) -> (c² s, c σ).
BASE_JITTER = 1e-8
# L-BFGS-B box, relative to the feature spread (lengthscales) and to σ² (the kernel variance): wide
# enough never to bind on sensible data, narrow enough that exp() and the Cholesky factors stay finite.
# s/σ² up to 1e4 (a utility spread 100 times the noise) already makes every duel certain; beyond that the
# posterior variance of a duel falls below 1e-8 of its prior variance and EP loses its digits.
LENGTHSCALE_RANGE = (1e-3, 1e3)
VARIANCE_RANGE = (1e-4, 1e4)
FAILED_OBJECTIVE = 1e10


@dataclass
class Duels:
    """Training data of the evidence: documents, duels as row indices, optional inducing inputs."""

    X: Array  # (n_docs, D)
    winners: IntArray  # (t,)
    losers: IntArray  # (t,)
    inducing: Array | None  # (m, D) or None for exact EP

    def scatter(self, G: Array) -> Array:
        r""":math:`A^\top G` for G with one row per duel."""
        out = np.zeros((self.X.shape[0], *G.shape[1:]))
        np.add.at(out, self.losers, G)
        np.add.at(out, self.winners, -G)
        return out


@dataclass
class Evidence:
    r"""EP evidence at one θ: value, gradient, EP state and predictive weights.

    ``gradient`` is None when not asked for; the predictive weights ``(basis, w, P)`` give the posterior
    mean :math:`k(x, \text{basis})^\top w` and covariance
    :math:`k(x, x') - k(x, \text{basis})^\top P\, k(\text{basis}, x')`.
    """

    log_z: float
    gradient: Array | None
    ep: EPResult
    basis: Array
    weights: Array
    variance_matrix: Array
    jitter: float


def _rbf(Xa: Array, Xb: Array, variance: float, lengthscale: Array) -> Array:
    return ard_linear(Xa, Xb, variance, lengthscale, np.zeros(lengthscale.size))[0]


def _rbf_backward(G: Array, Xa: Array, Xb: Array, K: Array, lengthscale: Array) -> tuple[float, Array]:
    """Gradient of sum(G * K(Xa, Xb)) in (log s, log ℓ)."""
    g_var, g_len, _, _ = ard_linear_backward(G, Xa, Xb, K, lengthscale, np.zeros(lengthscale.size))
    return float(g_var), np.asarray(g_len)


def _probit_noise_gradient(ep: EPResult, kappa2: float) -> float:
    r"""Return the explicit noise term of ``ep-probit`` in the gradient.

    :math:`\sum_i \lambda_i\,\partial\beta_i/\partial\log\sigma` with
    :math:`\partial\beta/\partial\log\sigma = -\beta\kappa^2/(s^2+\kappa^2)`, at the final cavities.
    """
    total = ep.cav_var + kappa2
    beta = -ep.cav_mean / np.sqrt(total)
    lam = truncation_moments(beta)[1]
    return float(np.sum(lam * -beta * kappa2 / total))


def evaluate(
    duels: Duels,
    theta: Array,
    method: str,
    *,
    damping: float,
    max_iter: int,
    tol: float,
    gradient: bool,
    init: tuple[Array, Array] | None = None,
) -> Evidence:
    """Run EP at ``theta = (log ℓ (D or 1), log s, log σ)`` and return :class:`Evidence`."""
    D = duels.X.shape[1]
    lengthscale = np.exp(theta[:-2]) * np.ones(D)
    variance, noise = float(np.exp(theta[-2])), float(np.exp(theta[-1]))
    truncated = method == "ep-truncated"
    prior_noise = 2.0 * noise**2 if truncated else 0.0  # in Σ0 for v, in the sites for z
    kappa2 = 0.0 if truncated else 2.0 * noise**2
    win, lose = duels.winners, duels.losers
    X = duels.X
    if duels.inducing is None:
        K = _rbf(X, X, variance, lengthscale)
        Dm = K[lose] - K[win]
        cov = Dm[:, lose] - Dm[:, win]
        cov[np.diag_indices_from(cov)] += prior_noise
        dense = DensePrior(cov)
        ep = run_ep(dense, kappa2, damping=damping, max_iter=max_iter, tol=tol, init=init)
        b, C = dense.sensitivities(ep.tau, ep.nu)
        weights = duels.scatter(b)
        P = duels.scatter(duels.scatter(C).T)  # A^T C A
        grad = None
        if gradient:
            G = 0.5 * (np.outer(b, b) - C)
            G_f = duels.scatter(duels.scatter(G).T)
            g_var, g_len = _rbf_backward(G_f, X, X, K, lengthscale)
            g_noise = float(np.trace(G)) * 2.0 * prior_noise
            grad = _pack(g_len, g_var, g_noise, theta.size - 2)
        basis, jitter = X, 0.0
    else:
        Xu = duels.inducing
        m = Xu.shape[0]
        Ruu = _rbf(Xu, Xu, variance, lengthscale)
        L, jitter = jittered_cholesky(
            Ruu + BASE_JITTER * variance * np.eye(m), "K_uu (kernel matrix of the inducing points)"
        )
        Kfu = _rbf(X, Xu, variance, lengthscale)
        Kvu = Kfu[lose] - Kfu[win]
        U = solve_triangular(L, Kvu.T, lower=True).T
        diff2 = ((X[win] - X[lose]) / lengthscale) ** 2
        k_wl = variance * np.exp(-0.5 * diff2.sum(1))
        exact_diag = 2.0 * variance - 2.0 * k_wl
        lam = np.maximum(exact_diag - np.einsum("ij,ij->i", U, U), 0.0) + prior_noise
        low = LowRankPrior(U, lam)
        ep = run_ep(low, kappa2, damping=damping, max_iter=max_iter, tol=tol, init=init)
        _, _, nu_hat, Lm = low.factor(ep.tau, ep.nu)
        Minv = cho_solve((Lm, True), np.eye(m))
        weights = _right_inv_t(L, Minv @ (U.T @ nu_hat))
        P = _sandwich(L, np.eye(m) - Minv)
        grad = None
        if gradient:
            b, CU, diag_c = lowrank_sensitivities(low, ep.tau, ep.nu)
            g_lam = 0.5 * (b * b - diag_c)
            H = 0.5 * np.outer(b, b @ U) - 0.5 * CU - g_lam[:, None] * U
            g_Kvu = 2.0 * solve_triangular(L, H.T, lower=True, trans="T").T
            g_Kuu = -_sandwich(L, U.T @ H)
            g_Kuu = 0.5 * (g_Kuu + g_Kuu.T)
            gv_uu, gl_uu = _rbf_backward(g_Kuu, Xu, Xu, Ruu, lengthscale)
            gv_fu, gl_fu = _rbf_backward(duels.scatter(g_Kvu), X, Xu, Kfu, lengthscale)
            g_var = (
                gv_uu + gv_fu + BASE_JITTER * variance * float(np.trace(g_Kuu)) + float(g_lam @ exact_diag)
            )
            g_len = gl_uu + gl_fu - 2.0 * (g_lam * k_wl) @ diff2
            g_noise = float(np.sum(g_lam)) * 2.0 * prior_noise
            grad = _pack(g_len, g_var, g_noise, theta.size - 2)
        basis = Xu
    if grad is not None and not truncated:
        grad[-1] += _probit_noise_gradient(ep, kappa2)
    return Evidence(ep.log_z, grad, ep, basis, weights, 0.5 * (P + P.T), jitter)


def _pack(g_len: Array, g_var: float, g_noise: float, n_len: int) -> Array:
    """Gradient vector in θ order; a shared lengthscale gets the sum over the features."""
    g_len = np.atleast_1d(g_len)
    if n_len == 1:
        g_len = np.array([g_len.sum()])
    return np.concatenate([g_len, [g_var, g_noise]])


def _right_inv_t(L: Array, x: Array) -> Array:
    r"""Return :math:`L^{-\top} x`."""
    return np.asarray(solve_triangular(L, x, lower=True, trans="T"))


def _sandwich(L: Array, Y: Array) -> Array:
    r"""Return :math:`L^{-\top} Y L^{-1}`."""
    left = solve_triangular(L, Y, lower=True, trans="T")
    return np.asarray(solve_triangular(L, left.T, lower=True, trans="T").T)


def choose_inducing(documents: Array, n_inducing: int | None, random_state: Any) -> Array | None:
    """``n_inducing`` distinct documents drawn at random (None: exact EP, no inducing inputs)."""
    if n_inducing is None:
        return None
    distinct = np.unique(documents, axis=0)
    if n_inducing > distinct.shape[0]:
        raise ValueError(
            f"The 'n_inducing' parameter of PreferenceGP is {n_inducing}, but the duels involve only "
            f"{distinct.shape[0]} distinct documents. Lower n_inducing, or pass None for exact EP."
        )
    rng = check_random_state(random_state)
    return np.asarray(distinct[np.sort(rng.choice(distinct.shape[0], n_inducing, replace=False))])


def maximise_evidence(
    duels: Duels, theta0: Array, ard: bool, max_iter: int, run: Callable[..., Evidence]
) -> tuple[Array, int, int]:
    """Maximise log Z_EP over (log ℓ, log s) by L-BFGS-B, σ fixed; ``run(duels, theta, gradient, init)``.

    The objective is -log Z_EP / t (per duel), so that the first quasi-Newton step (the raw gradient) stays
    O(1) in log space whatever the number of duels. EP warm-starts from the previous evaluation's sites; a
    warm start that skips a site (its cavity precision lost to rounding: old sites under a prior thousands
    of times wider) or ends non-finite is redone from no sites. Returns θ, the iterations and how many
    evaluations needed jitter on K_uu.
    """
    spread = duels.X.std(0) if ard else np.array([np.sqrt(np.sum(duels.X.var(0)))])
    spread = np.where(spread > 0, spread, 1.0)
    bounds = [
        (float(np.log(LENGTHSCALE_RANGE[0] * sp)), float(np.log(LENGTHSCALE_RANGE[1] * sp))) for sp in spread
    ]
    bounds.append(tuple(2.0 * theta0[-1] + np.log(VARIANCE_RANGE)))
    t = duels.winners.size
    sites: list[tuple[Array, Array] | None] = [None]
    jittered = [0]

    def evidence(theta: Array) -> Evidence | None:
        for init in (sites[0], None) if sites[0] is not None else (None,):
            try:
                ev = run(duels, theta, gradient=True, init=init)
            except LinAlgError:
                continue
            if np.isfinite(ev.log_z) and ev.ep.n_skipped == 0:
                return ev
        return None

    def objective(free: Array) -> tuple[float, Array]:
        ev = evidence(np.append(free, theta0[-1]))
        if (
            ev is None or ev.gradient is None
        ):  # numerically infeasible: a high value makes the search back off
            return FAILED_OBJECTIVE, np.zeros(free.size)
        sites[0] = (ev.ep.tau, ev.ep.nu)
        jittered[0] += ev.jitter > 0
        return -ev.log_z / t, -ev.gradient[:-1] / t

    start = np.clip(theta0[:-1], [b[0] for b in bounds], [b[1] for b in bounds])
    result = minimize(
        objective, start, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": max_iter}
    )
    return np.append(result.x, theta0[-1]), int(result.nit), jittered[0]
