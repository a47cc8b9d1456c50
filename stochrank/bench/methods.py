"""The benchmark's methods and their random-search spaces.

A :class:`Method` is one ranking objective on one booster: its own search space (objective parameters
only) and a ``build`` function that turns a sampled configuration into the booster's parameters for a target
metric (:class:`~stochrank.bench.target.Target`). The booster's own parameters (learning rate, tree size,
regularisation) come from :data:`BOOSTER_SPACES`, one space per booster shared by every method on it, so
methods on one booster are tuned over the same trees.

**Objectives per target** (``--metric``). stochrank methods optimise the target itself: ``stochrank.ndcg(k,
gain=<dataset's>)``, ``stochrank.mrr(k)`` or ``stochrank.err(k, max_grade=<dataset's top grade>)``; only
``sr-lgb-ndcg`` and ``sr-xgb-ndcg`` optimise ``stochrank.ndcg`` at the target's cut-off whatever the target
(the whole list for MRR), as the LambdaMART baselines aim at NDCG: against ``sr-lgb`` / ``sr-xgb`` they
separate the aim from the gradient estimator, so they run non-NDCG targets only. Baselines
keep their own objective: LightGBM's lambdarank and XGBoost's ``rank:ndcg`` optimise NDCG (with the dataset's
gain) whatever the target; ``xgb-map`` (XGBoost ``rank:map`` on the binary relevance label > 0, which is
MRR's; for a query with one relevant document AP equals RR) runs for MRR targets only; CatBoost's
``LambdaMart`` uses ``metric=NDCG`` or ``metric=MRR`` (CatBoost's ERR modes read labels as probabilities, so
CatBoost methods do not run ERR targets, and CatBoost's StochasticRank crashes on MRR@k); YetiRank is
CatBoost's classic YetiRank for NDCG targets and its YetiLoss ``mode=MRR`` (Lyzhin et al. 2023) for MRR
targets; SoftRank optimises NDCG only (:meth:`Method.unsupported` says why a method does not run a target).

The search spaces and their ranges: :mod:`stochrank.bench.spaces`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .spaces import (
    BOOSTER_SPACES,
    LGB_LAMBDARANK_SPACE,
    NEWTON_SPACE,
    SGLB_SPACE,
    SIGMA,
    TRAINING_CUTOFF,
    UNIT_SPACE,
    XGB_LAMBDARANK_SPACE,
    Choice,
    Distribution,
    LogUniform,
    LogUniformInt,
    Uniform,
)

if TYPE_CHECKING:
    from .target import Target

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
    "training_cutoff",
]

BASELINE = "lgb-lambdarank"  # LambdaMART: every p-value is against it


# ----------------------------------------------------------------------------------------- methods
@dataclass(frozen=True)
class Recipe:
    """What a trainer needs from a method for one fit.

    ``params`` are booster parameters merged over the sampled booster configuration; ``objective`` is a
    callable objective (LightGBM ``params["objective"]``, XGBoost ``obj=``) or None for a built-in one
    named in ``params``; ``estimator`` replaces ``catboost.CatBoostRanker`` when set (a factory taking
    the CatBoost keyword arguments); ``binary_labels`` trains (and validates) on ``label > 0`` (XGBoost).
    """

    params: dict[str, Any]
    objective: Any = None
    estimator: Callable[..., Any] | None = None
    binary_labels: bool = False


Build = Callable[[dict[str, Any], dict[str, Any], "Target", int], Recipe]


def _all_targets(target: Target) -> str | None:
    return None


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
        One line for the report; ``{sr}`` stands for the stochrank objective of the target (e.g.
        ``stochrank.mrr()``), ``{ndcg}`` for the NDCG objective at the target's cut-off, ``{cut}`` for the
        training cut-offs a Newton-leaf method is tuned over, ``{cb}`` for CatBoost's metric mode (e.g.
        ``NDCG;top=5;type=Exp``) and ``{yeti}`` for its YetiRank loss.
    space : mapping
        The method's own parameters and their distributions (sampled on top of the booster's space).
    build : callable
        ``build(own_params, booster_params, target, seed) -> Recipe``.
    stochrank : bool
        Whether it optimises with a stochrank objective (for the verdicts).
    unsupported : callable
        ``unsupported(target)``: why the method does not run that target, or None when it does.
    """

    name: str
    booster: str
    summary: str
    space: Mapping[str, Distribution]
    build: Build
    stochrank: bool = field(default=False)
    unsupported: Callable[[Target], str | None] = field(default=_all_targets)

    def describe(self, target: Target) -> str:
        """Return :attr:`summary` for ``target`` (its objective named)."""
        return self.summary.format(
            sr=sr_call(target),
            ndcg=sr_call(target, aim_ndcg=True),
            cb=_cb_mode(target),
            yeti=_cb_yeti_mode(target),
            cut=_cutoff_words(target),
        )


