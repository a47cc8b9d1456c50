r"""``stochrank.catboost``: CatBoost's reference StochasticRank and stochrank gradients on CatBoost trees.

CatBoost is where StochasticRank was first implemented, but it offers no way to plug in a query-aware
Python objective (its custom losses see blocks of documents without their queries). So
:class:`CatBoostRanker` has two engines:

``engine="native"`` (the reference path)
    Trains CatBoost's built-in ``StochasticRank:metric=...`` loss, built by :func:`native_loss` from the
    same objective object LightGBM and XGBoost use, and maps ``sglb=`` to ``langevin``,
    ``diffusion_temperature``, ``model_shrink_rate`` and ``model_shrink_mode``. Where CatBoost's
    derivatives are documented to differ from stochrank's it warns (:class:`CatBoostDeviationWarning`).
``engine="stochrank"`` (stochrank gradients on CatBoost trees)
    Boosts with stochrank's own gradients: every iteration calls ``objective(preds, RankingTarget)``,
    fits **one** CatBoost tree to that gradient table and adds its predictions; the trees are merged
    with ``catboost.sum_models`` into one ordinary CatBoost model. Early stopping, SGLB and the
    learning rate are handled by the loop. Works for every objective with stochrank's call protocol,
    including those CatBoost does not have.

``engine="auto"`` (default) takes the native path when CatBoost has the objective and the external one
otherwise, and for ``mrr(k=K)``: CatBoost 1.2.10 crashes (segmentation fault) on
``StochasticRank:metric=MRR;top=K`` with queries of realistic length.

The package's modules, from the bottom up: ``_native`` (the objective as CatBoost's loss string, eval
metric and SGLB parameters; the one reader of an objective's configuration), ``_data`` (validated data
sets, Pool group weights, row indices as float32 labels), ``_engine`` (both engines; the stochrank
engine's gradient table and boosting loop) and ``_ranker`` (the estimator).

Examples
--------
>>> import stochrank
>>> from stochrank.catboost import CatBoostRanker, native_loss
>>> ranker = CatBoostRanker(stochrank.ndcg(k=5)).fit(X, y, group_id=qid)  # doctest: +SKIP

CatBoost's own loss needs gradient leaves (``hessian="unit"``); the default Newton leaves have none:

>>> native_loss(stochrank.ndcg(k=5, hessian="unit"))  # doctest: +ELLIPSIS
'StochasticRank:metric=NDCG;top=5;type=Exp;denominator=LogPosition;sigma=1.0;mu=0.0;nu=0.01;...'
"""

from ._native import CatBoostDeviationWarning, native_loss
from ._ranker import CatBoostRanker

__all__ = ["CatBoostDeviationWarning", "CatBoostRanker", "native_loss"]
