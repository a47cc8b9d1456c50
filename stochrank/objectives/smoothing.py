r"""How a StochasticRank objective smooths its metric and estimates the gradient (paper §4–5)."""

from __future__ import annotations

from dataclasses import InitVar, dataclass

from .._validation import check_int, check_real
from ..kernels import SmoothingParams

__all__ = ["SEED_LIMIT", "Smoothing", "check_seed"]

SEED_LIMIT = 2**63


def check_seed(seed: object, owner: str) -> int:
    """Validate a seed of the counter-based noise streams: an int in [0, 2**63)."""
    value = check_int(seed, "seed", owner, low=0)
    if value >= SEED_LIMIT:
        raise ValueError(f"The 'seed' parameter of {owner} must be below 2**63; got {seed}.")
    return value


@dataclass(frozen=True)
class Smoothing:
    r"""Noise smoothing :math:`E[M(f - \sigma\mu r + \sigma\varepsilon)]` and its CCS gradient estimate.

    Parameters
    ----------
    sigma : float > 0
        Noise scale :math:`\sigma`.
    mu : float >= 0
        Relevance shift :math:`\mu` (§4.3); 0 for metrics without one (LSO).
    nu : float > 0
        Offset of the scale-free acceleration, :math:`(\lVert \tilde f \rVert + \nu)^2`.
    sfa : float in [0, 1]
        Strength of the scale-free acceleration projection (CatBoost's ``lambda``).
    n_samples : int >= 1
        Noise draws per query per call, averaged (CatBoost's ``num_estimations``).
    seed : int in [0, 2**63)
        Seed of the per-(call, query) noise streams.
    owner : str
        The constructor named in error messages (init-only).
    """

    sigma: float = 1.0
    mu: float = 0.0
    nu: float = 0.01
    sfa: float = 1.0
    n_samples: int = 1
    seed: int = 0
    owner: InitVar[str] = "stochrank.Smoothing"

    def __post_init__(self, owner: str) -> None:
        """Validate the parameters; ``owner`` names the constructor in the messages (dataclass hook)."""
        checked = {
            "sigma": check_real(self.sigma, "sigma", owner, low=0.0, low_open=True),
            "mu": check_real(self.mu, "mu", owner, low=0.0),
            "nu": check_real(self.nu, "nu", owner, low=0.0, low_open=True),
            "sfa": check_real(self.sfa, "sfa", owner, low=0.0, high=1.0),
            "n_samples": check_int(self.n_samples, "n_samples", owner, low=1),
            "seed": check_seed(self.seed, owner),
        }
        for name, value in checked.items():  # store plain Python numbers (one kernel specialisation)
            object.__setattr__(self, name, value)

    def kernel_params(self) -> SmoothingParams:
        """Return the parameters in the kernels' form."""
        return SmoothingParams(self.sigma, self.mu, self.nu, self.sfa, self.n_samples, self.seed)
