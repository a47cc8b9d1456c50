"""One fit per booster: train a method's recipe, early-stopped on the validation target metric, and score.

Every trainer trains at most ``max_rounds`` trees and stops after ``patience`` rounds without improving the
validation metric of the :class:`FitSettings` (NDCG@k, MRR, MRR@k or ERR@k), keeping the best iteration.
LightGBM and XGBoost early-stop on :func:`stochrank.metrics.feval` in the convention the settings name: the
report's (worst-case ties, queries without a relevant document skipped) for :mod:`stochrank.bench`, or the
boosters' own (ties in input order, such a query counts 1) for the test suite's MQ2008 protocol. CatBoost
early-stops on its own ``NDCG:top=k;type=Exp|Base`` or ``MRR[:top=k]`` (worst-case ties; an empty query
counts 1 for NDCG, 0 for MRR), an increasing affine function of the report's metric on a fixed validation
set that therefore stops at the same iteration; its curve is converted to the report's convention. CatBoost's
ERR reads labels as probabilities, not grades, so CatBoost cannot early-stop on the report's ERR@k.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._validation import check_choice, check_int
from ..conventions import offsets_from_sizes
from .methods import Recipe
from .target import Target

__all__ = [
    "TRAINERS",
    "Fit",
    "FitSettings",
    "FoldData",
    "catboost_metric",
    "empty_queries",
    "lightgbm_hessian_per_document",
    "set_numba_threads",
    "train_catboost",
    "train_lightgbm",
    "train_xgboost",
    "xgboost_hessian_per_document",
]


@dataclass(frozen=True)
class FoldData:
    """Train, validation and test splits of one fold, the label ceiling for ERR and the dataset's NDCG gain.

    The splits are :class:`stochrank.datasets.RankingSplit`.
    """

    train: Any
    vali: Any
    test: Any
    max_grade: float
    gain: str = "exp"


def empty_queries(split: Any) -> npt.NDArray[np.bool_]:
    """Return, per query of ``split``, True when it has no relevant document (label > 0)."""
    offsets = offsets_from_sizes(split.group, split.y.size)
    empty: npt.NDArray[np.bool_] = np.add.reduceat(split.y > 0, offsets[:-1]) == 0
    return empty


@dataclass(frozen=True)
class FitSettings:
    """Trees, early stopping, threads and the validation metric (and its convention) of one fit.

    The metric is ``metric`` at cutoff ``k`` (None: whole list, MRR only) with NDCG's ``gain`` and ERR's
    ``max_grade`` (:class:`~stochrank.bench.target.Target`). ``ties`` and ``empty`` are
    :mod:`stochrank.metrics`' conventions: ``("worst", "skip")`` is the report's (:mod:`stochrank.bench`),
    ``("input", "one")`` LightGBM's and XGBoost's own ``ndcg@k``. CatBoost's curve comes from its own metric,
    whose ties are worst-case: it takes ``ties="worst"`` only. Every field is validated on construction
    (``ValueError`` naming the field).
    """

    max_rounds: int
    patience: int
    k: int | None
    threads: int = 1
    ties: Literal["worst", "input"] = "worst"
    empty: Literal["skip", "one"] = "skip"
    metric: str = "ndcg"
    gain: str = "exp"
    max_grade: float = 2.0

    def __post_init__(self) -> None:
        """Validate every field."""
        owner = "FitSettings"
        for name in ("max_rounds", "patience", "threads"):
            check_int(getattr(self, name), name, owner, low=1)
        check_choice(self.metric, "metric", owner, ("ndcg", "mrr", "err"))
        if self.k is not None or self.metric != "mrr":
            check_int(self.k, "k", owner, low=1)
        check_choice(self.ties, "ties", owner, ("worst", "input"))
        check_choice(self.empty, "empty", owner, ("skip", "one"))
        check_choice(self.gain, "gain", owner, ("exp", "linear"))

    @property
    def target(self) -> Target:
        """The validation metric as a :class:`~stochrank.bench.target.Target`."""
        return Target(self.metric, self.k, self.gain, self.max_grade)

    def feval(self) -> Any:
        """Return the validation metric as a LightGBM ``feval`` / XGBoost ``custom_metric``."""
        from stochrank.metrics import feval

        conventions = self.target.conventions()
        k = conventions.pop("k")
        return feval(self.metric, k=k, ties=self.ties, empty=self.empty, **conventions)


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
    """Fit ``lgb.train`` with the booster configuration and the recipe's parameters and objective.

    An ``l2_documents`` entry of ``booster`` becomes ``lambda_l2`` = that many times the method's
    :func:`lightgbm_hessian_per_document` (the bench's LightGBM space, :mod:`~stochrank.bench.spaces`).
    """
    import lightgbm as lgb

    params = {**booster, **recipe.params, "metric": "None", "verbose": -1, "num_threads": settings.threads,
              "seed": seed}  # fmt: skip
    if recipe.objective is not None:
        params["objective"] = recipe.objective
    _to_hessian_units(
        params, {"l2_documents": "lambda_l2"},
        lambda: lightgbm_hessian_per_document(params, data.train, recipe.objective),
    )  # fmt: skip
    train = lgb.Dataset(data.train.X, data.train.y, group=data.train.group)
    vali = lgb.Dataset(data.vali.X, data.vali.y, group=data.vali.group, reference=train)
    history: dict[str, Any] = {}
    # An iteration whose tree cannot split stores no tree and leaves the scores as they are; a stochastic
    # objective may split again at the next call. Predicting with num_iteration counts stored trees, so the
    # model kept at iteration i is its first trees_after[i - 1] trees (tests/test_bench.py).
    trees_after: list[int] = []

    def count_trees(env: Any) -> None:
        trees_after.append(env.model.num_trees())

    count_trees.order = 5  # type: ignore[attr-defined]  # before early stopping (order 30) may stop
    model = lgb.train(
        params, train, settings.max_rounds, valid_sets=[vali], valid_names=["vali"], feval=settings.feval(),
        callbacks=[count_trees, lgb.early_stopping(settings.patience, verbose=False),
                   lgb.record_evaluation(history)],
    )  # fmt: skip
    best = model.best_iteration
    kept = trees_after[best - 1]

    def predict(split: Any) -> npt.NDArray[np.float64]:
        if kept == 0:  # no tree yet: LightGBM reads num_iteration=0 as "every tree"
            return np.zeros(split.X.shape[0])
        return _scores(model.predict(split.X, num_iteration=kept))

    return Fit(_scores(history["vali"][settings.feval().name]), best, predict(data.vali), predict(data.test))


def train_xgboost(
    recipe: Recipe, booster: Mapping[str, Any], data: FoldData, seed: int, settings: FitSettings
) -> Fit:
    """Fit ``xgb.train`` (hist trees); a callable objective goes to ``obj=`` with no intercept fitted.

    ``min_leaf_documents`` and ``l2_documents`` entries of ``booster`` become ``min_child_weight`` and
    ``reg_lambda`` = that many times the method's :func:`xgboost_hessian_per_document` (the bench's XGBoost
    space, :mod:`~stochrank.bench.spaces`).
    """
    import xgboost as xgb

    threads = settings.threads
    params = {**booster, **recipe.params, "tree_method": "hist", "nthread": threads, "seed": seed,
              "disable_default_eval_metric": 1}  # fmt: skip
    if recipe.objective is not None:
        params.update(objective="rank:ndcg", base_score=0.0)  # gradients come from obj=; no intercept fit

    def dmatrix(split: Any) -> xgb.DMatrix:
        # rank:map accepts binary labels only: MRR's relevance, label > 0 (the validation MRR is unchanged).
        labels = (split.y > 0).astype(np.float64) if recipe.binary_labels else split.y
        return xgb.DMatrix(split.X, labels, group=split.group, nthread=threads)

    train = dmatrix(data.train)
    _to_hessian_units(
        params, {"min_leaf_documents": "min_child_weight", "l2_documents": "reg_lambda"},
        lambda: xgboost_hessian_per_document(params, train, recipe.objective),
    )  # fmt: skip
    history: dict[str, Any] = {}
    model = xgb.train(
        params, train, settings.max_rounds, evals=[(dmatrix(data.vali), "vali")],
        obj=recipe.objective, custom_metric=settings.feval(), maximize=True,
        early_stopping_rounds=settings.patience, evals_result=history, verbose_eval=False,
    )  # fmt: skip
    best = model.best_iteration + 1

    def predict(split: Any) -> npt.NDArray[np.float64]:
        matrix = xgb.DMatrix(split.X, nthread=threads)
        return _scores(model.predict(matrix, iteration_range=(0, best), output_margin=True))

    return Fit(_scores(history["vali"][settings.feval().name]), best, predict(data.vali), predict(data.test))


def _to_hessian_units(
    params: dict[str, Any], units: Mapping[str, str], per_document: Callable[[], float]
) -> None:
    # Replace each documents'-worth entry of params (a key of units) by the booster's parameter in Hessian
    # units (its value) times the mean Hessian per document, measured once and only when needed.
    documents = {units[name]: params.pop(name) for name in list(params) if name in units}
    if documents:
        mean = per_document()
        params.update({unit: count * mean for unit, count in documents.items()})


def xgboost_hessian_per_document(params: Mapping[str, Any], train: Any, objective: Any = None) -> float:
    """Return XGBoost's mean Hessian per document at the first tree: its root's cover over the documents.

    ``min_child_weight`` (a sum of Hessians) and ``reg_lambda`` (added to one) are in Hessian units, so
    their unit is this mean: the Hessians of ``rank:ndcg`` (lambda derivatives, 0.016-0.17 per document on
    generated data by its pair settings) and of stochrank (normalised to mean 1 over the documents with
    curvature) differ by up to 60 times, and one value asks their leaves for different numbers of
    documents. One tree is trained with ``params`` on ``train`` (an ``xgboost.DMatrix``), with a deep copy
    of the callable ``objective`` (None: the built-in one the parameters name) so that the objective's own
    call count, which seeds its noise, is left untouched (stochrank objectives deep-copy into fresh ones; a
    plain function is copied by reference). Row subsampling is switched off for the measurement: unsampled
    rows would add no Hessian to the cover.
    """
    import xgboost as xgb

    obj = None if objective is None else copy.deepcopy(objective)
    model = xgb.train({**params, "min_child_weight": 0.0, "subsample": 1.0}, train, 1, obj=obj)
    root = json.loads(model.get_dump(dump_format="json", with_stats=True)[0])
    cover: float = root["cover"]
    return cover / int(train.num_row())


def lightgbm_hessian_per_document(params: Mapping[str, Any], split: Any, objective: Any = None) -> float:
    """Return LightGBM's mean Hessian per document at the first tree: the root's Hessian sum per document.

    ``lambda_l2`` is added to a leaf's Hessian sum, so its unit is this mean: ``lambdarank``'s Hessians
    (0.032-0.065 per document on MQ2008 fold 1 over its truncation levels and ``lambdarank_norm``) and
    stochrank's (0.52 there: mean 1 over the documents with curvature, none in queries without a relevant
    document) differ by 8-16 times there, 12-25 times on generated data. One stump is trained with
    ``params`` on ``split`` (a :class:`~stochrank.datasets.RankingSplit`), with a deep copy of the callable
    ``objective`` (None: the built-in one the parameters name; see :func:`xgboost_hessian_per_document` for
    why) and bagging off; the root's Hessian sum does not depend on the tree's size. A first tree that
    cannot split (every gradient zero) gives 0, as XGBoost's cover does.
    """
    import lightgbm as lgb

    stump = {**params, "num_leaves": 2, "max_depth": -1, "min_data_in_leaf": 1, "bagging_fraction": 1.0}
    if objective is not None:
        stump["objective"] = copy.deepcopy(objective)
    model = lgb.train(stump, lgb.Dataset(split.X, split.y, group=split.group), 1)
    trees = model.dump_model()["tree_info"]
    if not trees or "internal_weight" not in trees[0]["tree_structure"]:
        return 0.0  # no split, so no Hessian sum is recorded; nothing to regularise at this scale either
    root = trees[0]["tree_structure"]
    weight: float = root["internal_weight"]
    return weight / int(split.y.size)


def catboost_metric(settings: FitSettings) -> str:
    """Return CatBoost's eval metric for the settings' target (worst-case ties); ``ValueError`` for ERR."""
    if settings.metric == "ndcg":
        return f"NDCG:top={settings.k};type={'Exp' if settings.gain == 'exp' else 'Base'}"
    if settings.metric == "mrr":  # relevant: label > 0.5, i.e. > 0 for integer grades
        return "MRR" if settings.k is None else f"MRR:top={settings.k}"
    raise ValueError(
        f"CatBoost cannot early-stop on {settings.target.label} as reported: its ERR reads labels as "
        "probabilities in [0, 1], the report's ERR maps grades r to (2^r - 1)/2^max_grade. Use a LightGBM or "
        "XGBoost method for --metric err@k."
    )


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
    metric = catboost_metric(settings)
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
    if settings.empty == "skip":  # CatBoost counts a query without relevant documents as NDCG 1, MRR 0
        e = float(np.mean(empty_queries(data.vali)))
        curve = (curve - (e if settings.metric == "ndcg" else 0.0)) / (1.0 - e)
    return Fit(curve, best, _scores(model.predict(data.vali.X)), _scores(model.predict(data.test.X)))


Trainer = Callable[[Recipe, Mapping[str, Any], FoldData, int, FitSettings], Fit]
TRAINERS: dict[str, Trainer] = {
    "lightgbm": train_lightgbm,
    "xgboost": train_xgboost,
    "catboost": train_catboost,
}
