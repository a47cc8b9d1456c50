"""The benchmark's methods and their random-search spaces.

A :class:`Method` is one ranking objective on one booster: its own search space (objective parameters
only) and a ``build`` function that turns a sampled configuration into the booster's parameters. The
booster's own parameters (learning rate, tree size, regularisation) come from :data:`BOOSTER_SPACES`, one
space per booster shared by every method on it, so methods on one booster are tuned over the same trees.

Ranges. The StochasticRank paper's (Appendix F, random search with 500 samples), used here as given:

* learning rate log-uniform on [1e-3, 1]; depth uniform on {6, ..., 10};
* L2 leaf regularisation log-uniform on [0.1, 10] -- the paper's range for the baselines; the paper fixes
  it at 0 for StochasticRank, whereas here every method on a booster shares one space, so StochasticRank is
  tuned over the baselines' L2 range too;
* SGLB: model shrink rate log-uniform on [1e-5, 1e-2], diffusion temperature log-uniform on [1e8, 1e11]
  (CatBoost's semantics, which :class:`stochrank.SGLB` follows).

Chosen here, not the paper's:

* StochasticRank's relevance shift mu uniform on [0, 1]. The paper draws mu log-uniform on [1e-2, 10]
  (for StochasticRank-R1); this benchmark does not, because with mu = 10 training on MQ2008 stops after
  about 4 trees (measured), so a large share of the paper's range would spend the budget on dead
  configurations;
* StochasticRank's noise scale sigma log-uniform on [0.1, 10] (around CatBoost's default 1; Appendix F
  gives no range for it -- its "noise strength" uniform on [0, 1] is the Bruch et al. 2020 baseline's);
* LightGBM's ``num_leaves`` log-uniform on [8, 256] and ``min_data_in_leaf`` on [1, 200] (the paper tunes
  CatBoost's symmetric trees, which have neither);
* the LambdaMART truncation (LightGBM ``lambdarank_truncation_level``, XGBoost
  ``lambdarank_num_pair_per_sample``): k + 3 (LightGBM's documented advice) or the booster's default.

XGBoost's ``min_child_weight`` is left at its default: it is a sum of Hessians, and the Hessians of
``rank:ndcg`` (lambda derivatives) and of stochrank (1 per document) live on different scales, so one range
would favour one of them.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "BASELINE",
    "BOOSTER_SPACES",
    "METHODS",
    "Choice",
    "LogUniform",
    "LogUniformInt",
    "Method",
    "Recipe",
    "Uniform",
    "available_methods",
]

BASELINE = "lgb-lambdarank"  # LambdaMART: every p-value is against it


# ----------------------------------------------------------------------------------- distributions
@dataclass(frozen=True)
class Uniform:
    """Uniform on [low, high]."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator) -> float:
        """Draw one value from ``rng``."""
        return float(rng.uniform(self.low, self.high))

    def __str__(self) -> str:
        """Return the distribution as the report writes it."""
        return f"U[{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class LogUniform:
    """Log-uniform on [low, high] (low > 0)."""

    low: float
    high: float

    def sample(self, rng: np.random.Generator) -> float:
        """Draw one value from ``rng``."""
        return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))

    def __str__(self) -> str:
        """Return the distribution as the report writes it."""
        return f"logU[{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class LogUniformInt:
    """Log-uniform on [low, high + 1), rounded down: integers from low to high."""

    low: int
    high: int

    def sample(self, rng: np.random.Generator) -> int:
        """Draw one value from ``rng``."""
        return min(self.high, int(math.exp(rng.uniform(math.log(self.low), math.log(self.high + 1)))))

    def __str__(self) -> str:
        """Return the distribution as the report writes it."""
        return f"logU{{{self.low}..{self.high}}}"


@dataclass(frozen=True)
class Choice:
    """Uniform over a finite set of values (``options`` may hold ``"k+3"``, resolved by the method)."""

    options: tuple[Any, ...]

    def sample(self, rng: np.random.Generator) -> Any:
        """Draw one option from ``rng`` (a plain Python value)."""
        value = self.options[int(rng.integers(len(self.options)))]
        return value.item() if isinstance(value, np.generic) else value

    def __str__(self) -> str:
        """Return the distribution as the report writes it."""
        return "{" + ", ".join(str(o) for o in self.options) + "}"


Distribution = Uniform | LogUniform | LogUniformInt | Choice

LEARNING_RATE = LogUniform(1e-3, 1.0)
DEPTH = Choice((6, 7, 8, 9, 10))
L2 = LogUniform(0.1, 10.0)

