"""stochrank: optimise ranking metrics directly in LightGBM, XGBoost and CatBoost.

StochasticRank (Ustimenko & Prokhorenkova, ICML 2020): coordinate-conditional-sampling gradients of
noise-smoothed NDCG@k, DCG@k, ERR@k, pFound@k, MRR and learning-to-select-with-order, with relevance
shift, scale-free acceleration and SGLB.

>>> import lightgbm as lgb, stochrank
>>> booster = lgb.train({"objective": stochrank.ndcg(k=5)}, train_set)  # doctest: +SKIP
"""

from . import metrics
from .metrics import group_sizes
from .objectives import SGLB, StochasticRankObjective, dcg, err, lso, mrr, ndcg, pfound

__version__ = "0.1.0"


__all__ = [
    "SGLB",
    "StochasticRankObjective",
    "dcg",
    "err",
    "group_sizes",
    "lso",
    "metrics",
    "mrr",
    "ndcg",
    "pfound",
]
