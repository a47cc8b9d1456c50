"""`XGBRanker`: xgboost's sklearn ranker, made to accept stochrank objectives and to score per query.

``xgboost.XGBRanker`` refuses callable objectives (its ``__init__`` raises, and ``fit`` filters callables
out of the parameters). :class:`XGBRanker` keeps xgboost's estimator (parameters, ``predict``,
``evals_result()``, ``best_iteration``, saving) and replaces ``fit``: it checks the query structure and
weights, and for callable objectives or a stochrank metric builds the DMatrices with query groups and
calls ``xgb.train(..., obj=objective, custom_metric=metric)``. ``score`` evaluates per query with the query
structure it is given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import xgboost as xgb

from ..conventions import labels_per_row, pop_qid_column, query_offsets, query_weights, rows_and_queries
from ..metrics import BoosterMetric, feval
from ..objectives import RankingObjective
from ..objectives._docs import check_not_constructor

__all__ = ["XGBRanker", "default_metric", "training_setup"]

_DEFAULT_ETA = 0.3  # xgboost's default learning rate


_TRAIN_NAMES = ("", "group", "qid", "sample_weight")


def _eval_names(i: int) -> tuple[str, str, str, str]:
    return f"eval_set[{i}]: ", f"eval_group[{i}]", f"eval_qid[{i}]", f"sample_weight_eval_set[{i}]"


def _split_metric(metric: Any) -> tuple[Any, Any]:
    """Split ``eval_metric`` into XGBoost's built-in metrics and the one callable (``custom_metric``)."""
    if callable(metric):
        return None, metric
    if not isinstance(metric, Sequence) or isinstance(metric, str):
        return metric, None  # None, a name, or something XGBoost refuses with its own message
    builtin = [m for m in metric if not callable(m)]
    custom = [m for m in metric if callable(m)]
    if len(custom) > 1:
        raise NotImplementedError("XGBoost takes one custom metric: eval_metric lists several callables.")
    return builtin or None, custom[0] if custom else None


def _has_stochrank_metric(metric: Any) -> bool:
    """Whether ``eval_metric`` is or lists a stochrank metric (``feval``), an ``xgb.train`` custom metric."""
    return isinstance(_split_metric(metric)[1], BoosterMetric)


def _entry(values: Sequence[Any] | None, i: int) -> Any:
    """Return ``values[i]``, or None when there is no such entry (one list entry per eval set)."""
    return values[i] if values is not None and i < len(values) else None


@dataclass(frozen=True)
class _RankingSet:
    """One data set with its query structure checked: XGBoost gets query sizes and per-query weights."""

    X: Any
    y: Any
    sizes: npt.NDArray[np.int64]
    weights: npt.NDArray[np.float64] | None

    @classmethod
    def of(
        cls, X: Any, y: Any, group: Any, qid: Any, weight: Any, names: tuple[str, str, str, str]
    ) -> _RankingSet | None:
        """Check a data set's labels, queries and weights (None without a query structure).

        Contiguous but unsorted ``qid`` become query sizes (XGBoost's own ``qid`` must be sorted), weights
        constant within each query become one per query (XGBoost wants that for ranking).
        """
        where, group_name, qid_name, weight_name = names
        X, column = pop_qid_column(X)  # xgboost.XGBRanker's special column
        labels_per_row(X, y, f"{where}y")
        if column is not None:
            if group is not None or qid is not None:
                raise ValueError(
                    f"X has a 'qid' column and {group_name}= or {qid_name}= is given as well: pass the query "
                    "structure once."
                )
            qid = column
        offsets = query_offsets(
            int(np.shape(X)[0]), group=group, qid=qid, group_name=group_name, qid_name=qid_name
        )
        if offsets is None:
            return None
        return cls(X, y, np.diff(offsets), query_weights(weight, offsets, weight_name))


