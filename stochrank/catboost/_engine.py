r"""The two training engines of :class:`CatBoostRanker`: CatBoost's own StochasticRank, and stochrank's.

:func:`fit_native` trains CatBoost's built-in loss (:mod:`._native` maps the objective to it).
:class:`StochrankEngine` boosts stochrank's gradients with one CatBoost tree per iteration.

**The gradient table.** The training Pool is built and quantized once, its labels encoding the row
index (exactly, also past float32's 2**24 exact integers: :func:`._data._encode_rows`). The loss CatBoost
fits each tree with is a Python object whose ``calc_ders_range`` returns the rows of a table
``(-grad, -hess)`` indexed by the decoded label (CatBoost hands Python losses blocks of rows without their
queries; the label says which rows). With ``leaf_estimation_method='Newton'`` and one leaf iteration,
each leaf is ``lr * sum(-grad) / (sum(hess) + l2_leaf_reg)`` over its documents: LightGBM's leaf for
the same ``(grad, hess)`` with ``lambda_l2 = l2_leaf_reg``, and, since stochrank's Hessian is the query
weight, CatBoost's own ``leaf_estimation_method=Gradient`` leaf for StochasticRank. Measured on MQ2008
fold 1 (9,630 rows, depth 6, 1 thread, medians of 25 fits): one such tree costs 8.2 ms, a built-in RMSE
tree on the same quantized Pool 8.7 ms, so the Python loss adds nothing measurable; rebuilding and
quantizing a Pool with ``label = -grad`` every iteration costs ~76 ms per tree, and RMSE with the gradient
as ``baseline`` over a constant label is refused by CatBoost ("All train targets are equal"). The
per-tree predictions use one thread unless ``thread_count`` is given: ~0.2 ms, where CatBoost's all-core
default waits ~4 ms for its thread pool on a busy machine.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..objectives import SGLB
from ..protocol import RankingTarget
from ._data import _decode_rows, _encode_rows, _RankingData
from ._native import CatBoostDeviationWarning, native_training

__all__ = ["MAXIMISED_METRICS", "UNSUPPORTED_PARAMS", "Fitted", "StochrankEngine", "fit_native"]

# The stochrank call protocol: grad, hess = objective(preds, RankingTarget), gradients for minimisation.
Objective = Callable[[npt.NDArray[np.float64], RankingTarget], tuple[Any, Any]]

# Meaningless when CatBoost fits one tree per call to a fixed gradient table.
UNSUPPORTED_PARAMS = {
    "boosting_type": (
        "ordered boosting needs per-permutation gradients of the loss; the loop is Plain boosting"
    ),
    "leaf_estimation_iterations": (
        "the gradient table is fixed for the iteration; more leaf steps would repeat it"
    ),
    "leaf_estimation_backtracking": "the gradient table is fixed for the iteration",
    "boost_from_average": "the loop starts from 0, as CatBoost's StochasticRank does",
    "custom_metric": "the loop evaluates only eval_metric",
    "od_type": "use early_stopping_rounds",
    "od_wait": "use early_stopping_rounds",
    "od_pval": "use early_stopping_rounds",
    "best_model_min_trees": "use early_stopping_rounds",
    "save_snapshot": "the loop keeps its trees in memory",
    "snapshot_file": "the loop keeps its trees in memory",
    "snapshot_interval": "the loop keeps its trees in memory",
    "cat_features": "CTR statistics would be rebuilt for every tree and cannot be merged faithfully",
    "text_features": "text processing would be rebuilt for every tree",
    "embedding_features": "embedding processing would be rebuilt for every tree",
    "task_type": "CatBoost runs Python losses on CPU only",
}
# Settings the stochrank engine uses once to quantize the training Pool, not for every tree.
_QUANTIZATION = (
    "border_count",
    "max_bin",
    "feature_border_type",
    "per_float_feature_quantization",
    "nan_mode",
)
# CatBoost metrics that grow with quality: the stochrank engine early-stops by maximising.
MAXIMISED_METRICS = frozenset(
    {
        "NDCG",
        "DCG",
        "ERR",
        "MRR",
        "PFound",
        "FilteredDCG",
        "MAP",
        "PrecisionAt",
        "RecallAt",
        "AUC",
        "QueryAUC",
    }
)


@dataclass(frozen=True)
class Fitted:
    """What an engine hands the estimator: the trained model and the record of its training."""

    model: Any  # catboost.CatBoost
    loss_function: str | None  # the native engine's loss string
    catboost_params: dict[str, Any]
    best_iteration: int | None  # None without an eval set
    evals_result: dict[str, Any]
    timing: dict[str, float]  # stochrank engine: seconds per phase and the iterations run


# Appended to every deviation the native engine warns of (engine='auto' picks it where CatBoost has the loss).
_USE_STOCHRANK_ENGINE = (
    " CatBoostRanker(engine='stochrank') trains stochrank's own gradient on CatBoost trees instead."
)


def fit_native(
    objective: object, train: _RankingData, valid: _RankingData | None, params: dict[str, Any]
) -> Fitted:
    """Train CatBoost's built-in StochasticRank loss for ``objective``, warning where CatBoost deviates.

    ``params`` are the estimator's checked CatBoost parameters; the loss and SGLB settings are added to
    them (the dict becomes ``catboost_params_``).
    """
    from catboost import CatBoost

    native, deviations = native_training(objective, train.labels, train.weights)
    for text in deviations:  # stacklevel: fit_native, CatBoostRanker.fit, the caller of fit
        warnings.warn(text + _USE_STOCHRANK_ENGINE, CatBoostDeviationWarning, stacklevel=3)
    params.update(native)
    model = CatBoost(params)
    # A Pool built here must declare the feature kinds the model's parameters name.
    kinds: dict[str, Any] = {
        key: params[key] for key in ("cat_features", "text_features", "embedding_features") if key in params
    }
    model.fit(train.catboost_pool(kinds), eval_set=None if valid is None else valid.catboost_pool(kinds))
    best = model.get_best_iteration() if valid is not None else None
    return Fitted(model, native["loss_function"], params, best, model.get_evals_result(), {})


class _GradientTable:
    """A CatBoost Python loss that returns the rows of a ``(-grad, -hess)`` table (CatBoost maximises).

    The training Pool's label encodes the row index (:func:`._data._encode_rows`), so ``calc_ders_range``
    knows which rows a block holds.
    CatBoost deep-copies its loss object: returning ``self`` keeps the table shared; ``no_jit`` stops it
    from trying to compile the method with Numba.
    """

    no_jit = True

    def __init__(self, n_rows: int) -> None:
        self.table = np.zeros((n_rows, 2))

    def __deepcopy__(self, memo: dict[int, Any]) -> _GradientTable:
        return self

    def calc_ders_range(self, approxes: Any, targets: Any, weights: Any) -> npt.NDArray[np.float64]:
        """Return the table's rows for the block's documents."""
        return self.table[_decode_rows(targets)]


@dataclass(frozen=True)
class _Loop:
    """The boosting loop's own settings, taken out of the CatBoost parameters; the rest shape every tree."""

    learning_rate: float
    iterations: int
    seed: int  # tree t is fitted with random_seed = seed + t
    metric: str | None  # eval_metric
    patience: int | None  # early_stopping_rounds
    use_best_model: bool
    print_every: int  # verbose: True prints every iteration, n every n-th, False nothing
    predict_threads: int
    quantization: dict[str, Any]
    tree_params: dict[str, Any]

    @classmethod
    def of(cls, params: dict[str, Any], table: _GradientTable, watched: bool) -> _Loop:
        """Split the estimator's ``params``; ``watched``: an eval set is given."""
        params = dict(params)
        lr = float(params.pop("learning_rate"))
        iterations, seed = int(params.pop("iterations")), int(params.pop("random_seed"))
        metric, patience = params.pop("eval_metric"), params.pop("early_stopping_rounds", None)
        use_best = bool(params.pop("use_best_model", watched)) and watched
        every = int(params.pop("verbose", False))
        for key in ("logging_level", "silent", "metric_period"):  # the trees are fitted silently
            params.pop(key, None)
        quantization = {key: params.pop(key) for key in _QUANTIZATION if key in params}
        tree_params = dict(
            params, iterations=1, learning_rate=lr, loss_function=table, eval_metric="RMSE",
            leaf_estimation_method="Newton", leaf_estimation_iterations=1, boost_from_average=False,
            verbose=False,
        )  # fmt: skip
        threads = params.get("thread_count", 1)
        return cls(
            lr, iterations, seed, metric, patience, use_best, every, threads, quantization, tree_params
        )


