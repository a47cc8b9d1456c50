"""Ranking data shipped with stochrank: LETOR 4.0 MQ2008 and two small real sets from the boosters' projects.

They serve the demo, the tests and the benchmark.

* ``MQ2008_DIR/Fold{1..5}/{train,vali,test}.txt.gz``: the official QueryLevelNorm files, byte-identical to the
  LETOR 4.0 release (see ``MQ2008/PROVENANCE.md`` for the source, checksums and terms: T. Qin and T.-Y. Liu,
  *Introducing LETOR 4.0 Datasets*, arXiv:1306.2597, 2013; released by Microsoft Research for research use).
* ``CATBOOST_QUERYWISE_DIR/{train,test}.gz`` (+ ``train.cd.gz``): CatBoost's query-wise test data
  (Apache-2.0), see its ``PROVENANCE.md``.
* ``LIGHTGBM_EXAMPLE_DIR/rank.{train,test}{,.query}.gz``: LightGBM's lambdarank example (MIT), see its
  ``PROVENANCE.md``.

Load them with :func:`stochrank.datasets.load` (``"mq2008"``, ``"catboost-querywise"``,
``"lightgbm-example"``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CATBOOST_QUERYWISE_DIR", "LIGHTGBM_EXAMPLE_DIR", "MQ2008_DIR"]

_HERE = Path(__file__).resolve().parent
MQ2008_DIR = _HERE / "MQ2008"
CATBOOST_QUERYWISE_DIR = _HERE / "CatBoost_querywise"
LIGHTGBM_EXAMPLE_DIR = _HERE / "LightGBM_lambdarank"
