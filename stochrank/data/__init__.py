"""Ranking data shipped with stochrank: LETOR 4.0 MQ2008 (5 official folds).

It serves the demo, the tests and the default benchmark.

``MQ2008_DIR/Fold{1..5}/{train,vali,test}.txt.gz`` are the official QueryLevelNorm files, byte-identical to
the LETOR 4.0 release (see ``MQ2008/PROVENANCE.md`` for the source, checksums and terms: T. Qin and T.-Y. Liu,
*Introducing LETOR 4.0 Datasets*, arXiv:1306.2597, 2013; released by Microsoft Research for research use).
Load them with :func:`stochrank.datasets.load` (``load("mq2008", fold, split)``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["MQ2008_DIR"]

MQ2008_DIR = Path(__file__).resolve().parent / "MQ2008"
