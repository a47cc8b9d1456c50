"""Ranking data shipped with stochrank: LETOR 4.0 MQ2008 (5 folds), for the demo and the tests.

See ``stochrank/data/MQ2008/PROVENANCE.md`` for the source and terms (Qin & Liu, *Introducing LETOR 4.0
Datasets*, arXiv:1306.2597, 2013; released by Microsoft Research for research use).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._validation import check_choice, check_int, offsets_from_qid

__all__ = ["MQ2008_DIR", "RankingSplit", "load_mq2008"]

MQ2008_DIR = Path(__file__).resolve().parent / "MQ2008"
_N_FEATURES = 46


@dataclass(frozen=True)
class RankingSplit:
    """One split of a ranking dataset: dense features, labels, and query structure in row order."""

    X: np.ndarray
    y: np.ndarray
    qid: np.ndarray
    group: np.ndarray  # documents per query, in row order

    @property
    def n_queries(self) -> int:
        return int(self.group.size)


def load_mq2008(fold: int = 1, split: str = "train") -> RankingSplit:
    """Load LETOR 4.0 MQ2008 ``Fold{fold}/{split}.txt`` (QueryLevelNorm features, labels 0/1/2).

    Rows keep the file order; query boundaries are the contiguous runs of qid (the Fold4/Fold5
    training files are not sorted by qid, so do not build groups from sorted ids).
    """
    from sklearn.datasets import load_svmlight_file

    check_int(fold, "fold", "load_mq2008", low=1)
    if fold > 5:
        raise ValueError(f"The 'fold' parameter of load_mq2008 must be 1..5. Got {fold} instead.")
    check_choice(split, "split", "load_mq2008", ("train", "vali", "test"))
    X, y, qid = load_svmlight_file(
        str(MQ2008_DIR / f"Fold{fold}" / f"{split}.txt.gz"), n_features=_N_FEATURES, query_id=True
    )
    group = np.diff(offsets_from_qid(qid))
    return RankingSplit(np.asarray(X.toarray(), dtype=np.float64), y.astype(np.float64), qid, group)
