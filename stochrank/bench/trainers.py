"""One fit per booster: train a method's recipe, early-stopped on validation NDCG@k, and score the splits.

Every trainer trains at most ``max_rounds`` trees and stops after ``patience`` rounds without improving
validation NDCG@k, keeping the best iteration. LightGBM and XGBoost early-stop on
:func:`stochrank.metrics.feval` in the convention the :class:`FitSettings` name: the report's (exp gain,
worst-case ties, queries without a relevant document skipped) for :mod:`stochrank.bench`, or the boosters'
own (exp gain, ties in input order, such a query counts 1) for the test suite's MQ2008 protocol. CatBoost
early-stops on its own ``NDCG:top=k;type=Exp`` (exp gain, worst-case ties, an empty query counts 1), an
increasing affine function of the report's NDCG@k on a fixed validation set that therefore stops at the
same iteration; its curve is converted to the report's convention.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._validation import check_choice, check_int
from ..conventions import offsets_from_sizes
from .methods import Recipe

__all__ = [
    "TRAINERS",
    "Fit",
    "FitSettings",
    "FoldData",
    "empty_queries",
    "set_numba_threads",
    "train_catboost",
    "train_lightgbm",
    "train_xgboost",
]


@dataclass(frozen=True)
class FoldData:
    """Train, validation and test splits of one fold, and the label ceiling for ERR.

    The splits are :class:`stochrank.datasets.RankingSplit`.
    """

    train: Any
    vali: Any
    test: Any
    max_grade: float


def empty_queries(split: Any) -> npt.NDArray[np.bool_]:
    """Return, per query of ``split``, True when it has no relevant document (label > 0)."""
    offsets = offsets_from_sizes(split.group, split.y.size)
    empty: npt.NDArray[np.bool_] = np.add.reduceat(split.y > 0, offsets[:-1]) == 0
    return empty


@dataclass(frozen=True)
class FitSettings:
    """Trees, early stopping, threads and the NDCG@k convention of the validation curve of one fit.

    ``ties`` and ``empty`` are :func:`stochrank.metrics.ndcg`'s conventions: ``("worst", "skip")`` is the
    report's (:mod:`stochrank.bench`), ``("input", "one")`` LightGBM's and XGBoost's own ``ndcg@k``.
    CatBoost's curve comes from its own metric, whose ties are worst-case: it takes ``ties="worst"`` only.
    Every field is validated on construction (``ValueError`` naming the field).
    """

    max_rounds: int
    patience: int
    k: int
    threads: int = 1
    ties: Literal["worst", "input"] = "worst"
    empty: Literal["skip", "one"] = "skip"

    def __post_init__(self) -> None:
        """Validate every field."""
        owner = "FitSettings"
        for name in ("max_rounds", "patience", "k", "threads"):
            check_int(getattr(self, name), name, owner, low=1)
        check_choice(self.ties, "ties", owner, ("worst", "input"))
        check_choice(self.empty, "empty", owner, ("skip", "one"))

    def feval(self) -> Any:
        """Return the validation metric as a LightGBM ``feval`` / XGBoost ``custom_metric``."""
        from stochrank.metrics import feval

        return feval("ndcg", k=self.k, gain="exp", ties=self.ties, empty=self.empty)


@dataclass
class Fit:
    """What a trainer returns: the validation curve (the settings' convention), trees kept, scores."""

    curve: npt.NDArray[np.float64]
    best_iteration: int  # number of trees kept (1-based)
    vali_scores: npt.NDArray[np.float64]
    test_scores: npt.NDArray[np.float64]


def set_numba_threads(threads: int) -> None:
    """Give Numba (stochrank's gradients) ``threads`` threads, at most as many as it started with."""
    import numba

    started = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]  # set when numba.config loads
    numba.set_num_threads(max(1, min(threads, started)))


def _scores(values: Any) -> npt.NDArray[np.float64]:
    # XGBoost predicts float32: widening is exact, so rankings, ties and metrics are unchanged.
    return np.asarray(values, dtype=np.float64)


def train_lightgbm(
    recipe: Recipe, booster: Mapping[str, Any], data: FoldData, seed: int, settings: FitSettings
) -> Fit:
    """Fit ``lgb.train`` with the booster configuration and the recipe's parameters and objective."""
    import lightgbm as lgb

    params = {**booster, **recipe.params, "metric": "None", "verbose": -1, "num_threads": settings.threads,
              "seed": seed}  # fmt: skip
    if recipe.objective is not None:
        params["objective"] = recipe.objective
    train = lgb.Dataset(data.train.X, data.train.y, group=data.train.group)
    vali = lgb.Dataset(data.vali.X, data.vali.y, group=data.vali.group, reference=train)
    history: dict[str, Any] = {}
    model = lgb.train(
        params, train, settings.max_rounds, valid_sets=[vali], valid_names=["vali"], feval=settings.feval(),
        callbacks=[lgb.early_stopping(settings.patience, verbose=False), lgb.record_evaluation(history)],
    )  # fmt: skip
    best = model.best_iteration

    def predict(split: Any) -> npt.NDArray[np.float64]:
        return _scores(model.predict(split.X, num_iteration=best))

    return Fit(_scores(history["vali"][settings.feval().name]), best, predict(data.vali), predict(data.test))