class _Watch:
    """The eval set's running predictions, metric history and best iteration (maximising the metric)."""

    def __init__(self, data: _RankingData, metric: str, threads: int) -> None:
        from catboost import Pool

        self.data, self.metric, self.threads = data, metric, threads
        self.pool = Pool(data.dense_features("eval_set"))
        # A Pool's baseline is the start, as in CatBoost (its predict on that Pool adds it back).
        self.preds = np.zeros(data.labels.size) if data.baseline is None else data.baseline.copy()
        self.groups = data.query_index
        self.weights = None if data.weights is None else np.repeat(data.weights, data.sizes)
        self.history: list[float] = []
        self.best, self.best_score = -1, -math.inf

    def add(self, tree: Any) -> None:
        """Add the eval predictions of the newest tree and score the model so far."""
        from catboost.utils import eval_metric

        self.preds += tree.predict(self.pool, prediction_type="RawFormulaVal", thread_count=self.threads)
        score = eval_metric(
            self.data.labels, self.preds, self.metric, weight=None, group_id=self.groups,
            group_weight=self.weights, thread_count=self.threads,
        )[0]  # fmt: skip
        self.history.append(score)
        if score > self.best_score:
            self.best, self.best_score = len(self.history) - 1, score


def _gradients(
    result: Any, n: int, iteration: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Check an objective's ``(grad, hess)``: two finite arrays of one value per document."""
    if not isinstance(result, tuple) or len(result) != 2:
        raise TypeError(
            "CatBoostRanker's objective must return (grad, hess), two arrays with one value per document; "
            f"got {type(result).__name__}{f' of length {len(result)}' if isinstance(result, tuple) else ''}. "
            "A stochrank objective (stochrank.ndcg(k=5), ...) does; an evaluation metric does not."
        )
    arrays = [np.asarray(a, dtype=np.float64).reshape(-1) for a in result]
    for name, a in zip(("grad", "hess"), arrays, strict=True):
        if a.size != n:
            raise ValueError(f"The objective returned {a.size} {name} values for {n} documents.")
        if not np.isfinite(a).all():
            raise ValueError(
                f"The objective returned non-finite {name} values at iteration {iteration} (first at row "
                f"{int(np.flatnonzero(~np.isfinite(a))[0])}); CatBoost would train on NaN. Check the "
                "objective's parameters (sigma, learning rate) and the labels."
            )
    return arrays[0], arrays[1]


class StochrankEngine:
    """Boost stochrank's gradients with one CatBoost tree per iteration, merged into one CatBoost model.

    Every iteration calls ``objective(preds, RankingTarget)``, fits one tree to the gradient table and
    adds its predictions; with an eval set it early-stops on ``eval_metric`` (maximised) and keeps the
    best iteration. SGLB's shrinkage is the objective's (it rescales the gradients by 1/C_t); the merged
    model weights the kept trees by C of the last one, so that it predicts the SGLB scores themselves.

    Parameters
    ----------
    objective : callable
        ``grad, hess = objective(preds, RankingTarget)``: gradients for minimisation.
    sglb : SGLB or None
        The objective's SGLB settings.
    """

    def __init__(self, objective: Objective, sglb: SGLB | None) -> None:
        self.objective = objective
        self.sglb = sglb

    def fit(self, train: _RankingData, valid: _RankingData | None, params: dict[str, Any]) -> Fitted:
        """Train on ``train``, early-stopping on ``valid``, with the estimator's checked ``params``."""
        from catboost import CatBoost, Pool

        n = train.labels.size
        if valid is not None and (train.baseline is None) != (valid.baseline is None):
            # CatBoost refuses this too: the eval set's scores would not start where the model's do.
            raise ValueError(
                "Only one of the training data and the eval_set has a baseline: give both one (an eval set "
                "or training data given as arrays has none: pass it as Pool(..., baseline=b)), or neither."
            )
        if self.sglb is not None and train.baseline is not None:
            # SGLB shrinks the whole model each iteration; the merged trees cannot carry a shrunk baseline.
            raise ValueError(
                "engine='stochrank' with SGLB starts from zero scores, and the Pool given to fit has a "
                "baseline: drop the baseline or the objective's sglb, or use engine='native' (CatBoost's own "
                "SGLB, for hessian='unit')."
            )
        table = _GradientTable(n)
        loop = _Loop.of(params, table, valid is not None)
        pool = Pool(train.dense_features("X"), label=_encode_rows(np.arange(n)))
        pool.quantize(**loop.quantization)
        target = RankingTarget(train.labels, train.sizes, train.weights, learning_rate=loop.learning_rate)
        preds = np.zeros(n) if train.baseline is None else train.baseline.copy()  # CatBoost's start
        # CatBoostRanker.fit refuses an eval set without an eval_metric, so loop.metric is a string here.
        watch = None if valid is None else _Watch(valid, str(loop.metric), loop.predict_threads)
        trees: list[Any] = []
        seconds = {"objective": 0.0, "tree": 0.0, "predict": 0.0}
        for it in range(loop.iterations):
            t0 = time.perf_counter()
            grad, hess = _gradients(self.objective(preds, target), n, it)
            t1 = time.perf_counter()
            table.table[:, 0] = -grad
            table.table[:, 1] = -hess
            tree = CatBoost(dict(loop.tree_params, random_seed=loop.seed + it))
            tree.fit(pool)
            t2 = time.perf_counter()
            preds += tree.predict(pool, prediction_type="RawFormulaVal", thread_count=loop.predict_threads)
            trees.append(tree)
            if watch is not None:
                watch.add(tree)
            t3 = time.perf_counter()
            seconds["objective"] += t1 - t0
            seconds["tree"] += t2 - t1
            seconds["predict"] += t3 - t2
            best = -1 if watch is None else watch.best
            if loop.print_every and (it % loop.print_every == 0 or it == loop.iterations - 1):
                self._report(it, len(trees), loop.metric, watch)
            if loop.patience is not None and it - best >= loop.patience:
                break
        kept = watch.best + 1 if loop.use_best_model and watch is not None else len(trees)
        return Fitted(
            model=self._merge(trees[:kept], loop.learning_rate),
            loss_function=None,
            catboost_params=dict(loop.tree_params, loss_function="<stochrank gradient table>"),
            best_iteration=None if watch is None else watch.best,
            evals_result={} if watch is None else {"validation": {loop.metric: watch.history}},
            timing=dict(seconds, iterations=len(trees)),
        )

    @staticmethod
    def _report(it: int, n_trees: int, metric: str | None, watch: _Watch | None) -> None:
        """Print the progress line of ``verbose`` (CatBoost's own verbose output goes to stdout too)."""
        shown = ""
        if watch is not None and watch.history:
            shown = f", {metric} {watch.history[-1]:.5f} (best {watch.best_score:.5f} at {watch.best})"
        print(f"{it}: trees {n_trees}{shown}")

    def _merge(self, trees: list[Any], lr: float) -> Any:
        """Return one CatBoost model predicting the sum of ``trees``, rescaled to the SGLB scores."""
        from catboost import sum_models

        # Trees were fitted to the SGLB model divided by C_t (the objective's rescaling); weighting them by
        # C of the last kept iteration makes the merged model predict the SGLB scores F themselves.
        scale = 1.0
        if self.sglb is not None:
            for t in range(len(trees)):
                scale *= self.sglb.shrink(t, lr)
        return sum_models(trees, weights=[scale] * len(trees))