def _cutoff_words(target: Target) -> str:
    if target.k is None:
        return "whole list"
    *deeper, deepest = (str(training_cutoff(option, target)) for option in TRAINING_CUTOFF.options)
    return f"trained at the cut-off {', '.join(deeper)} or {deepest}, tuned"


def sr_call(target: Target, aim_ndcg: bool = False) -> str:
    """Return the stochrank objective a stochrank method optimises for ``target``, as code.

    ``aim_ndcg``: the NDCG-aimed methods' objective, NDCG at the target's cut-off whatever the metric.
    """
    if target.metric == "ndcg" or aim_ndcg:
        gain = "" if target.gain == "exp" else ", gain='linear'"
        return f"stochrank.ndcg(k={target.k}{gain})"
    if target.metric == "mrr":
        return "stochrank.mrr()" if target.k is None else f"stochrank.mrr(k={target.k})"
    return f"stochrank.err(k={target.k}, max_grade={target.max_grade:g})"


def _sr_objective(own: dict[str, Any], target: Target, seed: int, learning_rate: float | None, sglb: bool,
                  aim_ndcg: bool = False) -> Any:  # fmt: skip
    import stochrank

    sglb_cfg = None
    if sglb:
        sglb_cfg = stochrank.SGLB(
            temperature=own["temperature"], shrink_rate=own["shrink_rate"], learning_rate=learning_rate
        )
    # Newton-leaf methods tune neither sigma nor mu (the objective's defaults), only the training cut-off.
    common: dict[str, Any] = {"seed": seed, "sglb": sglb_cfg}
    common.update((name, own[name]) for name in ("sigma", "mu") if name in own)
    k = training_cutoff(own.get("training_cutoff", "k"), target)
    if target.metric == "ndcg" or aim_ndcg:
        return stochrank.ndcg(k=k, gain=target.gain, **common)  # type: ignore[arg-type]
    if target.metric == "mrr":
        return stochrank.mrr(k=k, **common)
    return stochrank.err(k=k, max_grade=target.max_grade, **common)


def training_cutoff(option: str, target: Target) -> int | None:
    """Resolve a :data:`~.spaces.TRAINING_CUTOFF` option (``"k"``, ``"2k"``, ``"4k"``) against the target's k.

    A whole-list target (k None) keeps the whole list whatever the option.
    """
    if target.k is None:
        return None
    return int(option.removesuffix("k") or 1) * target.k


def _label_gain(target: Target) -> list[float]:
    return [float(g) for g in range(int(target.max_grade) + 1)]


def _lgb_lambdarank(own: dict[str, Any], booster: dict[str, Any], target: Target, seed: int) -> Recipe:
    params: dict[str, Any] = {"objective": "lambdarank", **own}
    if target.gain == "linear":
        params["label_gain"] = _label_gain(target)
    return Recipe(params)


def _lgb_xendcg(own: dict[str, Any], booster: dict[str, Any], target: Target, seed: int) -> Recipe:
    return Recipe({"objective": "rank_xendcg"})


def _xgb_lambdamart(objective: str) -> Build:
    def build(own: dict[str, Any], booster: dict[str, Any], target: Target, seed: int) -> Recipe:
        params: dict[str, Any] = {"objective": objective, **own}
        if objective == "rank:ndcg" and target.gain == "linear":
            params["ndcg_exp_gain"] = False
        return Recipe(params, binary_labels=objective == "rank:map")

    return build


def _cb_mode(target: Target) -> str:
    if target.metric == "mrr":  # CatBoost's LambdaMart MRR mode has no cut-off (it ignores top)
        return "MRR"
    return f"NDCG;top={target.k};type={'Exp' if target.gain == 'exp' else 'Base'}"