def train_xgboost(
    recipe: Recipe, booster: Mapping[str, Any], data: FoldData, seed: int, settings: FitSettings
) -> Fit:
    """Fit ``xgb.train`` (hist trees); a callable objective goes to ``obj=`` with no intercept fitted."""
    import xgboost as xgb

    threads = settings.threads
    params = {**booster, **recipe.params, "tree_method": "hist", "nthread": threads, "seed": seed,
              "disable_default_eval_metric": 1}  # fmt: skip
    if recipe.objective is not None:
        params.update(objective="rank:ndcg", base_score=0.0)  # gradients come from obj=; no intercept fit

    def dmatrix(split: Any) -> xgb.DMatrix:
        return xgb.DMatrix(split.X, split.y, group=split.group, nthread=threads)

    history: dict[str, Any] = {}
    model = xgb.train(
        params, dmatrix(data.train), settings.max_rounds, evals=[(dmatrix(data.vali), "vali")],
        obj=recipe.objective, custom_metric=settings.feval(), maximize=True,
        early_stopping_rounds=settings.patience, evals_result=history, verbose_eval=False,
    )  # fmt: skip
    best = model.best_iteration + 1

    def predict(split: Any) -> npt.NDArray[np.float64]:
        matrix = xgb.DMatrix(split.X, nthread=threads)
        return _scores(model.predict(matrix, iteration_range=(0, best), output_margin=True))

    return Fit(_scores(history["vali"][settings.feval().name]), best, predict(data.vali), predict(data.test))


def train_catboost(
    recipe: Recipe, booster: Mapping[str, Any], data: FoldData, seed: int, settings: FitSettings
) -> Fit:
    """Fit CatBoost's own ranker, or ``recipe.estimator`` (:class:`stochrank.catboost.CatBoostRanker`)."""
    import catboost as cb

    if settings.ties != "worst":
        raise ValueError(
            f"train_catboost early-stops on CatBoost's NDCG, which breaks ties worst-case; got "
            f"FitSettings(ties={settings.ties!r}). Use ties='worst'."
        )
    metric = f"NDCG:top={settings.k};type=Exp"
    common = {**booster, **recipe.params, "iterations": settings.max_rounds, "eval_metric": metric,
              "random_seed": seed, "thread_count": settings.threads, "verbose": False,
              "allow_writing_files": False}  # fmt: skip
    if recipe.estimator is None:  # CatBoost's own ranker with a built-in loss
        model = cb.CatBoostRanker(**common, od_type="Iter", od_wait=settings.patience, use_best_model=True)

        def pool(split: Any) -> cb.Pool:
            return cb.Pool(split.X, split.y, group_id=split.query_index)

        model.fit(pool(data.train), eval_set=pool(data.vali))
        history, best = model.get_evals_result()["validation"][metric], model.get_best_iteration() + 1
    else:  # stochrank.catboost.CatBoostRanker (native StochasticRank or stochrank gradients)
        from stochrank.catboost import CatBoostDeviationWarning

        model = recipe.estimator(**common)
        with warnings.catch_warnings():
            # The native engine is CatBoost's reference implementation, documented deviations included.
            warnings.simplefilter("ignore", CatBoostDeviationWarning)
            model.fit(data.train.X, data.train.y, group=data.train.group, eval_set=(data.vali.X, data.vali.y),
                      eval_group=data.vali.group, early_stopping_rounds=settings.patience)  # fmt: skip
        history, best = model.evals_result_["validation"][metric], model.best_iteration_ + 1
    curve = _scores(history)
    if settings.empty == "skip":  # CatBoost counts a query without relevant documents as NDCG 1
        e = float(np.mean(empty_queries(data.vali)))
        curve = (curve - e) / (1.0 - e)
    return Fit(curve, best, _scores(model.predict(data.vali.X)), _scores(model.predict(data.test.X)))


Trainer = Callable[[Recipe, Mapping[str, Any], FoldData, int, FitSettings], Fit]
TRAINERS: dict[str, Trainer] = {
    "lightgbm": train_lightgbm,
    "xgboost": train_xgboost,
    "catboost": train_catboost,
}
