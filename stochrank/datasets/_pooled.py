"""Small real datasets published without folds: read, pooled, and split into rotated query folds.

CatBoost's query-wise data and LightGBM's ranking example each come as one train and one test file, too few
queries (117, 251) for one fixed split to say anything. Both files are pooled and cut into
:data:`N_PARTS` query parts by a seeded permutation; fold ``f`` tests on part ``f``, validates on part
``f + 1`` (part 1 after the last) and trains on the rest, so every query is a test query exactly once over
the folds (see :func:`rotate`).
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np

from .._validation import check_choice, check_int
from ..data import CATBOOST_QUERYWISE_DIR, LIGHTGBM_EXAMPLE_DIR
from ._split import RankingSplit, _take_queries
from ._svmlight import load_svmlight_ranking

__all__ = ["N_PARTS", "ROTATION_SEED", "catboost_querywise", "lightgbm_example", "rotate"]

N_PARTS = 5
ROTATION_SEED = 0
CATBOOST_GRADE_SCALE = 10.0  # grade = round(10 r): CatBoost's targets r in [0, 0.61] become 0..6


def query_parts(n_queries: int, parts: int = N_PARTS, seed: int = ROTATION_SEED) -> np.ndarray:
    """Return each query's part 0..parts-1: ``default_rng(seed).permutation(arange(n_queries) % parts)``."""
    part: np.ndarray = np.random.default_rng(seed).permutation(np.arange(n_queries) % parts)
    return part


def rotate(
    pool: RankingSplit, fold: int, split: str, parts: int = N_PARTS, seed: int = ROTATION_SEED
) -> RankingSplit:
    """Return ``split`` of rotated query fold ``fold`` (1..parts) of ``pool``, rows in pool order.

    test = part ``fold``, vali = part ``fold + 1`` (part 1 after part ``parts``), train = the other parts;
    the parts are :func:`query_parts` of the pool (numbered from 1 here).
    """
    check_int(parts, "parts", "rotate", low=3)
    if check_int(fold, "fold", "rotate", low=1) > parts:
        raise ValueError(f"The 'fold' parameter of rotate must be in 1..{parts} (parts={parts}). Got {fold}.")
    check_choice(split, "split", "rotate", ("train", "vali", "test"))
    part = query_parts(pool.n_queries, parts, seed)
    test, vali = fold - 1, fold % parts
    keep = {"test": part == test, "vali": part == vali, "train": (part != test) & (part != vali)}[split]
    return _take_queries(pool, keep)


def _pool(splits: list[RankingSplit]) -> RankingSplit:
    return RankingSplit(
        np.vstack([s.X for s in splits]),
        np.concatenate([s.y for s in splits]),
        np.concatenate([s.qid for s in splits]),
        np.concatenate([s.group for s in splits]),
    )


def _read_catboost_tsv(path: Path, cd: Path) -> tuple[RankingSplit, np.ndarray]:
    """Read a CatBoost TSV file described by the column description ``cd``: (split with r labels, r)."""
    with gzip.open(cd, "rt") as handle:
        roles = {int(i): role for i, role in (line.split()[:2] for line in handle if line.strip())}
    by_role = {role: i for i, role in roles.items() if role in ("GroupId", "Target")}
    with gzip.open(path, "rt") as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle if line.strip()]
    features = [i for i in range(len(rows[0])) if i not in roles]  # undescribed columns are Num
    X = np.array([[float(row[i]) for i in features] for row in rows], dtype=np.float64)
    r = np.array([float(row[by_role["Target"]]) for row in rows], dtype=np.float64)
    qid = np.array([int(row[by_role["GroupId"]]) for row in rows], dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    group = np.diff(np.r_[starts, qid.size]).astype(np.int64)
    return RankingSplit(X, r, qid, group), r


@functools.cache
def catboost_querywise() -> RankingSplit:
    """Return CatBoost's query-wise train and test files pooled, labels encoded as grades ``round(10 r)``.

    The targets ``r`` (real, in [0, 0.61]) become integer grades 0..6 (half to even), since LambdaMART in
    LightGBM and XGBoost needs integer labels; ``qid`` is the file's GroupId (disjoint between the files).
    See ``stochrank/data/CatBoost_querywise/PROVENANCE.md``.
    """
    d = CATBOOST_QUERYWISE_DIR
    parts = [_read_catboost_tsv(d / f"{name}.gz", d / "train.cd.gz") for name in ("train", "test")]
    pool = _pool([split for split, _ in parts])
    r = np.concatenate([labels for _, labels in parts])
    if np.any((r < 0) | (r > 1)):
        raise ValueError(f"{d}: CatBoost's query-wise targets must be probabilities in [0, 1].")
    grades = np.rint(CATBOOST_GRADE_SCALE * r)
    return RankingSplit(pool.X, grades, pool.qid, pool.group)


@functools.cache
def lightgbm_example() -> RankingSplit:
    """Return LightGBM's ranking example, train and test files pooled (labels 0..4, 300 features, dense).

    ``qid`` is the query's index in the pool: the files have none (groups come from the ``.query`` files).
    """
    d = LIGHTGBM_EXAMPLE_DIR
    parts = [
        load_svmlight_ranking(d / f"rank.{name}.gz", 300, d / f"rank.{name}.query.gz")
        for name in ("train", "test")
    ]
    pool = _pool(parts)
    qid = np.repeat(np.arange(pool.n_queries, dtype=np.int64), pool.group)
    return RankingSplit(pool.X, pool.y, qid, pool.group)