def default_metric(objective: Any) -> str | BoosterMetric:
    """Return the evaluation metric a ranker uses by default with a stochrank objective.

    XGBoost's ``ndcg@k`` for a cut-off k. XGBoost's bare "ndcg" truncates every list at 32 documents
    (lambdarank_num_pair_per_sample's default): the whole-list NDCG of a k=None objective is stochrank's,
    in XGBoost's conventions.
    """
    k = objective.k if isinstance(objective, RankingObjective) else None
    return feval("ndcg", k=None, ties="input") if k is None else f"ndcg@{k}"


def training_setup(ranker: xgb.XGBModel) -> tuple[dict[str, Any], Any, Any]:
    """Return ``(params, obj, custom_metric)`` for training a ranker with ``xgb.train(obj=, custom_metric=)``.

    With a stochrank objective ``objective`` becomes ``'rank:ndcg'`` (metadata only: the gradients come from
    ``obj``), ``base_score`` defaults to 0 and ``eval_metric`` to :func:`default_metric`; SGLB gets the
    ranker's learning rate unless it names one, which must then agree. A string objective stays as it is
    (``obj`` is None). A callable metric (one in an ``eval_metric`` list, too) is passed as
    ``custom_metric(preds, DMatrix)``. Shared by :class:`XGBRanker` and
    :class:`~stochrank.xgboost.DaskXGBRanker`.
    """
    params = ranker.get_xgb_params()  # callables (our objective, callable metrics) are filtered out
    metric = ranker.eval_metric
    if callable(ranker.objective):
        params["objective"] = "rank:ndcg"
        if params.get("base_score") is None:
            params["base_score"] = 0.0
        if metric is None:
            metric = default_metric(ranker.objective)
    builtin, custom_metric = _split_metric(metric)
    params.pop("eval_metric", None)  # a list with a callable in it is not filtered out
    if builtin is not None:
        params["eval_metric"] = builtin
    if custom_metric is not None:
        params["disable_default_eval_metric"] = 1
    obj = ranker.objective if callable(ranker.objective) else None
    if isinstance(obj, RankingObjective):
        lr = next((params[key] for key in ("learning_rate", "eta") if params.get(key) is not None), None)
        obj = obj.at_learning_rate(_DEFAULT_ETA if lr is None else float(lr), type(ranker).__name__)
    return params, obj, custom_metric