BOOSTER_SPACES: dict[str, dict[str, Distribution]] = {
    "lightgbm": {
        "learning_rate": LEARNING_RATE,
        "max_depth": DEPTH,
        "num_leaves": LogUniformInt(8, 256),
        "min_data_in_leaf": LogUniformInt(1, 200),
        "lambda_l2": L2,
    },
    "xgboost": {"learning_rate": LEARNING_RATE, "max_depth": DEPTH, "reg_lambda": L2},
    "catboost": {"learning_rate": LEARNING_RATE, "depth": DEPTH, "l2_leaf_reg": L2},
}

SR_SPACE: dict[str, Distribution] = {"sigma": LogUniform(0.1, 10.0), "mu": Uniform(0.0, 1.0)}
SGLB_SPACE: dict[str, Distribution] = {
    "temperature": LogUniform(1e8, 1e11),
    "shrink_rate": LogUniform(1e-5, 1e-2),
}
TRUNCATION = Choice(("k+3", "default"))


# ----------------------------------------------------------------------------------------- methods
@dataclass(frozen=True)
class Recipe:
    """What a trainer needs from a method for one fit.

    ``params`` are booster parameters merged over the sampled booster configuration; ``objective`` is a
    callable objective (LightGBM ``params["objective"]``, XGBoost ``obj=``) or None for a built-in one
    named in ``params``; ``estimator`` replaces ``catboost.CatBoostRanker`` when set (a factory taking
    the CatBoost keyword arguments).
    """

    params: dict[str, Any]
    objective: Any = None
    estimator: Callable[..., Any] | None = None


@dataclass(frozen=True)
class Method:
    """One benchmarked method: a ranking objective on a booster.

    Attributes
    ----------
    name : str
        Command-line name (``--methods``).
    booster : {"lightgbm", "xgboost", "catboost"}
        Which trainer fits it, and which :data:`BOOSTER_SPACES` entry it is tuned over.
    summary : str
        One line for the report.
    space : mapping
        The method's own parameters and their distributions (sampled on top of the booster's space).
    build : callable
        ``build(own_params, booster_params, k, seed) -> Recipe``.
    """

    name: str
    booster: str
    summary: str
    space: Mapping[str, Distribution]
    build: Callable[[dict[str, Any], dict[str, Any], int, int], Recipe]
    stochrank: bool = field(default=False)  # optimises with a stochrank objective (for the verdicts)


def _truncation(choice: str, k: int) -> dict[str, Any] | None:
    return None if choice == "default" else {"value": k + 3}


def _lgb_lambdarank(own: dict[str, Any], booster: dict[str, Any], k: int, seed: int) -> Recipe:
    params: dict[str, Any] = {"objective": "lambdarank"}
    trunc = _truncation(own["truncation"], k)
    if trunc is not None:
        params["lambdarank_truncation_level"] = trunc["value"]
    return Recipe(params)


def _lgb_xendcg(own: dict[str, Any], booster: dict[str, Any], k: int, seed: int) -> Recipe:
    return Recipe({"objective": "rank_xendcg"})


def _xgb_ndcg(own: dict[str, Any], booster: dict[str, Any], k: int, seed: int) -> Recipe:
    params: dict[str, Any] = {"objective": "rank:ndcg", "lambdarank_pair_method": "topk"}
    trunc = _truncation(own["truncation"], k)
    if trunc is not None:
        params["lambdarank_num_pair_per_sample"] = trunc["value"]
    return Recipe(params)


def _cb_loss(name: str, **keys: Any) -> Recipe:
    text = ";".join(f"{key}={value}" for key, value in keys.items())
    return Recipe({"loss_function": f"{name}:{text}" if text else name})


def _cb_yetirank(own: dict[str, Any], booster: dict[str, Any], k: int, seed: int) -> Recipe:
    return _cb_loss("YetiRank")


def _cb_lambdamart(own: dict[str, Any], booster: dict[str, Any], k: int, seed: int) -> Recipe:
    return _cb_loss("LambdaMart", metric="NDCG", top=k, type="Exp")


def _cb_stochasticrank(own: dict[str, Any], booster: dict[str, Any], k: int, seed: int) -> Recipe:
    # stochrank.catboost.CatBoostRanker(engine="native") translates the objective into CatBoost's
    # StochasticRank loss string and its langevin / diffusion_temperature / model_shrink_rate settings.
    objective = _sr_objective(own, k, seed, booster["learning_rate"], True)
    return Recipe({}, objective=objective, estimator=_wrapped_catboost(objective, "native"))


def _sr_objective(own: dict[str, Any], k: int, seed: int, learning_rate: float | None, sglb: bool) -> Any:
    import stochrank

    sglb_cfg = None
    if sglb:
        sglb_cfg = stochrank.SGLB(
            temperature=own["temperature"], shrink_rate=own["shrink_rate"], learning_rate=learning_rate
        )
    return stochrank.ndcg(k=k, sigma=own["sigma"], mu=own["mu"], seed=seed, sglb=sglb_cfg)


