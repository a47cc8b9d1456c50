"""How boosters call a Python objective or metric, turned into one internal form (layer 1).

The same callable object is handed to ``lgb.train`` (``f(preds, Dataset)``), ``lightgbm.LGBMRanker``
(``f(y_true, y_pred, weight, group)``), ``xgb.train`` (``f(preds, DMatrix)``) and stochrank's own boosting
loops (``f(preds, RankingTarget)``, e.g. on CatBoost trees). :meth:`DatasetCache.unpack` recognises the
form by the *type* of the second argument (never by argument counts, which LightGBM uses to choose the
call form; see LightGBM issue #7018) and returns a :class:`BoosterCall`: the current scores plus the
training set's labels, query boundaries and query weights, read once per dataset and cached weakly.

One module per caller: :mod:`.lightgbm` (``Dataset``, ``LGBMRanker``'s arguments), :mod:`.xgboost`
(``DMatrix``), :mod:`.target` (:class:`RankingTarget`). They recognise the boosters' objects by duck
typing, so nothing here imports a booster.
"""

from .call import BoosterCall, CacheEntry, DatasetCache, DatasetInfo, sum_over_workers, training_features
from .target import RankingTarget

__all__ = [
    "BoosterCall",
    "CacheEntry",
    "DatasetCache",
    "DatasetInfo",
    "RankingTarget",
    "sum_over_workers",
    "training_features",
]
