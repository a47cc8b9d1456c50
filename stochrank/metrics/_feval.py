"""Ranking metrics as booster evaluation callables (LightGBM ``feval``, XGBoost ``custom_metric``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from inspect import signature
from typing import Any

import numpy as np

from .._validation import check_choice
from ..protocol import DatasetCache
from ..protocol.xgboost import collective_sum, in_distributed_training, is_dmatrix
from ._auc import auc
from ._cascade import err, mrr, pfound
from ._dcg import dcg, ndcg
from ._precision import map, precision

__all__ = ["METRICS", "BoosterMetric", "check_metric", "cutoff", "feval"]

METRICS: dict[str, Callable[..., Any]] = {
    "ndcg": ndcg,
    "dcg": dcg,
    "err": err,
    "pfound": pfound,
    "mrr": mrr,
    "map": map,
    "precision": precision,
    "auc": auc,
}
# Arguments a booster supplies (data, weights) or that BoosterMetric fixes itself.
# ``tiebreak`` is a per-row key of one data set: a booster evaluates several, whose rows it does not name.
_NOT_CONVENTIONS = frozenset({"labels", "scores", "group", "k", "weight", "per_query", "tiebreak"})
# Prefix of the names boosters log for these metrics, e.g. 'sr-ndcg@5' next to LightGBM's own 'ndcg@5'.
NAME_PREFIX = "sr-"


def check_metric(metric: str, k: int | None, conventions: dict[str, Any], maker: str, data: str) -> str:
    """Validate a metric name, cut-off and conventions for ``stochrank.metrics.<maker>``; return the name.

    ``data`` says where the data, weights and query groups come from (quoted for unknown conventions).
    """
    metric = check_choice(metric, "metric", f"stochrank.metrics.{maker}", tuple(METRICS))
    fn = METRICS[metric]
    accepted = sorted(set(signature(fn).parameters) - _NOT_CONVENTIONS)
    unknown = sorted(set(conventions) - set(accepted))
    if unknown:
        raise TypeError(
            f"{maker}({metric!r}) got unknown convention(s) {unknown}; {metric} accepts {accepted}. "
            f"The data, weights and query groups come from {data}."
        )
    if str(conventions.get("ties", "")).startswith("key_"):
        raise ValueError(
            f"{maker}({metric!r}) cannot take ties={conventions['ties']!r}: {data} carries no document "
            "ids to break ties by. Use ties='input' (LightGBM/XGBoost) or 'worst', or evaluate the "
            f"predictions with stochrank.metrics.{metric}(..., tiebreak=docno)."
        )
    if "k" not in signature(fn).parameters and k is not None:
        raise ValueError(
            f"{maker}({metric!r}, k={k!r}): {metric} has no cut-off. Pass {maker}({metric!r}, k=None)."
        )
    # Validate every setting now, on a one-document query, rather than at the first use.
    fn(np.zeros(1), np.zeros(1), [1], **cutoff(metric, k), **conventions)
    return metric


def cutoff(metric: str, k: int | None) -> dict[str, Any]:
    """Return the ``k`` keyword for metrics that take one (none for AUC)."""
    return {"k": k} if "k" in signature(METRICS[metric]).parameters else {}


class BoosterMetric:
    """A stochrank metric in the calling conventions of LightGBM and XGBoost (higher is better).

    Create it with :func:`feval`. The object holds only its configuration and a weak per-dataset
    cache, so it pickles and deep-copies (the cache is rebuilt empty).

    Parameters
    ----------
    metric : {"ndcg", "dcg", "err", "pfound", "mrr", "map", "precision", "auc"}
        Which metric of :mod:`stochrank.metrics` to report.
    k : int >= 1 or None
        Cutoff passed to the metric (None: whole list; not allowed for ``"precision"``; must be None for
        ``"auc"``, which has no cut-off).
    conventions : dict
        Further keyword arguments of the metric (``gain``, ``ties``, ``empty``, ...).

    Attributes
    ----------
    name : str
        ``"sr-<metric>@<k>"``, or ``"sr-<metric>"`` when ``k`` is None: the name boosters log. The ``sr-``
        prefix keeps it apart from the boosters' built-in metrics (LightGBM and XGBoost call theirs
        ``ndcg@5``): LightGBM keys its evaluation results and early stopping by name, and one name for two
        metrics breaks both.
    """

    def __init__(self, metric: str, k: int | None, conventions: dict[str, Any]) -> None:
        metric = check_metric(metric, k, conventions, "feval", "the booster's dataset")
        self.metric = metric
        self.k = k
        self.conventions = dict(conventions)
        self._cache: DatasetCache[None] = DatasetCache()

    @property
    def name(self) -> str:
        """The name boosters log, e.g. ``'sr-ndcg@5'`` (never a booster's built-in name)."""
        return f"{NAME_PREFIX}{self.metric}" if self.k is None else f"{NAME_PREFIX}{self.metric}@{self.k}"

    def __call__(
        self, a: Any, b: Any, weight: Any = None, group: Any = None
    ) -> tuple[str, float, bool] | tuple[str, float]:
        """Evaluate on one dataset; the call form decides the return form.

        Parameters
        ----------
        a, b : array-like and Dataset / DMatrix / array-like
            ``(preds, lgb.Dataset)`` from ``lgb.train(feval=...)``, ``(preds, xgb.DMatrix)`` from
            ``xgb.train(custom_metric=...)``, or ``(y_true, y_pred)`` from
            ``LGBMRanker.fit(eval_metric=...)``, which also passes ``weight`` and ``group``.
        weight, group : array-like or None
            Row weights and query sizes of the LGBMRanker call form; unused otherwise.

        Returns
        -------
        tuple
            ``(name, value, True)`` for LightGBM (``True``: higher is better), ``(name, value)``
            for XGBoost, which takes the direction from ``xgb.train(maximize=True)`` instead.
            The dataset's query weights are applied.
        """
        if not (is_dmatrix(b) and in_distributed_training()):
            weighted_sum, total, library = self._sums(a, b, weight, group)
            value = weighted_sum / total if total > 0.0 else math.nan
            return (self.name, value) if library == "xgboost" else (self.name, value, True)
        # Distributed XGBoost evaluates a custom metric on each worker's rows and reports the plain mean of
        # the workers' values: the weighted mean over the whole set needs every worker's sums. A worker
        # holding none of this set's rows gets an empty DMatrix; one that fails still joins the all-reduce
        # (which every worker reaches once per evaluation), so all stop together instead of waiting.
        failure: Exception | None = None
        try:
            weighted_sum, total = (0.0, 0.0) if b.num_row() == 0 else self._sums(a, b, None, None)[:2]
        except Exception as exc:  # re-raised below, after the all-reduce
            failure, weighted_sum, total = exc, 0.0, 0.0
        weighted_sum, total, failed = collective_sum(np.array([weighted_sum, total, failure is not None]))
        if failure is not None:
            raise failure
        if failed:
            raise RuntimeError(
                f"{self!r}: another worker of the distributed XGBoost training failed to evaluate this "
                "metric (its error is in that worker's log); every worker stops with it."
            )
        return self.name, weighted_sum / total if total > 0.0 else math.nan

    def _sums(self, a: Any, b: Any, weight: Any, group: Any) -> tuple[float, float, str]:
        """Return this process's weighted sum of per-query values, their total weight and the library."""
        call = self._cache.unpack(a, b, weight, group)
        info = call.info
        sizes, weights = np.diff(info.offsets), info.weights
        # XGBoost accepts empty groups. Like the objective, which has nothing to rank there, the metric
        # leaves them out (XGBoost's own ndcg counts each as an NDCG of 1, its value for no relevant doc).
        filled = sizes > 0
        if not filled.all():
            sizes, weights = sizes[filled], None if weights is None else weights[filled]
        if weights is not None and not weights.any():
            # Only a distributed worker's share is let through with all-zero weights: nothing to measure.
            return 0.0, 0.0, info.library
        per_query = METRICS[self.metric](
            info.labels,
            call.preds,
            sizes,
            weight=weights,
            per_query=True,
            **cutoff(self.metric, self.k),
            **self.conventions,
        )
        keep = ~np.isnan(per_query)  # skipped queries
        w = np.ones(per_query.size) if weights is None else weights
        return float(np.dot(w[keep], per_query[keep])), float(w[keep].sum()), info.library

    def __getstate__(self) -> dict[str, Any]:
        # The cache holds weak references to live datasets: not picklable, and meaningless elsewhere.
        return {"metric": self.metric, "k": self.k, "conventions": self.conventions}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._cache = DatasetCache()

    def __repr__(self) -> str:
        extra = "".join(f", {key}={value!r}" for key, value in sorted(self.conventions.items()))
        return f"feval({self.metric!r}, k={self.k!r}{extra})"


def feval(metric: str = "ndcg", *, k: int | None = 5, **conventions: Any) -> BoosterMetric:
    """Make a metric callable for booster evaluation and early stopping.

    Parameters
    ----------
    metric : {"ndcg", "dcg", "err", "pfound", "mrr", "map", "precision", "auc"}, default "ndcg"
        The :mod:`stochrank.metrics` function to report.
    k : int >= 1 or None, default 5
        Cutoff; None scores whole lists (and is required for ``"auc"``).
    **conventions
        Keyword arguments of that metric, e.g. ``gain="linear"``, ``ties="input"``,
        ``empty="skip"``; unknown names raise ``TypeError``.

    Returns
    -------
    BoosterMetric
        Callable as ``m(preds, lgb.Dataset)``, ``m(preds, xgb.DMatrix)`` and
        ``m(y_true, y_pred, weight, group)``; it reports ``(name, value, True)`` to LightGBM and
        ``(name, value)`` to XGBoost, with the dataset's query weights applied.

    Notes
    -----
    - ``lgb.train(params, train_set, valid_sets=[valid], feval=m, callbacks=[lgb.early_stopping(5)])``:
      set ``params["metric"] = "None"`` to stop on this metric alone.
    - ``LGBMRanker().fit(X, y, group=g, eval_set=[(Xv, yv)], eval_group=[gv], eval_metric=m)``: LightGBM
      sees four parameters and passes ``group``.
    - ``xgb.train(params, dtrain, evals=[(dvalid, "v")], custom_metric=m, maximize=True,
      early_stopping_rounds=5)``: XGBoost minimises custom metrics unless ``maximize=True``; also set
      ``params["disable_default_eval_metric"] = 1`` so that early stopping watches this metric.
    - An empty XGBoost group (``DMatrix(group=[..., 0])``) is left out, as the objectives leave it; XGBoost's
      own ``ndcg`` counts it as an NDCG of 1.
    - On distributed XGBoost (Dask, Spark) each worker holds part of the queries: the value is the weighted
      mean over all of them (the workers' sums are all-reduced), not XGBoost's plain mean of the workers'
      own values, which it applies to custom metrics. So while a worker's collective is live, the metric
      must be called by every worker alike (as training does), not by one alone.

    Examples
    --------
    >>> from stochrank.metrics import feval
    >>> feval("ndcg", k=10, ties="input").name
    'sr-ndcg@10'
    """
    return BoosterMetric(metric, k, conventions)
