"""stochrank: optimise ranking metrics directly in LightGBM, XGBoost and CatBoost.

StochasticRank (Ustimenko & Prokhorenkova, ICML 2020): coordinate-conditional-sampling gradients of
noise-smoothed NDCG@k, DCG@k, ERR@k, pFound@k, MRR and learning-to-select-with-order, with relevance
shift, scale-free acceleration and SGLB.

>>> import lightgbm as lgb, stochrank
>>> booster = lgb.train({"objective": stochrank.ndcg(k=5)}, train_set)  # doctest: +SKIP
"""

from ._validation import offsets_from_qid
from .objectives import SGLB, StochasticRankObjective, dcg, err, lso, mrr, ndcg, pfound

__version__ = "0.1.0"


def group_sizes(qid):  # noqa: ANN001, ANN201 - re-documented below
    """Query sizes (documents per query, in row order) from one query id per row.

    Rows of a query must be adjacent (they need not be sorted); otherwise a ValueError says how to
    reorder them.
    """
    import numpy as np

    return np.diff(offsets_from_qid(qid))


__all__ = [
    "SGLB",
    "StochasticRankObjective",
    "dcg",
    "err",
    "group_sizes",
    "lso",
    "mrr",
    "ndcg",
    "pfound",
]
