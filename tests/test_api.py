"""The README's usage lines, run as written in a fresh interpreter.

A fresh process matters: inside the test session other tests have already imported ``stochrank.xgboost``
and friends, which would hide a missing lazy attribute (``import stochrank`` alone must be enough for
``stochrank.xgboost.XGBRanker``). Each line must also *learn*: train NDCG@5 after training is compared
with the starting (all-equal scores) NDCG@5.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SNIPPET = textwrap.dedent(
    """
    import lightgbm as lgb, xgboost as xgb, stochrank
    from stochrank.datasets import load_mq2008
    from stochrank.metrics import ndcg

    train = load_mq2008(1, "train")
    sizes = train.group[:100]
    rows = int(sizes.sum())
    X, y, qid = train.X[:rows], train.y[:rows], train.query_index[:rows]
    start = ndcg(y, 0.0 * y, sizes, k=5)

    train_set = lgb.Dataset(X, y, group=sizes, params={"verbose": -1})
    booster = lgb.train({"objective": stochrank.ndcg(k=5), "verbose": -1}, train_set, num_boost_round=30)
    scores = {"lgb.train": booster.predict(X)}
    ranker = lgb.LGBMRanker(objective=stochrank.ndcg(k=5), n_estimators=30, verbose=-1).fit(X, y, group=sizes)
    scores["LGBMRanker"] = ranker.predict(X)
    dtrain = xgb.DMatrix(X, y, group=sizes)
    scores["xgb.train"] = xgb.train({"base_score": 0}, dtrain, 30, obj=stochrank.ndcg(k=5)).predict(dtrain)
    xr = stochrank.xgboost.XGBRanker(objective=stochrank.ndcg(k=5), n_estimators=30).fit(X, y, qid=qid)
    scores["XGBRanker"] = xr.predict(X)
    cr = stochrank.catboost.CatBoostRanker(objective=stochrank.ndcg(k=5), iterations=30, verbose=False)
    scores["CatBoostRanker"] = cr.fit(X, y, group_id=qid).predict(X)
    for name, s in scores.items():
        print(name, start, ndcg(y, s, sizes, k=5))
    """
)


@pytest.mark.slow
def test_readme_lines_train_in_a_fresh_interpreter():
    out = subprocess.run(
        [sys.executable, "-c", SNIPPET], capture_output=True, text=True, timeout=600, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line.split() for line in out.stdout.splitlines()]
    assert [r[0] for r in rows] == ["lgb.train", "LGBMRanker", "xgb.train", "XGBRanker", "CatBoostRanker"]
    for name, start, end in rows:
        assert float(end) > float(start) + 0.1, (name, start, end)
