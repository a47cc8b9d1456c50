"""The XGBoost adapter (layer 3): estimators that train XGBoost trees with stochrank objectives.

``xgboost.XGBRanker`` refuses callable objectives; :class:`XGBRanker` keeps everything else of it and trains
a stochrank objective with ``xgb.train(..., obj=objective)``. ``xgb.train`` itself needs no adapter: pass
the objective as ``obj=``.
"""

from ._ranker import XGBRanker

__all__ = ["XGBRanker"]
