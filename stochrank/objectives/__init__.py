"""Objective configuration and the booster call (layer 2): what to optimise, and how a booster calls it.

* :mod:`.cascade` — the cascade metrics (NDCG, DCG, ERR, pFound, MRR, LSO) as validated dataclasses
  and their kernel encodings; :class:`.smoothing.Smoothing` — how they are smoothed;
* :mod:`.stochastic_rank` — :class:`StochasticRankObjective`; :mod:`.constructors` — ``ndcg()`` etc.;
* :mod:`.binary` — the binary-relevance metrics AUC, MAP, precision@k and their constructors;
* :mod:`.softrank` — exact SoftRank with constant, per-row or GP score variances;
* :mod:`.sglb` — Stochastic Gradient Langevin Boosting settings;
* :mod:`._base` — the booster call shared by every objective (caches, weights, runs, SGLB).
"""

from ._base import RankingObjective, StartWarning
from .binary import AUC, MAP, Precision, auc, map, precision
from .cascade import DCG, ERR, LSO, MRR, NDCG, CascadeMetric, PFound
from .constructors import dcg, err, lso, mrr, ndcg, pfound
from .sglb import SGLB
from .smoothing import Smoothing
from .softrank import SoftRankConfig, SoftRankObjective, VarianceModel, softrank
from .stochastic_rank import StochasticRankObjective

__all__ = [
    "AUC",
    "DCG",
    "ERR",
    "LSO",
    "MAP",
    "MRR",
    "NDCG",
    "SGLB",
    "CascadeMetric",
    "PFound",
    "Precision",
    "RankingObjective",
    "Smoothing",
    "SoftRankConfig",
    "SoftRankObjective",
    "StartWarning",
    "StochasticRankObjective",
    "VarianceModel",
    "auc",
    "dcg",
    "err",
    "lso",
    "map",
    "mrr",
    "ndcg",
    "pfound",
    "precision",
    "softrank",
]
