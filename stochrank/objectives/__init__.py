"""Objective configuration and dispatch: what to optimise, and how a booster calls it."""

from ._base import RankingObjective
from .sglb import SGLB
from .softrank import SoftRankObjective, VarianceModel, softrank
from .stochastic_rank import StochasticRankObjective, dcg, err, lso, mrr, ndcg, pfound

__all__ = [
    "SGLB",
    "RankingObjective",
    "SoftRankObjective",
    "StochasticRankObjective",
    "VarianceModel",
    "dcg",
    "err",
    "lso",
    "mrr",
    "ndcg",
    "pfound",
    "softrank",
]
