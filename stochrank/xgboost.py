"""``stochrank.xgboost.XGBRanker``: xgboost's sklearn ranker, accepting stochrank objectives."""

from .adapters.xgboost import XGBRanker

__all__ = ["XGBRanker"]
