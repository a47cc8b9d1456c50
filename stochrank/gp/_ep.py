r"""Expectation propagation for a Gaussian vector observed through one-dimensional truncations.

The EP variable ``x`` (length t, one entry per duel) has a zero-mean Gaussian prior with covariance
:math:`\Sigma_0` and site ``i`` multiplies it by :math:`\Phi(-x_i/\kappa)`, the probability that
:math:`x_i + e_i < 0` for :math:`e_i \sim N(0, \kappa^2)`:

* ``kappa2 = 0``: the indicator :math:`\mathbb I\{x_i < 0\}` — EP on the truncated multivariate normal of
  :math:`v` (the seed note; :math:`\Sigma_0` then holds the duel noise :math:`2\sigma^2 I`);
* ``kappa2 = 2σ²``: the probit site of GP classification (Rasmussen & Williams, ch. 3) on
  :math:`z_i = f(x_{l,i}) - f(x_{w,i})`.

Sites are Gaussian, :math:`\exp(-\tilde\tau_i x_i^2/2 + \tilde\nu_i x_i)` (natural parameters, so a site
with no information is :math:`\tilde\tau = \tilde\nu = 0` instead of :math:`\tilde\sigma^2 = \infty`).
The updates are parallel (every cavity from the current posterior, then every site), damped in natural
parameters. Both site families are log-concave, so every exact site precision is >= 0 and every cavity
variance is positive; a cavity precision <= 0 or a non-finite proposal can only come from rounding: that
site keeps its previous parameters for the sweep (counted in ``EPResult.n_skipped``), and a proposed
precision below 0 is clipped to 0.

Two forms of :math:`\Sigma_0`: ``dense`` (t×t; O(t³) per sweep) and ``low rank``
:math:`U U^\top + \mathrm{diag}(\Lambda)` (FITC; O(t·m²) per sweep for U of width m).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular
from scipy.special import erfcx, log_ndtr

Array = npt.NDArray[np.float64]

__all__ = [
    "CholeskyJitterWarning",
    "DensePrior",
    "EPResult",
    "LowRankPrior",
    "jittered_cholesky",
    "run_ep",
    "site_update",
    "truncation_moments",
]

# Below beta = -4 the direct formulas lose log10(beta^2) digits to cancellation; Laplace's continued
# fraction of the Mills ratio gives beta + lambda and the variance without any subtraction of near-equal
# terms. 60 levels reach full double precision for x >= 4 (checked against mpmath in the tests).
_FAR_TAIL = -4.0
_CF_DEPTH = 60
_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
_MAX_JITTER = 1e-2  # relative to the mean diagonal; beyond that the matrix is not a covariance
# A site whose precision is below this fraction of its cavity's carries nothing a double can hold; it is
# set to exactly 0, because subnormal products would slow every later BLAS call a hundredfold.
_NEGLIGIBLE = 1e-150


class CholeskyJitterWarning(RuntimeWarning):
    """A covariance matrix needed jitter on its diagonal before it could be factorised."""


def truncation_moments(beta: Array) -> tuple[Array, Array, Array, Array]:
    r"""Moments of :math:`u \sim N(0, 1)` conditioned on :math:`u < \beta`, stable for every ``beta``.

    Returns ``(log Φ(β), λ, c, g)`` with :math:`\lambda = \phi(\beta)/\Phi(\beta)` (so
    :math:`E[u \mid u<\beta] = -\lambda`), :math:`c = \beta + \lambda > 0` and
    :math:`g = \mathrm{Var}[u \mid u<\beta] = 1 - \lambda c \in (0, 1)`. :math:`\lambda` comes from the
    scaled complementary error function, :math:`\lambda = \sqrt{2/\pi} / \mathrm{erfcx}(-\beta/\sqrt2)`;
    for :math:`\beta < -4`, ``c`` and ``g`` come from Laplace's continued fraction
    :math:`\lambda = x + t_1`, :math:`t_k = k / (x + t_{k+1})`, :math:`x = -\beta`:
    :math:`c = t_1`, :math:`g = (x + 2t_2 - t_3) / ((x + t_3)(x + t_2)^2)`.
    """
    beta = np.asarray(beta, dtype=np.float64)
    log_z = log_ndtr(beta)
    lam = _SQRT_2_OVER_PI / erfcx(-beta / np.sqrt(2.0))
    c = beta + lam
    g = 1.0 - lam * c
    far = beta < _FAR_TAIL
    if np.any(far):
        x = -beta[far]
        t = [np.zeros_like(x)] * 4  # t[k] for k = 1, 2, 3 once the recursion is down to level 1
        nxt = np.zeros_like(x)
        for k in range(_CF_DEPTH, 0, -1):
            nxt = k / (x + nxt)
            if k <= 3:
                t[k] = nxt
        c[far] = t[1]
        lam[far] = x + t[1]
        g[far] = (x + 2.0 * t[2] - t[3]) / ((x + t[3]) * (x + t[2]) ** 2)
    return log_z, lam, c, g


def site_update(cav_mean: Array, cav_var: Array, kappa2: float) -> tuple[Array, Array, Array, Array, Array]:
    r"""Moment-matched site for the cavity :math:`N(m, s^2)` times :math:`\Phi(-x/\kappa)`.

    With :math:`r = s^2/(s^2 + \kappa^2)`, :math:`\beta = -m/\sqrt{s^2+\kappa^2}` and ``λ, c, g`` of
    :func:`truncation_moments`, the tilted distribution has normaliser :math:`\Phi(\beta)`, mean
    :math:`m - s\sqrt r\,\lambda` and variance :math:`s^2 D`, :math:`D = 1 - r + r g`; the site that
    matches them is :math:`\tilde\tau = r\lambda c/(s^2 D)` and
    :math:`\tilde\nu = \sqrt r(\beta g - c)/(sD) = -\sqrt r\,\lambda(1+\beta c)/(sD)` (the second form
    for :math:`\beta \ge 0`, the first below: neither cancels). For ``kappa2 = 0`` these are the seed's
    :math:`\tilde\sigma^2 = ((\beta\lambda + \lambda^2)^{-1} - 1)\bar\sigma^2` and
    :math:`\tilde\mu = \bar\mu - \bar\sigma/(\beta + \lambda)` (the seed prints ``+``: its
    :math:`E_{r_j}[v_j] = \bar\mu + \lambda\bar\sigma` has the sign of a truncation to :math:`v > 0`).

    Returns ``(log Z, tau, nu, tilted mean, tilted variance)``.
    """
    total = cav_var + kappa2
    r = cav_var / total
    s = np.sqrt(cav_var)
    sqrt_r = np.sqrt(r)
    beta = -cav_mean / np.sqrt(total)
    log_z, lam, c, g = truncation_moments(beta)
    D = (1.0 - r) + r * g
    tau = r * lam * c / (cav_var * D)
    nu = np.where(beta >= 0.0, -lam * (1.0 + beta * c), beta * g - c) * sqrt_r / (s * D)
    negligible = tau * cav_var < _NEGLIGIBLE
    tau = np.where(negligible, 0.0, tau)
    nu = np.where(negligible, 0.0, nu)
    # tilted mean m - s√r λ = -(s/√r)(c - (1 - r)λ): no cancellation of m against s√r λ in the far tail
    return log_z, tau, nu, -(s / sqrt_r) * (c - (1.0 - r) * lam), cav_var * D


def jittered_cholesky(A: Array, what: str) -> tuple[Array, float]:
    """Lower Cholesky factor of ``A``, adding ``j · mean(diag A)`` to the diagonal only if needed.

    Returns ``(L, j)``; ``j = 0`` when ``A`` factorised as given. ``j`` grows tenfold from 1e-10 to 1e-2;
    beyond that ``A`` is not a covariance matrix and ``LinAlgError`` names ``what``.
    """
    try:
        return cholesky(A, lower=True), 0.0
    except LinAlgError:
        pass
    scale = float(np.mean(np.diag(A)))
    relative = 1e-10
    while relative <= _MAX_JITTER:
        try:
            return cholesky(A + relative * scale * np.eye(A.shape[0]), lower=True), relative
        except LinAlgError:
            relative *= 10.0
    raise LinAlgError(
        f"{what} is not positive definite even with {_MAX_JITTER:g} x its mean diagonal added: it has "
        "non-finite entries or is far from a covariance matrix."
    )


class Prior(Protocol):
    """A prior covariance of the EP variable that can return posterior marginals for given sites."""

    size: int

    def marginal_variance(self) -> Array: ...

    def posterior(self, tau: Array, nu: Array) -> tuple[Array, Array, float]: ...


@dataclass
class DensePrior:
    r"""Dense prior covariance :math:`\Sigma_0` (t×t).

    Posterior via :math:`B = I + S^{1/2}\Sigma_0 S^{1/2}`, :math:`S = \mathrm{diag}(\tilde\tau)` (eigenvalues
    >= 1, so no jitter; Rasmussen & Williams, Alg. 3.5).
    """

    cov: Array

    @property
    def size(self) -> int:
        return int(self.cov.shape[0])

    def marginal_variance(self) -> Array:
        return np.array(np.diag(self.cov), dtype=np.float64)

    def _factor(self, tau: Array) -> tuple[Array, Array]:
        sw = np.sqrt(tau)
        B = np.eye(self.size) + np.outer(sw, sw) * self.cov
        return sw, cholesky(B, lower=True)

    def posterior(self, tau: Array, nu: Array) -> tuple[Array, Array, float]:
        r"""Marginal means and variances of the posterior and :math:`\log|B|`."""
        sw, L = self._factor(tau)
        V = solve_triangular(L, sw[:, None] * self.cov, lower=True)
        mean = self.cov @ nu - V.T @ (V @ nu)
        var = np.diag(self.cov) - np.einsum("ij,ij->j", V, V)
        return mean, var, 2.0 * float(np.sum(np.log(np.diag(L))))

    def sensitivities(self, tau: Array, nu: Array) -> tuple[Array, Array]:
        r"""Return ``(b, C)``: :math:`\partial\log Z_{EP}/\partial\Sigma_0 = \frac12(bb^\top - C)`.

        :math:`C = (\Sigma_0 + \tilde S^{-1})^{-1}` and :math:`b = C\tilde\mu`; the derivative holds at an EP
        fixed point.
        """
        sw, L = self._factor(tau)
        b = nu - sw * cho_solve((L, True), sw * (self.cov @ nu))
        C = np.outer(sw, sw) * cho_solve((L, True), np.eye(self.size))
        return b, C


@dataclass
class LowRankPrior:
    r""":math:`\Sigma_0 = U U^\top + \mathrm{diag}(\Lambda)`, U of shape (t, m), :math:`\Lambda \ge 0` (FITC).

    Integrating the residual out of site i leaves a Gaussian factor on the rank-m part with precision
    :math:`\hat\tau_i = \tilde\tau_i/(1 + \Lambda_i\tilde\tau_i)` and natural mean
    :math:`\hat\nu_i = \tilde\nu_i/(1 + \Lambda_i\tilde\tau_i)`; with
    :math:`\tilde M = I_m + U^\top \hat T U` (eigenvalues >= 1) the marginals are
    :math:`\mu_i = (U_i \tilde M^{-1} U^\top\hat\nu + \Lambda_i\tilde\nu_i)/(1+\Lambda_i\tilde\tau_i)` and
    :math:`\sigma_i^2 = \Lambda_i/(1+\Lambda_i\tilde\tau_i)
    + U_i\tilde M^{-1}U_i^\top/(1+\Lambda_i\tilde\tau_i)^2`.
    """

    U: Array
    lam: Array

    @property
    def size(self) -> int:
        return int(self.U.shape[0])

    def marginal_variance(self) -> Array:
        return np.asarray(np.einsum("ij,ij->i", self.U, self.U) + self.lam)

    def factor(self, tau: Array, nu: Array) -> tuple[Array, Array, Array, Array]:
        """``(1 + Λτ̃, τ̂, ν̂, chol(M̃))``."""
        denom = 1.0 + self.lam * tau
        tau_hat = tau / denom
        M = np.eye(self.U.shape[1]) + (self.U.T * tau_hat) @ self.U
        return denom, tau_hat, nu / denom, cholesky(M, lower=True)

    def posterior(self, tau: Array, nu: Array) -> tuple[Array, Array, float]:
        r"""Marginal means and variances of the posterior and :math:`\log|B|`."""
        denom, _, nu_hat, Lm = self.factor(tau, nu)
        W = solve_triangular(Lm, self.U.T, lower=True)  # W^T W = U M^-1 U^T
        mean = (W.T @ (W @ nu_hat) + self.lam * nu) / denom
        var = self.lam / denom + np.einsum("ij,ij->j", W, W) / denom**2
        log_det = float(np.sum(np.log(denom))) + 2.0 * float(np.sum(np.log(np.diag(Lm))))
        return mean, var, log_det


@dataclass
class EPResult:
    r"""Converged (or last) EP state: sites, posterior marginals, cavities and :math:`\log Z_{EP}`."""

    tau: Array
    nu: Array
    mean: Array
    var: Array
    cav_mean: Array
    cav_var: Array
    log_z: float
    n_iter: int
    converged: bool
    n_skipped: int


def _cavity(mean: Array, var: Array, tau: Array, nu: Array) -> tuple[Array, Array, Array]:
    """Cavity precision, mean and variance; the precision may be <= 0 by rounding (the caller checks)."""
    tau_c = 1.0 / var - tau
    with np.errstate(divide="ignore", invalid="ignore"):
        cav_var = 1.0 / tau_c
        cav_mean = (mean / var - nu) * cav_var
    return tau_c, cav_mean, cav_var


def log_z_ep(
    mean: Array, var: Array, tau: Array, nu: Array, log_det_B: float, kappa2: float
) -> tuple[float, Array, Array]:
    r"""Compute :math:`\log Z_{EP}` from the posterior marginals and the sites.

    Rasmussen & Williams eq. 3.65 in natural parameters (GPML's ``infEP``; zero prior mean), with the
    cavities of that posterior:

    .. math:: \sum_i \log Z_i + \tfrac12\tilde\nu^\top\mu
        - \tfrac12\sum_i\frac{\tilde\nu_i^2}{\tau_{-i}+\tilde\tau_i}
        + \tfrac12\sum_i\frac{\nu_{-i}(\tilde\tau_i\nu_{-i}/\tau_{-i} - 2\tilde\nu_i)}{\tau_{-i}+\tilde\tau_i}
        + \tfrac12\sum_i\log(1+\tilde\tau_i/\tau_{-i}) - \tfrac12\log|B|

    Returns ``(log Z_EP, cavity means, cavity variances)``.
    """
    tau_c, cav_mean, cav_var = _cavity(mean, var, tau, nu)
    nu_c = cav_mean * tau_c
    log_z = site_update(cav_mean, cav_var, kappa2)[0]
    total = tau_c + tau
    value = (
        np.sum(log_z)
        + 0.5 * nu @ mean
        - 0.5 * np.sum(nu * nu / total)
        + 0.5 * np.sum(nu_c * (tau * cav_mean - 2.0 * nu) / total)
        + 0.5 * np.sum(np.log1p(tau / tau_c))
        - 0.5 * log_det_B
    )
    return float(value), cav_mean, cav_var


def run_ep(
    prior: DensePrior | LowRankPrior,
    kappa2: float,
    *,
    damping: float,
    max_iter: int,
    tol: float,
    init: tuple[Array, Array] | None = None,
) -> EPResult:
    r"""Parallel, damped EP to a fixed point.

    Each sweep takes every cavity from the current posterior, proposes every site by
    :func:`site_update` and moves the natural parameters ``damping`` of the way (1 = no damping).
    Converged when no posterior marginal mean or standard deviation moved by more than ``tol`` prior
    standard deviations (of :math:`x_i + e_i`) in a sweep. ``init`` = ``(tau, nu)`` warm-starts the sites.
    """
    t = prior.size
    tau, nu = (np.zeros(t), np.zeros(t)) if init is None else (init[0].copy(), init[1].copy())
    scale = np.sqrt(prior.marginal_variance() + kappa2)
    mean, var, log_det = prior.posterior(tau, nu)
    n_skipped = 0
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        tau_c, cav_mean, cav_var = _cavity(mean, var, tau, nu)
        with np.errstate(invalid="ignore", divide="ignore"):  # sites with tau_c <= 0 are masked below
            _, tau_new, nu_new, _, _ = site_update(cav_mean, cav_var, kappa2)
        ok = (tau_c > 0.0) & np.isfinite(tau_new) & np.isfinite(nu_new)
        n_skipped += int(t - np.count_nonzero(ok))
        tau = np.where(ok, (1.0 - damping) * tau + damping * np.maximum(tau_new, 0.0), tau)
        nu = np.where(ok, (1.0 - damping) * nu + damping * nu_new, nu)
        new_mean, new_var, log_det = prior.posterior(tau, nu)
        change = np.maximum(np.abs(new_mean - mean), np.abs(np.sqrt(new_var) - np.sqrt(var))) / scale
        mean, var = new_mean, new_var
        if float(np.max(change)) < tol:
            converged = True
            break
    value, cav_mean, cav_var = log_z_ep(mean, var, tau, nu, log_det, kappa2)
    return EPResult(tau, nu, mean, var, cav_mean, cav_var, value, n_iter, converged, n_skipped)


def lowrank_sensitivities(prior: LowRankPrior, tau: Array, nu: Array) -> tuple[Array, Array, Array]:
    r"""Return the reverse-mode pieces ``(b, CU, diag C)`` of :math:`\log Z_{EP}` for a low-rank prior.

    For :math:`\Sigma_0 = UU^\top + \mathrm{diag}(\Lambda)`, without forming the t×t
    :math:`G = \frac12(bb^\top - C)`: :math:`C = (\Sigma_0 + \tilde S^{-1})^{-1}
    = \hat T - \hat T U\tilde M^{-1}U^\top\hat T`,
    :math:`b = C\tilde\mu = \hat\nu - \hat T U\tilde M^{-1}U^\top\hat\nu` and
    :math:`CU = \hat T U \tilde M^{-1}`.
    """
    _, tau_hat, nu_hat, Lm = prior.factor(tau, nu)
    UMinv = cho_solve((Lm, True), prior.U.T).T  # U M^-1
    b = nu_hat - tau_hat * (UMinv @ (prior.U.T @ nu_hat))
    CU = tau_hat[:, None] * UMinv
    diag_c = tau_hat - tau_hat**2 * np.einsum("ij,ij->i", UMinv, prior.U)
    return b, CU, diag_c
