"""The resumable run cache: every finished fit on disk, keyed by what makes it that fit.

A fit's key is a hash of (dataset, method, fold, configuration, seed) plus the protocol settings that change
a fit (:meth:`stochrank.bench.Protocol.identity`: :data:`CACHE_VERSION`, target metric, rounds, patience,
normalisation, query limit) and, for a dataset read from a data root or built by code,
:func:`data_fingerprint` of the fold (and the resolved root). It is stored under ``<root>/<method>/fold<f>/``
as JSON (validation curve, best iteration, seconds and the threads/jobs it ran with, per-query test metrics)
and ``.npz`` (test scores); a rerun loads it instead of training, unless its per-query metrics do not match
the test split (then it is trained again).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .trainers import FoldData

if TYPE_CHECKING:  # the protocol builds the cache; the cache only reads the protocol's settings
    from .protocol import Protocol

__all__ = ["CACHE_VERSION", "Run", "RunCache", "cache_key", "data_fingerprint"]

CACHE_VERSION = (
    2  # bump when a change makes cached fits incomparable (2: Newton-leaf stochrank defaults, --metric)
)


@dataclass
class Run:
    """One finished fit: (method, fold, configuration, seed) and what it produced."""

    method: str
    fold: int
    seed: int
    config_index: int
    config: dict[str, dict[str, Any]]
    vali: float  # validation NDCG@k of the kept model (report convention)
    best_iteration: int
    rounds: int  # trees trained before stopping
    seconds: float  # wall time of the fit in the run that trained it, with ``threads`` and ``jobs`` below
    curve: list[float]
    test_metrics: dict[str, list[float]]  # per query, NaN for skipped queries
    test_scores: npt.NDArray[np.float64] | None = field(default=None, repr=False)
    threads: int | None = None  # threads per fit and fits at once when it was trained (None: not recorded)
    jobs: int | None = None

    def metric_means(self) -> dict[str, float]:
        """Return the test metrics averaged over the queries that count."""
        return {name: float(np.nanmean(values)) for name, values in self.test_metrics.items()}


def data_fingerprint(data: FoldData) -> str:
    """Return the SHA-256 of the labels, query sizes and feature-matrix shape of a fold's splits.

    Cheap (no features hashed), and different for another copy of the data: train, validation and test as
    :func:`stochrank.bench.protocol.load_fold` returns them.
    """
    digest = hashlib.sha256()
    for split in (data.train, data.vali, data.test):
        digest.update(repr(split.X.shape).encode())
        digest.update(np.ascontiguousarray(split.y, dtype=np.float64).tobytes())
        digest.update(np.ascontiguousarray(split.group, dtype=np.int64).tobytes())
    return digest.hexdigest()


def cache_key(identity: dict[str, Any], method: str, fold: int, config: dict[str, Any], seed: int) -> str:
    """Return the first 16 hex digits of the SHA-256 of a fit's identity (protocol settings and fit)."""
    text = json.dumps(
        {**identity, "method": method, "fold": fold, "seed": seed, "config": config},
        sort_keys=True, default=float,
    )  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class RunCache:
    """Finished fits on disk: ``<root>/<method>/fold<f>/seed<s>-c<i>-<key>.json`` (+ ``.npz`` scores)."""

    def __init__(self, root: str | os.PathLike[str], protocol: Protocol) -> None:
        self.root = Path(root)
        self.protocol = protocol

    def path(self, method: str, fold: int, config_index: int, config: dict[str, Any], seed: int) -> Path:
        """Return where the fit of (method, fold, configuration, seed) is stored."""
        key = cache_key(self.protocol.identity(fold), method, fold, config, seed)
        return self.root / method / f"fold{fold}" / f"seed{seed}-c{config_index}-{key}.json"

    def load(self, path: Path, fold: int) -> Run | None:
        """Return the fit stored at ``path`` (on ``fold``), or None.

        None if there is none or it does not fit the fold's test split: other metrics, or per-query
        metrics / scores of another length (warned, retrained).
        """
        if not path.is_file() or not path.with_suffix(".npz").is_file():
            return None
        record = json.loads(path.read_text())
        test = self.protocol.data(fold).test
        names = self.protocol.metric_names()
        with np.load(path.with_suffix(".npz")) as npz:
            record["test_scores"] = npz["test_scores"]
        stored = tuple(record["test_metrics"])
        lengths = {len(values) for values in record["test_metrics"].values()}
        problem = (
            f"its metrics {stored} are not {names}" if stored != names
            else f"it has per-query metrics of {sorted(lengths)} queries, the test split {test.n_queries}"
            if lengths != {test.n_queries}
            else f"it has {record['test_scores'].size} test scores, the test split {test.y.size} documents"
            if record["test_scores"].shape != test.y.shape
            else None
        )  # fmt: skip
        if problem is not None:
            warnings.warn(f"Ignoring the cached fit {path}: {problem}; it is trained again.", RuntimeWarning,
                          stacklevel=2)  # fmt: skip
            return None
        record["test_metrics"] = {
            name: [math.nan if v is None else v for v in values]
            for name, values in record["test_metrics"].items()
        }
        return Run(**record)

    def store(self, path: Path, run: Run) -> None:
        """Write ``run`` to ``path``: the scores first, then the JSON, whose presence marks a complete fit."""
        path.parent.mkdir(parents=True, exist_ok=True)
        record = asdict(run)
        scores = record.pop("test_scores")
        record["test_metrics"] = {
            name: [None if math.isnan(v) else v for v in values]
            for name, values in record["test_metrics"].items()
        }
        # Scores first, then the JSON (atomically): a JSON file on disk means the fit is complete.
        np.savez_compressed(path.with_suffix(".npz"), test_scores=scores)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, default=float))
        tmp.replace(path)
