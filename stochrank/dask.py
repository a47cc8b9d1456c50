"""Ranking data on Dask (layer 3): partitions that never split a query, and the check that none is split.

``lightgbm.dask.DaskLGBMRanker`` and ``xgboost.dask`` train every worker on the partitions it holds, and
call a Python objective with that worker's rows only. A listwise gradient is a function of a whole
query, so a query whose rows sit in two partitions (which may land on two workers) would be ranked as
two unrelated lists: a wrong gradient that no booster reports. Neither booster hands the query ids to
the worker-side objective (LightGBM passes query sizes, a DMatrix does not return its ``qid``), so the
objective cannot see the split; the check lives here, where the query ids are:

* :func:`partition_by_query` moves rows so that every query is whole in one partition (the partition
  sizes as even as the queries allow) and returns LightGBM's per-partition ``group`` array with them;
* :func:`check_query_partitions` raises a ValueError naming a split query and the fix;
  :class:`stochrank.xgboost.DaskXGBRanker` runs it before training;
* :func:`group_sizes` turns per-row query ids into the per-partition query sizes ``DaskLGBMRanker``
  takes, after the same check.

What is the same on a cluster, and what is not: the objectives key their noise streams by each query's
content (:attr:`stochrank.protocol.DatasetInfo.query_keys`), so a query's gradient does not depend on the
worker it lands on. Newton leaves scale Hessians by the training set's mean curvature; XGBoost's
collective adds it up over the workers, so ``xgb.dask`` gradients equal the single-process ones document
by document. LightGBM gives a Python objective no collective: under ``lightgbm.dask`` each worker scales
by the mean over its own rows (a factor per worker, close to 1 when queries are spread at random), which
with ``hessian='unit'`` does not arise.
"""

from __future__ import annotations

from .conventions.partitions import (
    QueryPartitions,
    check_query_partitions,
    group_sizes,
    n_partitions,
    partition_by_query,
    query_arrangement,
)

__all__ = [
    "QueryPartitions",
    "check_query_partitions",
    "group_sizes",
    "n_partitions",
    "partition_by_query",
    "query_arrangement",
]
