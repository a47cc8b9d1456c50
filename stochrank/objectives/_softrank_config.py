"""The configuration of a SoftRank objective: what it optimises and how scores are uncertain."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._validation import check_choice, check_int, check_optional_int, check_real
from ..conventions import GainKind
from ._variance import OWNER, VarianceModel, VarianceSpec, check_variance_array, check_variance_model
from .smoothing import SIGMA_MAX, SIGMA_MIN, check_seed

__all__ = ["SoftRankConfig", "TrainDiscount"]

TrainDiscount = Literal["log", "position", "linear"]


@dataclass(frozen=True, eq=False)
class SoftRankConfig:
    """What a SoftRank objective optimises and how scores are uncertain (see :func:`softrank`).

    Validated at construction; ``train_discount=None`` resolves to ``discount`` and ``sigma=None`` to 1
    when no ``variance`` is given. A variance array is kept as a read-only copy. ``relative_sigma``
    makes σ a multiple of each query's current score spread; ``warmup`` is the number of booster calls
    that use the whole-list linear start direction (see :func:`softrank`, "Long queries").
    """

    k: int | None = None
    sigma: float | None = None
    variance: VarianceSpec = None
    gain: GainKind = "exp"
    discount: Literal["log", "position"] = "log"
    train_discount: TrainDiscount | None = None
    seed: int = 0
    relative_sigma: bool = False
    warmup: int = 0

    @property
    def base_variance(self) -> float:
        """σ² of a constant-variance configuration (the multiplier of s_q² with ``relative_sigma``)."""
        if isinstance(self.variance, float):
            return self.variance
        if self.variance is None and self.sigma is not None:
            return self.sigma**2
        raise TypeError(f"{OWNER} has per-document variances, not one constant.")

    def __post_init__(self) -> None:
        """Validate the parameters and resolve the defaults (dataclass hook)."""
        set_ = object.__setattr__
        set_(self, "k", check_optional_int(self.k, "k", OWNER, low=1, none_means="the whole list"))
        check_choice(self.gain, "gain", OWNER, ("exp", "linear"))
        check_choice(self.discount, "discount", OWNER, ("log", "position"))
        chosen = self.discount if self.train_discount is None else self.train_discount
        set_(
            self,
            "train_discount",
            check_choice(chosen, "train_discount", OWNER, ("log", "position", "linear")),
        )
        if self.train_discount == "linear" and self.k is None:
            raise ValueError(
                f"train_discount='linear' of {OWNER} is D(r) = 1 - r/k and needs a cut-off: "
                "pass k (e.g. k=10)."
            )
        if self.sigma is not None and self.variance is not None:
            raise ValueError(
                f"{OWNER} takes either sigma (a constant standard deviation) or variance, not both. "
                "For a constant, sigma=s is the same as variance=s**2."
            )
        set_(self, "variance", _variance_spec(self.variance))
        if self.variance is None:
            sigma = 1.0 if self.sigma is None else self.sigma
            set_(self, "sigma", check_real(sigma, "sigma", OWNER, low=SIGMA_MIN, high=SIGMA_MAX))
        set_(self, "seed", check_seed(self.seed, OWNER))  # the exact method draws nothing; SGLB's noise does
        if not isinstance(self.relative_sigma, (bool, np.bool_)):
            raise ValueError(
                f"The 'relative_sigma' parameter of {OWNER} must be True or False. "
                f"Got {self.relative_sigma!r} instead."
            )
        set_(self, "relative_sigma", bool(self.relative_sigma))
        if self.relative_sigma and not (self.variance is None or isinstance(self.variance, float)):
            raise ValueError(
                f"relative_sigma=True of {OWNER} scales one constant sigma by each query's score spread; "
                "it takes sigma=<float> (or variance=<float>), not per-document variances. Pass "
                "relative_sigma=False to use the variance array or model as it is."
            )
        set_(self, "warmup", check_int(self.warmup, "warmup", OWNER, low=0))


def _variance_spec(variance: Any) -> VarianceSpec:
    if variance is None:
        return None
    if isinstance(variance, (int, float, np.floating, np.integer)) and not isinstance(variance, bool):
        return check_real(variance, "variance", OWNER, low=SIGMA_MIN**2, high=SIGMA_MAX**2)
    if isinstance(variance, VarianceModel) and not isinstance(variance, (np.ndarray, list, tuple)):
        return check_variance_model(variance)
    return check_variance_array(variance)
