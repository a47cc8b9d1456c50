"""stochrank: optimise ranking metrics directly in LightGBM, XGBoost and CatBoost.

StochasticRank (Ustimenko & Prokhorenkova, ICML 2020): coordinate-conditional-sampling gradients of
noise-smoothed NDCG@k, DCG@k, ERR@k, pFound@k, MRR, AUC, MAP@k, precision@k and
learning-to-select-with-order, with relevance shift, scale-free acceleration and SGLB; exact SoftRank
(Taylor et al., WSDM 2008) with constant or per-document (Gaussian-process) score variances.

>>> import lightgbm as lgb, stochrank
>>> booster = lgb.train({"objective": stochrank.ndcg(k=5)}, train_set)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from . import metrics
from .conventions import group_sizes
from .objectives import (
    SGLB,
    RankingObjective,
    SoftRankObjective,
    StartWarning,
    StochasticRankObjective,
    auc,
    dcg,
    err,
    lso,
    map,
    mrr,
    ndcg,
    pfound,
    precision,
    softrank,
)

__version__ = "0.2.0"

if TYPE_CHECKING:  # what the lazy attributes below resolve to, for type checkers and IDEs
    from . import catboost, dask, datasets, explain, gp, lightgbm, xgboost

# Submodules that import a booster or scipy's optimisers load on first attribute access, so
# ``import stochrank`` stays light and ``stochrank.xgboost.XGBRanker`` works without a separate import.
_LAZY_SUBMODULES = ("catboost", "dask", "datasets", "explain", "gp", "lightgbm", "xgboost")


def __getattr__(name: str) -> ModuleType:
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'stochrank' has no attribute {name!r}")


__all__ = [
    "SGLB",
    "RankingObjective",
    "SoftRankObjective",
    "StartWarning",
    "StochasticRankObjective",
    "auc",
    "catboost",
    "dask",
    "datasets",
    "dcg",
    "err",
    "explain",
    "gp",
    "group_sizes",
    "lightgbm",
    "lso",
    "map",
    "metrics",
    "mrr",
    "ndcg",
    "pfound",
    "precision",
    "softrank",
    "xgboost",
]
