"""Ranking metrics with explicit conventions (gain, discount, ties, empty queries) and booster callables.

Each metric takes ``(labels, scores, group)`` with ``group`` the documents per query in row order
(LightGBM style) and returns the weighted mean over queries, or the per-query values with
``per_query=True``. The defaults follow CatBoost and the StochasticRank paper (pessimistic ties);
each docstring lists the settings that reproduce LightGBM, XGBoost, CatBoost, scikit-learn,
trec_eval (``ties="key_descending", tiebreak=docno``; ``precision(denominator="k")``,
``map(denominator="relevant")``) and ranx.
"""

from ..conventions import group_sizes
from ._auc import auc
from ._cascade import err, mrr, pfound
from ._dcg import dcg, ndcg
from ._feval import BoosterMetric, feval
from ._precision import map, precision

__all__ = [
    "BoosterMetric",
    "auc",
    "dcg",
    "err",
    "feval",
    "group_sizes",
    "map",
    "mrr",
    "ndcg",
    "pfound",
    "precision",
]
