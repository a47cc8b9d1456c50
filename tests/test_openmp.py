"""Quieting the other OpenMP team around our parallel kernels (stochrank._openmp).

Before a kernel XGBoost's vendored runtime is released, after an XGBoost/CatBoost call Numba's own
workers; each release must actually end spinning worker threads, and must not change any model.
"""

from __future__ import annotations

import os
import sys
import time

import lightgbm as lgb
import numba
import numpy as np
import pytest
import xgboost as xgb

import stochrank
import stochrank.objectives._base
from stochrank import _openmp, _parallel

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def test_pausing_releases_the_vendored_runtime_and_leaves_the_system_one_alone():
    rng = np.random.default_rng(0)
    d = xgb.DMatrix(rng.normal(size=(4000, 8)), rng.integers(0, 3, 4000), group=[40] * 100)
    xgb.train({"objective": "rank:ndcg", "nthread": 4}, d, 2)
    # XGBoost caps its team at the usable cores; the team's workers are all threads but the caller
    workers = min(4, len(os.sched_getaffinity(0))) - 1
    paths = set(_openmp._vendored_libgomp_paths())
    assert paths and all("libgomp.so" not in os.path.basename(p) for p in paths)
    before = _threads()
    _openmp.quiet_foreign_openmp()
    for _ in range(200):  # the released workers exit asynchronously
        if _threads() <= before - workers:
            break
        time.sleep(0.01)
    assert _threads() <= before - workers, (before, workers, _threads())


def test_models_are_the_same_with_and_without_quieting(monkeypatch):
    rng = np.random.default_rng(1)
    n_queries, size = 300, 80  # above the parallel threshold, so kernels launch in parallel
    X = rng.normal(size=(n_queries * size, 6))
    y = rng.integers(0, 3, n_queries * size).astype(float)
    d = xgb.DMatrix(X, y, group=[size] * n_queries)
    params = {"base_score": 0.0, "max_depth": 3, "eta": 0.3, "nthread": 2, "seed": 0}
    quiet = xgb.train(params, d, 5, obj=stochrank.ndcg(k=5)).predict(d, output_margin=True)
    monkeypatch.setattr(_openmp, "quiet_foreign_openmp", lambda: None)
    monkeypatch.setattr(stochrank._parallel, "quiet_foreign_openmp", lambda: None)
    monkeypatch.setattr(stochrank.objectives._base, "release_kernel_threads", lambda n_rows: None)
    plain = xgb.train(params, d, 5, obj=stochrank.ndcg(k=5)).predict(d, output_margin=True)
    np.testing.assert_array_equal(quiet, plain)


def _wait_for(predicate) -> bool:
    for _ in range(200):  # released workers exit asynchronously
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs an OpenMP team of at least 2")
def test_releasing_numbas_own_workers_ends_them():
    numba.set_num_threads(2)
    stochrank.metrics.ndcg(np.zeros(30_000), np.ones(30_000), [100] * 300, k=5)  # a parallel launch
    if _parallel.threading_layer() != "omp":
        pytest.skip("Numba runs another threading layer")
    before = _threads()
    _parallel.release_kernel_threads(30_000)
    assert _wait_for(lambda: _threads() <= before - 1), (before, _threads())


@pytest.mark.parametrize(("library", "released"), [("xgboost", True), ("lightgbm", False)])
def test_only_calls_from_boosters_with_their_own_threads_release_numbas(monkeypatch, library, released):
    calls: list[int] = []
    monkeypatch.setattr(stochrank.objectives._base, "release_kernel_threads", calls.append)
    rng = np.random.default_rng(2)
    y, sizes = rng.integers(0, 3, 400).astype(float), [40] * 10
    data = xgb.DMatrix(np.zeros((400, 1)), y, group=sizes) if library == "xgboost" else None
    if data is None:
        data = lgb.Dataset(np.zeros((400, 1)), y, group=sizes).construct()
    stochrank.ndcg(k=5)(np.zeros(400), data)
    assert calls == ([400] if released else [])
