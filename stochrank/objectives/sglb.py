"""Stochastic Gradient Langevin Boosting (Ustimenko & Prokhorenkova, ICML 2021) configuration."""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

from .._validation import check_choice, check_real

__all__ = ["SGLB"]


@dataclasses.dataclass(frozen=True, repr=False)
class SGLB:
    r"""Langevin noise plus model shrinkage, with CatBoost's semantics.

    Each iteration t (0-based) of the booster then follows

    .. math::

        F_t \leftarrow s_t F_t \ (t \ge 1), \qquad
        F_{t+1} = F_t + \mathrm{lr}\cdot \mathrm{tree}_t\bigl(-\nabla L(F_t) + c\,\xi_t\bigr),
        \qquad c = \sqrt{2 / (\mathrm{lr}\, T)},

    with :math:`\xi_t \sim N(0, I)` added to every document's gradient and
    :math:`s_t = 1 - \mathrm{rate}\cdot\mathrm{lr}` (``shrink_mode='constant'``) or
    :math:`s_t = 1 - \mathrm{rate}/t` (``'decreasing'``). LightGBM and XGBoost cannot shrink the trees
    they already hold, so stochrank boosts the equivalent rescaled model :math:`F_t / C_t`,
    :math:`C_t = \prod_{i \le t} s_i`: it evaluates the gradient at :math:`F_t = C_t \cdot` (booster
    scores) and hands the booster the gradient divided by :math:`C_t`. Every tree is then the SGLB tree
    divided by :math:`C_t` and the booster ranks every document exactly as :math:`F` does (a ranking
    metric is scale free).

    Parameters
    ----------
    temperature : float, default 1e4
        Diffusion temperature T > 0 (CatBoost's ``diffusion_temperature`` and its default when
        ``langevin=True``). Larger T means less noise.
    shrink_rate : float or None, default None
        Model shrink rate; None takes CatBoost's defaults, 1e-3 (constant) or 1e-2 (decreasing).
        0 disables shrinkage.
    shrink_mode : {'constant', 'decreasing'}, default 'constant'
    learning_rate : float or None, default None
        The booster's learning rate. LightGBM's ``lgb.train`` / ``lgb.cv`` expose it to the objective
        and it is read from there (and must agree if also given here). ``xgb.train`` and LightGBM's
        own ``lightgbm.LGBMRanker`` do not: give it here; the objective refuses to start without it.
        ``stochrank.xgboost.XGBRanker`` and ``stochrank.lightgbm.LGBMRanker`` pass their own (and
        refuse a different one given here).

    Differences from CatBoost: CatBoost draws separate noise for split search and for leaf values
    (leaf noise std ``lr * c / sqrt(W + l2)``); here one draw per document serves both, so a leaf's noise
    has std ``lr * c * sqrt(W) / (W + l2)`` — identical for ``l2 = 0``.
    """

    temperature: float = 1e4
    shrink_rate: float | None = None
    shrink_mode: Literal["constant", "decreasing"] = "constant"
    learning_rate: float | None = None

    def __post_init__(self) -> None:
        """Validate the settings and store them as plain Python numbers (dataclass hook).

        Stored as checked, so equal settings also hash and show alike: ``SGLB(temperature=10000)`` is
        ``SGLB(temperature=1e4)``, and a NumPy scalar becomes a float.
        """
        set_ = object.__setattr__
        set_(self, "temperature", check_real(self.temperature, "temperature", "SGLB", low=0.0, low_open=True))
        check_choice(self.shrink_mode, "shrink_mode", "SGLB", ("constant", "decreasing"))
        if self.shrink_rate is not None:
            rate = check_real(self.shrink_rate, "shrink_rate", "SGLB", low=0.0)
            if self.shrink_mode == "decreasing" and rate >= 1.0:
                raise ValueError(
                    f"SGLB(shrink_mode='decreasing') needs 0 <= shrink_rate < 1 (s_t = 1 - rate/t must stay "
                    f"positive); got shrink_rate={rate}."
                )
            set_(self, "shrink_rate", rate)
        if self.learning_rate is not None:
            lr = check_real(self.learning_rate, "learning_rate", "SGLB", low=0.0, low_open=True)
            set_(self, "learning_rate", lr)
        if self.shrink_mode == "constant" and self.learning_rate is not None:
            self._check_constant(self.learning_rate)

    def __repr__(self) -> str:
        """Show the call that builds equal settings, qualified like the objectives' (``stochrank.ndcg(...)``).

        An objective's repr then evaluates with only ``stochrank`` imported.
        """
        fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
        return f"stochrank.SGLB({fields})"

    @property
    def rate(self) -> float:
        """The shrink rate in effect (CatBoost's default when ``shrink_rate`` is None)."""
        if self.shrink_rate is not None:
            return self.shrink_rate
        return 1e-3 if self.shrink_mode == "constant" else 1e-2

    def _check_constant(self, lr: float) -> None:
        if not 0.0 <= self.rate * lr < 1.0:
            raise ValueError(
                f"SGLB(shrink_mode='constant') needs 0 <= shrink_rate * learning_rate < 1; got "
                f"{self.rate} * {lr}. Lower shrink_rate."
            )

    def booster_learning_rate(self, booster_lr: float | None, booster: str = "the booster") -> float | None:
        """Return the step SGLB's noise and shrinkage use: the booster's, else ``learning_rate``.

        None if neither is known.

        Raises ValueError when both are known and differ, or when constant shrinkage would not shrink
        (``shrink_rate * lr`` outside [0, 1)). ``booster`` names the other side in the message.
        """
        given = self.learning_rate
        if (
            booster_lr is not None
            and given is not None
            and not math.isclose(booster_lr, given, rel_tol=1e-5, abs_tol=1e-8)
        ):
            raise ValueError(
                f"SGLB(learning_rate={given}) disagrees with {booster}'s learning_rate={booster_lr}. "
                "SGLB's noise and shrinkage must use the booster's step: drop learning_rate from SGLB(...) "
                "or make them equal."
            )
        lr = booster_lr if booster_lr is not None else given
        if lr is not None and self.shrink_mode == "constant":
            self._check_constant(lr)
        return lr

    def noise_rate(self, lr: float) -> float:
        """Langevin noise scale c = sqrt(2 / (lr * T))."""
        return math.sqrt(2.0 / (lr * self.temperature))

    def shrink(self, iteration: int, lr: float) -> float:
        """Shrink factor s_t applied before iteration ``iteration`` (1 for the first)."""
        if iteration == 0:
            return 1.0
        if self.shrink_mode == "constant":
            self._check_constant(lr)
            return 1.0 - self.rate * lr
        return 1.0 - self.rate / iteration
