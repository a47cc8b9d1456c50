"""Ranking metrics with explicit conventions (gain, discount, ties, empty queries) and booster callables.

Each metric takes ``(labels, scores, group)`` with ``group`` the documents per query in row order
(LightGBM style) and returns the weighted mean over queries, or the per-query values with
``per_query=True``. The defaults follow CatBoost and the StochasticRank paper (pessimistic ties);
each docstring lists the settings that reproduce LightGBM, XGBoost, CatBoost, scikit-learn,
trec_eval (``ties="key_descending", tiebreak=docno``; ``precision(denominator="k")``,
``map(denominator="relevant")``) and ranx.
:func:`feval` makes booster evaluation callables (early stopping), :func:`make_ranking_scorer` query-aware
scikit-learn scorers (model selection).
"""

from ..conventions import group_sizes
from ._auc import auc
from ._cascade import err, mrr, pfound
from ._dcg import dcg, ndcg
from ._feval import BoosterMetric, feval
from ._precision import map, precision
from ._scorer import RankingScorer, make_ranking_scorer

__all__ = [
    "BoosterMetric",
    "RankingScorer",
    "auc",
    "dcg",
    "err",
    "feval",
    "group_sizes",
    "make_ranking_scorer",
    "map",
    "mrr",
    "ndcg",
    "pfound",
    "precision",
]