class XGBRanker(xgb.XGBRanker):
    """``xgboost.XGBRanker`` that also trains with a stochrank objective.

    >>> ranker = XGBRanker(objective=stochrank.ndcg(k=5), n_estimators=200)  # doctest: +SKIP
    >>> ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])        # doctest: +SKIP

    With a stochrank objective:

    * ``base_score`` defaults to 0 (with a custom objective XGBoost cannot fit the intercept and would
      start every score at 0.5, which matters for ``stochrank.lso``);
    * ``eval_metric`` defaults to XGBoost's ``ndcg@k`` for objectives with a cut-off k, and for
      whole-list objectives (``k=None``) to ``stochrank.metrics.feval("ndcg", k=None, ties="input")``,
      the whole-list NDCG in XGBoost's conventions (logged as ``"sr-ndcg"``): XGBoost's own bare ``"ndcg"``
      cuts every list at 32 documents. A stochrank ``BoosterMetric`` (``stochrank.metrics.feval``) or
      any ``f(preds, DMatrix) -> (name, value)`` is used as a custom metric and maximised for early
      stopping (XGBoost logs custom metric values to 6 decimals);
    * ``SGLB`` gets this ranker's learning rate unless it names one, which must then agree;
    * every eval set needs its query structure (``eval_group`` or ``eval_qid``).

    String objectives (``'rank:ndcg'`` …) behave as in ``xgboost.XGBRanker``, except that a stochrank
    ``BoosterMetric`` in ``eval_metric`` (alone or in a list) is passed to ``xgb.train(custom_metric=...)``
    and maximised, as with a stochrank objective, instead of being called per query as ``f(y_true, y_score)``.
    Other callable metrics keep ``xgboost.XGBRanker``'s per-query convention.
    """

    def __init__(self, *, objective: Any = "rank:ndcg", **kwargs: Any) -> None:
        # xgboost.XGBRanker.__init__ would reject a callable; its parent stores the parameters.
        xgb.XGBModel.__init__(self, objective=objective, **kwargs)
        if isinstance(objective, str) and "rank:" not in objective:
            raise ValueError(
                "XGBRanker needs a ranking objective ('rank:ndcg', 'rank:pairwise', 'rank:map') "
                f"or a stochrank objective such as stochrank.ndcg(k=5); got objective={objective!r}."
            )

    def fit(
        self,
        X: Any,
        y: Any,
        *,
        group: Any = None,
        qid: Any = None,
        sample_weight: Any = None,
        base_margin: Any = None,
        eval_set: Sequence[tuple[Any, Any]] | None = None,
        eval_group: Sequence[Any] | None = None,
        eval_qid: Sequence[Any] | None = None,
        verbose: bool | int | None = False,
        xgb_model: Any = None,
        sample_weight_eval_set: Sequence[Any] | None = None,
        base_margin_eval_set: Sequence[Any] | None = None,
        feature_weights: Any = None,
    ) -> XGBRanker:
        """Fit like ``xgboost.XGBRanker.fit``; with a stochrank objective train with ``xgb.train(obj=...)``.

        ``group`` are query sizes, ``qid`` one query id per row (a query's rows contiguous; the ids need not
        be sorted, unlike XGBoost's own ``qid``, and may be strings, which XGBoost's DMatrix refuses);
        ``sample_weight`` one weight per query, or one per row constant within each query. Each
        ``eval_set[i]`` needs ``eval_group[i]`` or ``eval_qid[i]``. The query structure and weights are
        checked here, as is one label per row, so mistakes get a message naming the fix instead of an XGBoost
        stack trace; XGBoost then gets query sizes and per-query weights. For ``xgb.train`` convert string
        ids yourself: ``group=stochrank.group_sizes(qid)``. ``xgb_model`` continues training from a Booster,
        a saved model's file name or a fitted XGBoost estimator.
        """
        check_not_constructor(self.objective)
        train = _RankingSet.of(X, y, group, qid, sample_weight, _TRAIN_NAMES)
        if train is None:
            raise ValueError(
                "XGBRanker.fit needs the query structure: pass group=<sizes> or qid=<one id per row>."
            )
        evals: list[_RankingSet] = []
        for i, (Xe, ye) in enumerate(eval_set or ()):
            names = _eval_names(i)
            g, q, w = (_entry(seq, i) for seq in (eval_group, eval_qid, sample_weight_eval_set))
            valid = _RankingSet.of(Xe, ye, g, q, w, names)
            if valid is None:
                raise ValueError(
                    f"eval_set[{i}] has no query structure: pass eval_group=[sizes, ...] "
                    "or eval_qid=[qid, ...] with one entry per eval set (ranking metrics are per query)."
                )
            evals.append(valid)
        eval_weights = [e.weights for e in evals] if any(e.weights is not None for e in evals) else None
        if not callable(self.objective) and not _has_stochrank_metric(self.eval_metric):
            return super().fit(
                train.X, y, group=train.sizes, sample_weight=train.weights, base_margin=base_margin,
                eval_set=[(e.X, e.y) for e in evals] or None, eval_group=[e.sizes for e in evals] or None,
                verbose=verbose, xgb_model=xgb_model, sample_weight_eval_set=eval_weights,
                base_margin_eval_set=base_margin_eval_set, feature_weights=feature_weights,
            )  # fmt: skip

        params, objective, custom_metric = training_setup(self)
        # as xgboost's fit: a fitted XGBModel becomes its Booster, the constructor's feature_weights apply
        model, _, params, feature_weights = self._configure_fit(xgb_model, params, feature_weights)

        dtrain = self._dmatrix(train, base_margin)
        if feature_weights is not None:
            dtrain.set_info(feature_weights=feature_weights)
        margins = base_margin_eval_set or ()
        dvalid = [(self._dmatrix(e, _entry(margins, i)), f"validation_{i}") for i, e in enumerate(evals)]

        evals_result: dict[str, Any] = {}
        self._Booster = xgb.train(
            params,
            dtrain,
            num_boost_round=self.get_num_boosting_rounds(),
            evals=dvalid,
            obj=objective,
            custom_metric=custom_metric,
            maximize=True if custom_metric is not None else None,
            early_stopping_rounds=self.early_stopping_rounds,
            evals_result=evals_result,
            verbose_eval=verbose,
            xgb_model=model,
            callbacks=self.callbacks,
        )
        self.evals_result_ = evals_result
        return self

    def _dmatrix(self, data: _RankingSet, base_margin: Any) -> xgb.DMatrix:
        return xgb.DMatrix(
            data.X,
            data.y,
            group=data.sizes,
            weight=data.weights,
            base_margin=base_margin,
            missing=self.missing,
            nthread=self.n_jobs,
            enable_categorical=self.enable_categorical,
            feature_types=self.feature_types,
        )

    def _default_metric(self) -> str | BoosterMetric:
        return default_metric(self.objective)

    def predict(self, X: Any, **kwargs: Any) -> np.ndarray:
        """Ranking scores (raw margins; ``base_margin`` is excluded unless passed again).

        A DataFrame's ``qid`` column is dropped, as by ``xgboost.XGBRanker``; the best iteration is used
        after early stopping.
        """
        kwargs.setdefault("output_margin", True)
        scores: np.ndarray = super().predict(X, **kwargs)  # xgboost types its predictions as Any
        return scores

    def score(self, X: Any, y: Any, *, qid: Any = None, group: Any = None) -> float:
        """Return the last evaluation metric on ``(X, y)``, averaged over its queries.

        As ``xgboost.XGBRanker.score`` (the metric training reported last: ``eval_metric``, or by default
        XGBoost's ``ndcg@k`` for a stochrank objective with cut-off k, the whole-list NDCG for one without,
        and the string objective's default metric otherwise), but with the query structure of the data:
        ``qid`` (one id per row), ``group`` (documents per query) or a DataFrame's ``qid`` column.
        Evaluated at the best iteration after early stopping, like :meth:`predict`. A
        ``stochrank.metrics.feval`` metric is computed in full precision, XGBoost's built-in metrics come
        from ``Booster.eval`` (printed with 6 decimals).

        Raises
        ------
        ValueError
            Without a query structure: XGBoost would score the whole data as one query.
        """
        labels = labels_per_row(X, y)
        X, offsets = rows_and_queries(X, labels.size, group=group, qid=qid, where="XGBRanker.score")
        data = xgb.DMatrix(
            X,
            labels,
            group=np.diff(offsets),
            missing=self.missing,
            nthread=self.n_jobs,
            enable_categorical=self.enable_categorical,
            feature_types=self.feature_types,
        )
        booster = self.get_booster()
        with contextlib.suppress(AttributeError):  # no best_iteration without early stopping: every tree
            booster = booster[: self.best_iteration + 1]
        metric = self.eval_metric
        if metric is None and callable(self.objective):
            metric = self._default_metric()
        if callable(self.objective) or _has_stochrank_metric(metric):
            _, custom = _split_metric(metric)  # xgb.train reports its custom metric after the built-in ones
        else:  # xgboost.XGBRanker's rule: a callable in a list is not the score, the last built-in metric is
            custom = metric if callable(metric) else None
        if custom is None:
            text = booster.eval(data, "eval")  # "[0]\teval-ndcg@5:0.743314", the last metric last
            return float(text.split()[-1].rsplit(":", 1)[1])
        metric = custom
        if not callable(self.objective) and not isinstance(metric, BoosterMetric):
            # xgboost.XGBRanker's convention: metric(y_true, y_score) per query
            metric = xgb.sklearn.ltr_metric_decorator(metric, self.n_jobs)
        return float(metric(booster.predict(data, output_margin=True), data)[1])
