"""``stochrank.catboost``: CatBoost's reference StochasticRank and stochrank gradients on CatBoost trees."""

from .adapters.catboost import CatBoostDeviationWarning, CatBoostRanker, native_loss

__all__ = ["CatBoostDeviationWarning", "CatBoostRanker", "native_loss"]
