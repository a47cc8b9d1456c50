"""`DaskXGBRanker`: xgboost's Dask ranker, made to accept stochrank objectives (the twin of `XGBRanker`).

``xgboost.dask.DaskXGBRanker`` refuses callable objectives and passes ``obj=None`` to its training.
:class:`DaskXGBRanker` keeps the estimator (parameters, ``allow_group_split``'s repartitioning, eval sets,
``predict``, ``evals_result()``, ``best_iteration``, saving) and replaces only the training call for
callable objectives and stochrank metrics: ``xgboost.dask.train(..., obj=objective, custom_metric=metric)``
with the parameters :class:`~stochrank.xgboost.XGBRanker` uses.
"""

from __future__ import annotations

from typing import Any

import xgboost as xgb
from xgboost import dask as dxgb

from ..conventions.partitions import check_query_partitions, n_partitions, query_arrangement
from ..objectives._docs import check_not_constructor
from ._ranker import _has_stochrank_metric, training_setup

__all__ = ["DaskXGBRanker"]


class DaskXGBRanker(dxgb.DaskXGBRanker):
    """``xgboost.dask.DaskXGBRanker`` that also trains with a stochrank objective.

    >>> ranker = DaskXGBRanker(objective=stochrank.ndcg(k=5), n_estimators=200)      # doctest: +SKIP
    >>> ranker.client = client                                                        # doctest: +SKIP
    >>> ranker.fit(X, y, qid=qid, eval_set=[(Xv, yv)], eval_qid=[qv])                # doctest: +SKIP

    With a stochrank objective the parameters mean what they mean in
    :class:`stochrank.xgboost.XGBRanker` (``base_score`` 0, ``eval_metric`` ``ndcg@k`` or the whole-list
    NDCG, SGLB takes the ranker's learning rate, a callable ``eval_metric(preds, DMatrix)`` is maximised
    for early stopping),
    and no query may be split between workers:

    * ``allow_group_split=False`` (default): every set is repartitioned by query before training
      (:func:`stochrank.dask.query_arrangement`; Dask arrays or DataFrames), deterministically: the same
      data, seed and placement of the partitions on the workers give the same model;
    * ``allow_group_split=True``: the partitions are taken as they are and checked
      (:func:`stochrank.dask.check_query_partitions` raises, naming a split query); make them with
      :func:`stochrank.dask.partition_by_query`.

    String objectives (``'rank:ndcg'`` …) behave as in ``xgboost.dask.DaskXGBRanker``, except that a
    stochrank metric (``feval``) in ``eval_metric`` is XGBoost's ``custom_metric``, maximised, as with a
    stochrank objective.
    """

    def __init__(
        self,
        *,
        objective: Any = "rank:ndcg",
        allow_group_split: bool = False,
        coll_cfg: Any = None,
        **kwargs: Any,
    ) -> None:
        # xgboost's DaskXGBRanker.__init__ would reject a callable; its parents store the parameters.
        self.allow_group_split = allow_group_split
        dxgb.DaskScikitLearnBase.__init__(self, objective=objective, coll_cfg=coll_cfg, **kwargs)
        if isinstance(objective, str) and "rank:" not in objective:
            raise ValueError(
                "DaskXGBRanker needs a ranking objective ('rank:ndcg', 'rank:pairwise', 'rank:map') "
                f"or a stochrank objective such as stochrank.ndcg(k=5); got objective={objective!r}."
            )

    def fit(
        self, X: Any, y: Any, *, qid: Any = None, eval_set: Any = None, eval_qid: Any = None, **kwargs: Any
    ) -> DaskXGBRanker:
        """Fit like ``xgboost.dask.DaskXGBRanker.fit``; with a stochrank objective train with ``obj=``.

        A stochrank metric (``feval``) is passed as ``custom_metric`` (maximised) whatever the objective;
        upstream would call it per query as ``f(y_true, y_score)``.

        ``qid`` is one query id per row (Dask array or Series); each ``eval_set[i]`` needs ``eval_qid[i]``.

        Raises
        ------
        ValueError
            Without ``qid``, without an ``eval_qid`` per eval set, or (``allow_group_split=True``) when a
            query's rows are in more than one partition.
        """
        check_not_constructor(self.objective)
        if self._trains_with_xgb_train():
            if qid is None:
                raise ValueError("DaskXGBRanker.fit needs the query structure: pass qid=<one id per row>.")
            n_eval = len(eval_set) if eval_set is not None else 0
            if n_eval and (eval_qid is None or len(eval_qid) != n_eval):
                raise ValueError(
                    f"eval_set has {n_eval} entries but eval_qid has "
                    f"{0 if eval_qid is None else len(eval_qid)}: pass eval_qid=[qid, ...] with one entry "
                    "per eval set (ranking metrics are per query)."
                )
            if self.allow_group_split:
                for q in [qid, *(eval_qid or [])]:
                    check_query_partitions(q)
            else:
                return self._fit_by_query(X, y, qid, eval_set or [], eval_qid or [], kwargs)
        result: DaskXGBRanker = super().fit(X, y, qid=qid, eval_set=eval_set, eval_qid=eval_qid, **kwargs)
        return result

    def _fit_by_query(
        self, X: Any, y: Any, qid: Any, eval_set: Any, eval_qid: Any, kwargs: dict[str, Any]
    ) -> DaskXGBRanker:
        """Repartition every set with :func:`stochrank.dask.query_arrangement`, then train.

        Not xgboost's own repartitioning (a shuffle, whose row order within a query varies from run to
        run): the objectives' noise follows the documents' order within a query, and this arrangement is
        deterministic (the model still depends on which worker holds which partition: XGBoost's
        all-reduces add the workers up in rank order). Arrays and DataFrames alike.
        """
        arrange, _ = query_arrangement(qid, n_partitions(X))
        weights = kwargs.pop("sample_weight_eval_set", None) or [None] * len(eval_set)
        margins = kwargs.pop("base_margin_eval_set", None) or [None] * len(eval_set)
        sets, qids, eval_weights, eval_margins = [], [], [], []
        for (Xe, ye), qe, we, be in zip(eval_set, eval_qid, weights, margins, strict=True):
            arrange_e = arrange if Xe is X else query_arrangement(qe, n_partitions(Xe))[0]
            sets.append((arrange_e(Xe), arrange_e(ye)))
            qids.append(arrange_e(qe))
            eval_weights.append(arrange_e(we))
            eval_margins.append(arrange_e(be))
        result: DaskXGBRanker = self._client_sync(
            self._fit_async,
            X=arrange(X),
            y=arrange(y),
            qid=arrange(qid),
            sample_weight=arrange(kwargs.pop("sample_weight", None)),
            base_margin=arrange(kwargs.pop("base_margin", None)),
            eval_set=sets or None,
            eval_qid=qids or None,
            sample_weight_eval_set=eval_weights if any(w is not None for w in eval_weights) else None,
            base_margin_eval_set=eval_margins if any(m is not None for m in eval_margins) else None,
            verbose=kwargs.pop("verbose", False),
            xgb_model=kwargs.pop("xgb_model", None),
            feature_weights=kwargs.pop("feature_weights", None),
        )
        return result

    def _trains_with_xgb_train(self) -> bool:
        """Whether to train with ``xgb.train(obj=, custom_metric=)``: a stochrank objective or metric.

        Upstream would call a stochrank metric (``feval``) per query as ``f(y_true, y_score)``.
        """
        return callable(self.objective) or _has_stochrank_metric(self.eval_metric)

    async def _fit_async(self, X: Any, y: Any, **kwargs: Any) -> DaskXGBRanker:
        if not self._trains_with_xgb_train():
            result: DaskXGBRanker = await super()._fit_async(X, y, **kwargs)
            return result
        params, objective, custom_metric = training_setup(self)
        model, _, params, feature_weights = self._configure_fit(
            kwargs["xgb_model"], params, kwargs["feature_weights"]
        )
        dtrain, evals = await dxgb._async_wrap_evaluation_matrices(
            self.client,
            device=self.device,
            tree_method=self.tree_method,
            max_bin=self.max_bin,
            X=X,
            y=y,
            group=None,
            qid=kwargs["qid"],
            sample_weight=kwargs["sample_weight"],
            base_margin=kwargs["base_margin"],
            feature_weights=feature_weights,
            eval_set=kwargs["eval_set"],
            sample_weight_eval_set=kwargs["sample_weight_eval_set"],
            base_margin_eval_set=kwargs["base_margin_eval_set"],
            eval_group=None,
            eval_qid=kwargs["eval_qid"],
            missing=self.missing,
            enable_categorical=self.enable_categorical,
            feature_types=self.feature_types,
        )
        callbacks = list(self.callbacks or [])
        early_stopping_rounds = self.early_stopping_rounds
        if custom_metric is not None and early_stopping_rounds is not None:
            # xgboost.dask.train has no maximize=: a ranking metric is maximised through the callback
            callbacks.append(xgb.callback.EarlyStopping(rounds=early_stopping_rounds, maximize=True))
            early_stopping_rounds = None
        results = await self.client.sync(
            dxgb._train_async,
            asynchronous=True,
            client=self.client,
            global_config=xgb.config.get_config(),
            dconfig=dxgb._get_dask_config(),
            params=params,
            dtrain=dtrain,
            num_boost_round=self.get_num_boosting_rounds(),
            evals=evals,
            obj=objective,
            custom_metric=custom_metric,
            verbose_eval=kwargs["verbose"],
            early_stopping_rounds=early_stopping_rounds,
            callbacks=callbacks or None,
            xgb_model=model,
            coll_cfg=self.coll_cfg,
        )
        self._Booster = results["booster"]
        self.evals_result_ = results["history"]
        return self

    def predict(self, X: Any, **kwargs: Any) -> Any:
        """Return ranking scores as a Dask collection (raw margins; ``base_margin`` only if passed again)."""
        kwargs.setdefault("output_margin", True)
        return super().predict(X, **kwargs)