def _cb_yeti_mode(target: Target) -> str:
    if target.metric == "mrr":  # YetiLoss (CatBoost >= 1.2.1) aimed at MRR
        return "YetiRank:mode=MRR" + ("" if target.k is None else f";top={target.k}")
    return "YetiRank"  # the classic YetiRank (NDCG-aimed) for NDCG targets, as in the published comparisons


def _cb_yetirank(own: dict[str, Any], booster: dict[str, Any], target: Target, seed: int) -> Recipe:
    return Recipe({"loss_function": _cb_yeti_mode(target)})


def _cb_lambdamart(own: dict[str, Any], booster: dict[str, Any], target: Target, seed: int) -> Recipe:
    return Recipe({"loss_function": f"LambdaMart:metric={_cb_mode(target)}"})


def _cb_stochasticrank(own: dict[str, Any], booster: dict[str, Any], target: Target, seed: int) -> Recipe:
    # stochrank.catboost.CatBoostRanker(engine="native") translates the objective into CatBoost's
    # StochasticRank loss string and its langevin / diffusion_temperature / model_shrink_rate settings.
    objective = _sr_objective(own, target, seed, booster["learning_rate"], True)
    return Recipe({}, objective=objective, estimator=_wrapped_catboost(objective, "native"))


def _sr_lgb(sglb: bool, aim_ndcg: bool = False) -> Build:
    def build(own: dict[str, Any], booster: dict[str, Any], target: Target, seed: int) -> Recipe:
        # lgb.train hands its learning rate to the objective: SGLB reads it from there.
        return Recipe({}, objective=_sr_objective(own, target, seed, None, sglb, aim_ndcg))

    return build


def _sr_xgb(sglb: bool, aim_ndcg: bool = False) -> Build:
    def build(own: dict[str, Any], booster: dict[str, Any], target: Target, seed: int) -> Recipe:
        # xgb.train does not tell the objective its learning rate: SGLB gets it here.
        objective = _sr_objective(own, target, seed, booster["learning_rate"], sglb, aim_ndcg)
        return Recipe({}, objective=objective)

    return build


def _softrank_lgb(own: dict[str, Any], booster: dict[str, Any], target: Target, seed: int) -> Recipe:
    from stochrank.objectives import softrank

    return Recipe({}, objective=softrank(k=target.k, sigma=own["sigma"], gain=target.gain, seed=seed))  # type: ignore[arg-type]


def _wrapped_catboost(objective: Any, engine: str) -> Callable[..., Any]:
    from stochrank.catboost import CatBoostRanker

    def make(**params: Any) -> Any:
        return CatBoostRanker(objective, engine=engine, **params)

    return make


def _sr_cb(sglb: bool) -> Build:
    def build(own: dict[str, Any], booster: dict[str, Any], target: Target, seed: int) -> Recipe:
        objective = _sr_objective(own, target, seed, booster["learning_rate"], sglb)
        return Recipe({}, objective=objective, estimator=_wrapped_catboost(objective, "stochrank"))

    return build


# ------------------------------------------------------------------------------- supported targets
def _ndcg_only(target: Target) -> str | None:
    return None if target.metric == "ndcg" else f"optimises NDCG only; the target is {target.label}"


def _not_ndcg(target: Target) -> str | None:
    return "for NDCG targets it is the direct method (sr-lgb, sr-xgb)" if target.metric == "ndcg" else None


def _mrr_only(target: Target) -> str | None:
    return None if target.metric == "mrr" else (
        f"rank:map's binary relevance (label > 0) is MRR's; for {target.label} graded labels count"
    )  # fmt: skip


def _catboost_targets(target: Target) -> str | None:
    if target.metric == "err":
        return (
            "CatBoost's ERR (metric and LambdaMart/StochasticRank modes) reads labels as probabilities, "
            "not grades, so it can neither early-stop on nor optimise the report's ERR"
        )
    return None


def _catboost_native_targets(target: Target) -> str | None:
    if target.metric == "mrr" and target.k is not None:
        return "CatBoost 1.2.10's StochasticRank:metric=MRR;top=k crashes (segmentation fault) on MQ2008"
    return _catboost_targets(target)


