"""The XGBoost adapter (layer 3): estimators that train XGBoost trees with stochrank objectives.

``xgboost.XGBRanker`` and ``xgboost.dask.DaskXGBRanker`` refuse callable objectives; :class:`XGBRanker`
and :class:`DaskXGBRanker` keep everything else of them and train a stochrank objective with
``xgb.train(..., obj=objective)`` / ``xgboost.dask.train(..., obj=objective)``. Those two functions
themselves need no adapter: pass the objective as ``obj=``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._ranker import XGBRanker

if TYPE_CHECKING:
    from ._dask import DaskXGBRanker

__all__ = ["DaskXGBRanker", "XGBRanker"]


def __getattr__(name: str) -> Any:
    # DaskXGBRanker imports dask and distributed: only when asked for
    if name == "DaskXGBRanker":
        from ._dask import DaskXGBRanker

        return DaskXGBRanker
    raise AttributeError(f"module 'stochrank.xgboost' has no attribute {name!r}")
