"""`XGBRanker`: xgboost's sklearn ranker, made to accept stochrank objectives.

``xgboost.XGBRanker`` refuses callable objectives (its ``__init__`` raises, and ``fit`` filters callables
out of the parameters). :class:`XGBRanker` keeps xgboost's estimator (parameters, ``predict``,
``evals_result()``, ``best_iteration``, saving) and replaces only ``fit`` for callable objectives: it
builds the DMatrices with query groups and calls ``xgb.train(..., obj=objective)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import xgboost as xgb

from ..conventions import offsets_from_qid
from ..metrics import BoosterMetric, feval
from ..objectives import RankingObjective

__all__ = ["XGBRanker"]

_DEFAULT_ETA = 0.3  # xgboost's default learning rate


def _has_groups(group: Any, qid: Any) -> bool:
    return group is not None or qid is not None


def _is_numeric(qid: Any) -> bool:
    return qid is None or np.asarray(qid).dtype.kind in "biuf"


def _run_sizes(qid: Any, name: str) -> npt.NDArray[np.int64]:
    """Sizes of the contiguous runs of equal query ids (XGBoost reads only numeric qid).

    Rows of a query that are not adjacent raise, naming ``name`` and how to reorder them.
    """
    return np.diff(offsets_from_qid(np.asarray(qid).reshape(-1), name))


class XGBRanker(xgb.XGBRanker):
    """``xgboost.XGBRanker`` that also trains with a stochrank objective.

    >>> ranker = XGBRanker(objective=stochrank.ndcg(k=5), n_estimators=200)  # doctest: +SKIP
    >>> ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])        # doctest: +SKIP

    With a stochrank objective:

    * ``base_score`` defaults to 0 (with a custom objective XGBoost cannot fit the intercept and would
      start every score at 0.5, which matters for ``stochrank.lso``);
    * ``eval_metric`` defaults to XGBoost's ``ndcg@k`` for objectives with a cut-off k, and for
      whole-list objectives (``k=None``) to ``stochrank.metrics.feval("ndcg", k=None, ties="input")``,
      the whole-list NDCG in XGBoost's conventions (logged as ``"ndcg"``): XGBoost's own bare ``"ndcg"``
      cuts every list at 32 documents. A stochrank ``BoosterMetric`` (``stochrank.metrics.feval``) or
      any ``f(preds, DMatrix) -> (name, value)`` is used as a custom metric and maximised for early
      stopping (XGBoost logs custom metric values to 6 decimals);
    * ``SGLB`` gets this ranker's learning rate unless it names one;
    * every eval set needs its query structure (``eval_group`` or ``eval_qid``).

    String objectives (``'rank:ndcg'`` …) behave exactly as in ``xgboost.XGBRanker``.
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

        ``group`` are query sizes, ``qid`` one (sorted) query id per row; ``sample_weight`` one weight per
        query. Each ``eval_set[i]`` needs ``eval_group[i]`` or ``eval_qid[i]``. String query ids (which
        XGBoost's DMatrix refuses) are read as the contiguous runs of equal ids and passed to XGBoost as
        ``group`` sizes; for ``xgb.train`` convert them yourself: ``group=stochrank.group_sizes(qid)``.
        """
        if not _has_groups(group, qid):
            raise ValueError(
                "XGBRanker.fit needs the query structure: pass group=<sizes> or qid=<one id per row>."
            )
        # String query ids: XGBoost's DMatrix refuses them ("Unicode-N is not supported").
        if group is None and not _is_numeric(qid):
            group, qid = _run_sizes(qid, "qid"), None
        if eval_group is None and eval_qid is not None and not all(_is_numeric(q) for q in eval_qid):
            eval_group = [
                None if q is None else _run_sizes(q, f"eval_qid[{i}]") for i, q in enumerate(eval_qid)
            ]
            eval_qid = None
        n_eval = len(eval_set) if eval_set is not None else 0
        for i in range(n_eval):
            g = eval_group[i] if eval_group is not None and i < len(eval_group) else None
            q = eval_qid[i] if eval_qid is not None and i < len(eval_qid) else None
            if not _has_groups(g, q):
                raise ValueError(
                    f"eval_set[{i}] has no query structure: pass eval_group=[sizes, ...] "
                    "or eval_qid=[qid, ...] with one entry per eval set (ranking metrics are per query)."
                )
        if not callable(self.objective):
            return super().fit(
                X, y, group=group, qid=qid, sample_weight=sample_weight, base_margin=base_margin,
                eval_set=eval_set, eval_group=eval_group, eval_qid=eval_qid, verbose=verbose,
                xgb_model=xgb_model, sample_weight_eval_set=sample_weight_eval_set,
                base_margin_eval_set=base_margin_eval_set, feature_weights=feature_weights,
            )  # fmt: skip

        params = self.get_xgb_params()  # callables (our objective, callable metrics) are filtered out
        params["objective"] = "rank:ndcg"  # metadata only: the gradients come from obj=
        if params.get("base_score") is None:
            params["base_score"] = 0.0
        custom_metric = None
        metric = self._default_metric() if self.eval_metric is None else self.eval_metric
        if callable(metric):
            custom_metric = metric
            params["disable_default_eval_metric"] = 1
        else:
            params["eval_metric"] = metric
        objective = self._objective_with_learning_rate(params)

        def dmatrix(data: Any, label: Any, g: Any, q: Any, w: Any, m: Any) -> xgb.DMatrix:
            return xgb.DMatrix(
                data,
                label,
                group=g,
                qid=q,
                weight=w,
                base_margin=m,
                missing=self.missing,
                nthread=self.n_jobs,
                enable_categorical=self.enable_categorical,
                feature_types=self.feature_types,
            )

        dtrain = dmatrix(X, y, group, qid, sample_weight, base_margin)
        if feature_weights is not None:
            dtrain.set_info(feature_weights=feature_weights)
        evals = []
        for i in range(n_eval):
            Xe, ye = eval_set[i]  # type: ignore[index]
            g = eval_group[i] if eval_group is not None and i < len(eval_group) else None
            q = eval_qid[i] if eval_qid is not None and i < len(eval_qid) else None
            w = sample_weight_eval_set[i] if sample_weight_eval_set is not None else None
            m = base_margin_eval_set[i] if base_margin_eval_set is not None else None
            evals.append((dmatrix(Xe, ye, g, q, w, m), f"validation_{i}"))

        evals_result: dict[str, Any] = {}
        self._Booster = xgb.train(
            params,
            dtrain,
            num_boost_round=self.get_num_boosting_rounds(),
            evals=evals,
            obj=objective,
            custom_metric=custom_metric,
            maximize=True if custom_metric is not None else None,
            early_stopping_rounds=self.early_stopping_rounds,
            evals_result=evals_result,
            verbose_eval=verbose,
            xgb_model=xgb_model,
            callbacks=self.callbacks,
        )
        self.evals_result_ = evals_result
        return self

    def _default_metric(self) -> str | BoosterMetric:
        # XGBoost's bare "ndcg" truncates every list at 32 documents (lambdarank_num_pair_per_sample's
        # default): the whole-list NDCG of a k=None objective is stochrank's, in XGBoost's conventions.
        k = self.objective.k if isinstance(self.objective, RankingObjective) else None
        return feval("ndcg", k=None, ties="input") if k is None else f"ndcg@{k}"

    def _objective_with_learning_rate(self, params: dict[str, Any]) -> Any:
        obj = self.objective
        if not isinstance(obj, RankingObjective) or obj.sglb is None or obj.sglb.learning_rate is not None:
            return obj
        lr = params.get("learning_rate")
        lr = _DEFAULT_ETA if lr is None else float(lr)
        return obj.with_sglb(dataclasses.replace(obj.sglb, learning_rate=lr))

    def predict(self, X: Any, **kwargs: Any) -> np.ndarray:
        """Ranking scores (raw margins; ``base_margin`` is excluded unless passed again)."""
        kwargs.setdefault("output_margin", True)
        scores: np.ndarray = super().predict(X, **kwargs)  # xgboost types its predictions as Any
        return scores