def _sr_lgb(sglb: bool) -> Callable[[dict[str, Any], dict[str, Any], int, int], Recipe]:
    def build(own: dict[str, Any], booster: dict[str, Any], k: int, seed: int) -> Recipe:
        # lgb.train hands its learning rate to the objective: SGLB reads it from there.
        return Recipe({}, objective=_sr_objective(own, k, seed, None, sglb))

    return build


def _sr_xgb(sglb: bool) -> Callable[[dict[str, Any], dict[str, Any], int, int], Recipe]:
    def build(own: dict[str, Any], booster: dict[str, Any], k: int, seed: int) -> Recipe:
        # xgb.train does not tell the objective its learning rate: SGLB gets it here.
        return Recipe({}, objective=_sr_objective(own, k, seed, booster["learning_rate"], sglb))

    return build


def _all_methods() -> list[Method]:
    truncation = {"truncation": TRUNCATION}
    return [
        Method("lgb-lambdarank", "lightgbm", "LightGBM lambdarank (LambdaMART), the baseline", truncation,
               _lgb_lambdarank),
        Method("lgb-xendcg", "lightgbm", "LightGBM rank_xendcg (Bruch 2020)", {}, _lgb_xendcg),
        Method("xgb-ndcg", "xgboost", "XGBoost rank:ndcg (LambdaMART, top-k pairs)", truncation, _xgb_ndcg),
        Method("cb-yetirank", "catboost", "CatBoost YetiRank", {}, _cb_yetirank),
        Method("cb-lambdamart", "catboost", "CatBoost LambdaMart:metric=NDCG;top=k;type=Exp", {},
               _cb_lambdamart),
        Method("cb-stochasticrank", "catboost", "CatBoost StochasticRank:metric=NDCG;top=k;type=Exp + SGLB "
               "(langevin), CatBoost's own implementation", {**SR_SPACE, **SGLB_SPACE}, _cb_stochasticrank,
               stochrank=True),
        Method("sr-lgb", "lightgbm", "stochrank.ndcg(k) on LightGBM", SR_SPACE, _sr_lgb(False),
               stochrank=True),
        Method("sr-lgb-sglb", "lightgbm", "stochrank.ndcg(k, sglb=SGLB(...)) on LightGBM",
               {**SR_SPACE, **SGLB_SPACE}, _sr_lgb(True), stochrank=True),
        Method("sr-xgb", "xgboost", "stochrank.ndcg(k) on XGBoost", SR_SPACE, _sr_xgb(False), stochrank=True),
        Method("sr-xgb-sglb", "xgboost", "stochrank.ndcg(k, sglb=SGLB(...)) on XGBoost",
               {**SR_SPACE, **SGLB_SPACE}, _sr_xgb(True), stochrank=True),
        Method("softrank-lgb", "lightgbm",
               "stochrank.softrank(k) (SoftRank, Taylor et al. 2008, exact rank distributions) on LightGBM",
               {"sigma": LogUniform(0.1, 10.0)}, _softrank_lgb),
        Method("sr-cb", "catboost", "stochrank.ndcg(k) gradients on CatBoost trees "
               "(stochrank.catboost.CatBoostRanker, engine='stochrank')", SR_SPACE, _sr_cb(False),
               stochrank=True),
        Method("sr-cb-sglb", "catboost", "stochrank.ndcg(k, sglb=SGLB(...)) gradients on CatBoost trees "
               "(the same settings as cb-stochasticrank, stochrank's gradients)", {**SR_SPACE, **SGLB_SPACE},
               _sr_cb(True), stochrank=True),
    ]  # fmt: skip


def _softrank_lgb(own: dict[str, Any], booster: dict[str, Any], k: int, seed: int) -> Recipe:
    from stochrank.objectives import softrank

    return Recipe({}, objective=softrank(k=k, sigma=own["sigma"], seed=seed))


def _wrapped_catboost(objective: Any, engine: str) -> Callable[..., Any]:
    from stochrank.catboost import CatBoostRanker

    def make(**params: Any) -> Any:
        return CatBoostRanker(objective, engine=engine, **params)

    return make


def _sr_cb(sglb: bool) -> Callable[[dict[str, Any], dict[str, Any], int, int], Recipe]:
    def build(own: dict[str, Any], booster: dict[str, Any], k: int, seed: int) -> Recipe:
        objective = _sr_objective(own, k, seed, booster["learning_rate"], sglb)
        return Recipe({}, objective=objective, estimator=_wrapped_catboost(objective, "stochrank"))

    return build


def available_methods() -> dict[str, Method]:
    """Return every method whose booster (``lightgbm``, ``xgboost``, ``catboost``) is installed.

    By name, in report order.
    """
    return {m.name: m for m in _all_methods() if importlib.util.find_spec(m.booster) is not None}


METHODS: dict[str, Method] = available_methods()
