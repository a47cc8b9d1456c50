r"""How a StochasticRank objective smooths its metric and estimates the gradient (paper §4–5)."""

from __future__ import annotations

from dataclasses import InitVar, dataclass, replace
from typing import Literal

from .._validation import INT_MAX, check_choice, check_int, check_real
from ..kernels import SmoothingParams

__all__ = ["HESSIANS", "SEED_LIMIT", "SIGMA_MAX", "SIGMA_MIN", "Smoothing", "check_seed"]

SEED_LIMIT = 2**63
# Only sigma relative to the scores matters (the metrics are scale free), and boosters keep scores and take
# gradients in float32: a noise scale outside [1e-6, 1e6] turns into gradients (~1/sigma) or scores (~sigma)
# that float32 cannot hold, or into a division by an underflowed variance inside the kernels.
SIGMA_MIN = 1e-6
SIGMA_MAX = 1e6
NU_MIN = 1e-100  # SFA divides by (||f|| + nu)^2: nu^2 must stay a normal float at equal scores
HESSIANS = ("newton", "unit")


def check_seed(seed: object, owner: str) -> int:
    """Validate a seed of the counter-based noise streams: an int in [0, 2**63)."""
    value = check_int(seed, "seed", owner, low=0)
    if value >= SEED_LIMIT:
        raise ValueError(f"The 'seed' parameter of {owner} must be below 2**63; got {seed}.")
    return value


@dataclass(frozen=True)
class Smoothing:
    r"""Noise smoothing :math:`E[M(f - \sigma\mu r + \sigma\varepsilon)]`, its CCS gradient and the leaves.

    Parameters
    ----------
    sigma : float in [1e-6, 1e6]
        Noise scale :math:`\sigma` (only its size relative to the scores matters).
    mu : float >= 0
        Relevance shift :math:`\mu` (§4.3); 0 for metrics without one (LSO).
    nu : float >= 1e-100
        Offset of the scale-free acceleration, :math:`(\lVert \tilde f \rVert + \nu)^2`.
    sfa : float in [0, 1] or None
        Strength of the scale-free acceleration projection (CatBoost's ``lambda``). None: the default of
        the leaves, 1 with unit Hessians and 0 with Newton leaves (which refuse any other value).
    n_samples : int >= 1
        Noise draws per query per call, averaged (CatBoost's ``num_estimations``).
    seed : int in [0, 2**63)
        Seed of the per-(call, query) noise streams.
    hessian : {'newton', 'unit'} or None
        ``'newton'``: the booster gets the positive curvature :math:`h_d = \sum_b |c_b| D(b)/s_d` of the
        same CCS pass as its Hessian, so a leaf is :math:`\sum g/\sum h`, at most one noise scale and
        signed by how much its documents' pulls agree (LambdaMART's leaf in Gaussian form); the
        gradient is then neither mean-removed nor SFA-projected. ``'unit'``: Hessian 1, leaves are
        mean gradients (CatBoost's ``leaf_estimation_method=Gradient``), mean removal and SFA on. None:
        the objective's default, unit with SGLB or for LSO, else Newton.
    owner : str
        The constructor named in error messages (init-only).
    """

    sigma: float = 1.0
    mu: float = 0.0
    nu: float = 0.01
    sfa: float | None = None
    n_samples: int = 1
    seed: int = 0
    hessian: Literal["newton", "unit"] | None = None
    owner: InitVar[str] = "stochrank.Smoothing"

    def __post_init__(self, owner: str) -> None:
        """Validate the parameters; ``owner`` names the constructor in the messages (dataclass hook).

        The defaults ``sfa=None`` and ``hessian=None`` are kept as given: which leaves and which SFA they
        mean depends on the objective (:meth:`resolve`), and a copy with other settings re-resolves them.
        """
        hessian = None if self.hessian is None else check_choice(self.hessian, "hessian", owner, HESSIANS)
        checked = {
            "sigma": check_real(self.sigma, "sigma", owner, low=SIGMA_MIN, high=SIGMA_MAX),
            "mu": check_real(self.mu, "mu", owner, low=0.0),
            # nu below ~1e-162 squares to 0 in the SFA denominator at equal scores (every booster's start)
            "nu": check_real(self.nu, "nu", owner, low=NU_MIN),
            "sfa": None if self.sfa is None else check_real(self.sfa, "sfa", owner, low=0.0, high=1.0),
            "n_samples": check_int(self.n_samples, "n_samples", owner, low=1, high=INT_MAX),
            "seed": check_seed(self.seed, owner),
        }
        if hessian == "newton" and checked["sfa"] not in (None, 0.0):
            raise ValueError(
                f"{owner}(hessian='newton') takes no scale-free acceleration (got sfa={self.sfa}): with "
                "Newton leaves the projection gives documents without curvature a gradient, an unbounded "
                "step. Use sfa=0 (the default), or hessian='unit' for CatBoost's gradient leaves with SFA."
            )
        for name, value in checked.items():  # store plain Python numbers (one kernel specialisation)
            object.__setattr__(self, name, value)

    def resolve(self, hessian: Literal["newton", "unit"], owner: str) -> Smoothing:
        """Return this smoothing with its defaults filled in: ``hessian`` if it has none, and its SFA."""
        leaves = self.hessian if self.hessian is not None else hessian
        sfa = self.sfa if self.sfa is not None else (0.0 if leaves == "newton" else 1.0)
        return replace(self, hessian=leaves, sfa=sfa, owner=owner)

    def kernel_params(self) -> SmoothingParams:
        """Return the parameters in the kernels' form (of a resolved smoothing)."""
        assert self.sfa is not None, "resolve() the smoothing first"
        return SmoothingParams(self.sigma, self.mu, self.nu, self.sfa, self.n_samples, self.seed)
