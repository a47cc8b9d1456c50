"""One objective object, one dataset, several fits at once: each fit is its own training run.

XGBoost does not copy the objective between runs and both boosters release the GIL while they build
trees, so threaded hyperparameter searches call one objective from several fits at once. Per-dataset
state (call counter, restart detection, SGLB scale) must therefore be per run: concurrent fits must give
the models sequential fits give, bit for bit.
"""

from __future__ import annotations

import threading

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb

import stochrank

from .test_boosters import make_queries

ROUNDS = 12


def _sglb_objective() -> stochrank.StochasticRankObjective:
    sglb = stochrank.SGLB(temperature=1e3, shrink_rate=0.5, learning_rate=0.3)
    return stochrank.ndcg(k=5, seed=3, sglb=sglb)


def _xgb_fit(obj: object, dtrain: xgb.DMatrix) -> np.ndarray:
    params = {"base_score": 0.0, "eta": 0.3, "max_depth": 3, "nthread": 1, "seed": 0}
    booster = xgb.train(params, dtrain, ROUNDS, obj=obj)
    return booster.predict(dtrain, output_margin=True)


def _lgb_fit(obj: object, dtrain: lgb.Dataset) -> np.ndarray:
    params = {"objective": obj, "learning_rate": 0.3, "num_leaves": 7, "verbose": -1, "num_threads": 1}
    params.update(deterministic=True, force_row_wise=True, seed=0)
    return lgb.train(params, dtrain, ROUNDS).predict(dtrain.get_data())


def _in_threads(fit, n: int) -> list[np.ndarray]:
    results: list[np.ndarray | None] = [None] * n
    barrier = threading.Barrier(n)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = fit()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r for r in results if r is not None]


@pytest.mark.parametrize("sglb", [False, True], ids=["plain", "sglb"])
def test_threads_sharing_one_objective_and_one_dmatrix_train_the_sequential_model(sglb: bool) -> None:
    X, y, sizes, _ = make_queries(n_queries=40, seed=2)
    dtrain = xgb.DMatrix(X, y, group=sizes)
    obj = _sglb_objective() if sglb else stochrank.ndcg(k=5, seed=3)
    sequential = [_xgb_fit(obj, dtrain) for _ in range(2)]
    assert np.array_equal(sequential[0], sequential[1])  # the run restarts: same model twice in a row
    for concurrent in _in_threads(lambda: _xgb_fit(obj, dtrain), 2):
        np.testing.assert_array_equal(concurrent, sequential[0])


def test_threads_sharing_one_objective_and_one_lightgbm_dataset() -> None:
    X, y, sizes, _ = make_queries(n_queries=40, seed=4)
    dtrain = lgb.Dataset(X, y, group=sizes, free_raw_data=False).construct()
    obj = _sglb_objective()
    sequential = _lgb_fit(obj, dtrain)
    for concurrent in _in_threads(lambda: _lgb_fit(obj, dtrain), 2):
        np.testing.assert_array_equal(concurrent, sequential)
