"""Early stopping on stochrank's metrics in every booster (issue 11, item 2).

``stochrank.metrics.feval`` logs under its own name (``sr-ndcg@5``), never a booster's built-in one: LightGBM
keys evaluation results and early stopping by name, and the old ``ndcg@5`` broke ``LGBMRanker`` early
stopping (``zip() argument 2 is shorter than argument 1``) and made ``lgb.train`` log two numbers under one
name.
"""

from __future__ import annotations

import json
import textwrap

import lightgbm as lgb
import numpy as np
import pytest

import stochrank
from stochrank import metrics as M

from .readme import code_block, run
from .test_boosters import make_queries


@pytest.fixture(scope="module")
def data():
    train = make_queries(n_queries=40, seed=1)
    valid = make_queries(n_queries=25, seed=2)
    return train, valid


def test_feval_logs_beside_lightgbms_builtin_ndcg(data):
    (X, y, sizes, _), (Xv, yv, sizes_v, _) = data
    train = lgb.Dataset(X, y, group=sizes)
    valid = lgb.Dataset(Xv, yv, group=sizes_v, reference=train)
    history: dict = {}
    params = {"objective": stochrank.ndcg(k=5), "metric": "ndcg", "eval_at": [5], "verbose": -1}
    lgb.train(
        {**params, "num_threads": 1, "learning_rate": 0.3},
        train,
        10,
        valid_sets=[valid],
        feval=M.feval("ndcg", k=5, gain="linear"),
        callbacks=[lgb.record_evaluation(history)],
    )
    assert set(history["valid_0"]) == {"ndcg@5", "sr-ndcg@5"}
    # Two metrics, two curves: LightGBM's exp-gain NDCG and the linear-gain one asked for.
    assert history["valid_0"]["ndcg@5"] != history["valid_0"]["sr-ndcg@5"]


@pytest.mark.filterwarnings("ignore:The argument 'eval_set' is deprecated")  # LightGBM >= 4.7
def test_lightgbm_lgbmranker_early_stops_on_feval(data):
    """The issue's call, as written: lightgbm.LGBMRanker with feval and LightGBM's default ndcg@1..5."""
    (X, y, sizes, _), (Xv, yv, sizes_v, _) = data
    ranker = lgb.LGBMRanker(objective=stochrank.ndcg(k=5), n_estimators=200, verbose=-1, n_jobs=1)
    ranker.fit(
        X,
        y,
        group=sizes,
        eval_set=[(Xv, yv)],
        eval_group=[sizes_v],
        eval_metric=stochrank.metrics.feval("ndcg", k=5),
        callbacks=[lgb.early_stopping(20, verbose=False)],
    )
    curves = ranker.evals_result_["valid_0"]
    assert {"ndcg@1", "ndcg@5", "sr-ndcg@5"} <= set(curves)
    expected = M.ndcg(yv, ranker.predict(Xv), sizes_v, k=5)  # predicts with the best iteration
    assert curves["sr-ndcg@5"][ranker.best_iteration_ - 1] == pytest.approx(expected, rel=1e-12)
    assert np.isfinite(curves["ndcg@5"]).all()


@pytest.mark.slow
def test_readme_early_stopping_recipes_run_as_written():
    """The README's recipe for each booster, run as written, then checked: every model stopped early at its
    best validation score on the metric the recipe says it watches."""
    checks = textwrap.dedent(
        """
        import json
        best_lgb = booster.best_score["valid_0"]
        scores = booster.predict(Xv, num_iteration=booster.best_iteration)
        print(json.dumps({
            "lgb.train": [dict(best_lgb), stochrank.metrics.ndcg(yv, scores, sizes_v, k=5)],
            "LGBMRanker": [ranker.best_iteration_, ranker.evals_result_["valid_0"]],
            "xgb.train": [bst.best_iteration, bst.num_boosted_rounds()],
            "XGBRanker": [xr.best_iteration, xr.evals_result()["validation_0"]],
            "CatBoostRanker": [cr.best_iteration_, cr.evals_result_["validation"]],
        }))
        """
    )
    out = json.loads(run(code_block("Early stopping") + checks).splitlines()[-1])
    best, recomputed = out["lgb.train"]
    assert list(best) == ["sr-ndcg@5"] and best["sr-ndcg@5"] == pytest.approx(recomputed, rel=1e-12)
    best, curves = out["LGBMRanker"]
    assert list(curves) == ["ndcg@5"] and len(curves["ndcg@5"]) == best + 20
    best, rounds = out["xgb.train"]
    assert rounds == best + 21 < 500
    best, curves = out["XGBRanker"]
    assert list(curves) == ["ndcg@5"] and len(curves["ndcg@5"]) == best + 21 < 500
    best, curves = out["CatBoostRanker"]
    (curve,) = (values for name, values in curves.items() if name.startswith("NDCG:top=5;type=Exp"))
    assert len(curve) == best + 21 < 500 and curve[best] == max(curve)