def _all_methods() -> list[Method]:
    lgb_lr, xgb_lr = LGB_LAMBDARANK_SPACE, XGB_LAMBDARANK_SPACE
    sr_unit = {**UNIT_SPACE, **SGLB_SPACE}
    return [
        Method("lgb-lambdarank", "lightgbm", "LightGBM lambdarank (LambdaMART; optimises NDCG for every "
               "target), the baseline", lgb_lr, _lgb_lambdarank),
        Method("lgb-xendcg", "lightgbm", "LightGBM rank_xendcg (Bruch 2020; an NDCG surrogate for every "
               "target)", {}, _lgb_xendcg),
        Method("xgb-ndcg", "xgboost", "XGBoost rank:ndcg (LambdaMART; optimises NDCG for every target)",
               xgb_lr, _xgb_lambdamart("rank:ndcg")),
        Method("xgb-map", "xgboost", "XGBoost rank:map (LambdaMART on MAP, labels binarised at > 0; MRR "
               "targets only)", xgb_lr, _xgb_lambdamart("rank:map"), unsupported=_mrr_only),
        Method("cb-yetirank", "catboost", "CatBoost {yeti}", {}, _cb_yetirank,
               unsupported=_catboost_targets),
        Method("cb-lambdamart", "catboost", "CatBoost LambdaMart:metric={cb}", {}, _cb_lambdamart,
               unsupported=_catboost_targets),
        Method("cb-stochasticrank", "catboost", "CatBoost's own StochasticRank for {sr} + SGLB (langevin), "
               "unit Hessian", sr_unit, _cb_stochasticrank, stochrank=True,
               unsupported=_catboost_native_targets),
        Method("sr-lgb", "lightgbm", "{sr} on LightGBM (Newton leaves; {cut})", NEWTON_SPACE, _sr_lgb(False),
               stochrank=True),
        Method("sr-lgb-sglb", "lightgbm", "{sr} with sglb=SGLB(...) on LightGBM (unit Hessian)", sr_unit,
               _sr_lgb(True), stochrank=True),
        Method("sr-lgb-ndcg", "lightgbm", "{ndcg} on LightGBM, aimed at NDCG for every target as lambdarank "
               "is (Newton leaves; {cut}); non-NDCG targets only", NEWTON_SPACE, _sr_lgb(False, True),
               stochrank=True, unsupported=_not_ndcg),
        Method("sr-xgb", "xgboost", "{sr} on XGBoost (Newton leaves; {cut})", NEWTON_SPACE, _sr_xgb(False),
               stochrank=True),
        Method("sr-xgb-ndcg", "xgboost", "{ndcg} on XGBoost, aimed at NDCG for every target as rank:ndcg "
               "is (Newton leaves; {cut}); non-NDCG targets only", NEWTON_SPACE, _sr_xgb(False, True),
               stochrank=True, unsupported=_not_ndcg),
        Method("sr-xgb-sglb", "xgboost", "{sr} with sglb=SGLB(...) on XGBoost (unit Hessian)", sr_unit,
               _sr_xgb(True), stochrank=True),
        Method("softrank-lgb", "lightgbm",
               "stochrank.softrank(k) (SoftRank, Taylor et al. 2008, exact rank distributions) on LightGBM",
               {"sigma": SIGMA}, _softrank_lgb, unsupported=_ndcg_only),
        Method("sr-cb", "catboost", "{sr} gradients on CatBoost trees (stochrank.catboost.CatBoostRanker, "
               "engine='stochrank', Newton leaves; {cut})", NEWTON_SPACE, _sr_cb(False), stochrank=True,
               unsupported=_catboost_targets),
        Method("sr-cb-sglb", "catboost", "{sr} with sglb=SGLB(...) gradients on CatBoost trees (the settings "
               "of cb-stochasticrank, stochrank's gradients)", sr_unit, _sr_cb(True), stochrank=True,
               unsupported=_catboost_targets),
    ]  # fmt: skip


def available_methods() -> dict[str, Method]:
    """Return every method whose booster (``lightgbm``, ``xgboost``, ``catboost``) is installed.

    By name, in report order.
    """
    return {m.name: m for m in _all_methods() if importlib.util.find_spec(m.booster) is not None}


METHODS: dict[str, Method] = available_methods()
