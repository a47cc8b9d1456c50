"""Objective configuration and dispatch: what to optimise, and how a booster calls it."""

from .sglb import SGLB
from .stochastic_rank import StochasticRankObjective, dcg, err, lso, mrr, ndcg, pfound

__all__ = ["SGLB", "StochasticRankObjective", "dcg", "err", "lso", "mrr", "ndcg", "pfound"]
