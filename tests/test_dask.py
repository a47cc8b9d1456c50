"""stochrank on a real Dask cluster: LocalCluster, 2 worker processes of 1 thread each (one per module).

Gradients are recorded on the workers during training and compared document by document with the
single-process gradient at the same scores. Documents are identified by their start score (an
``init_score`` / ``base_margin`` of ``index / 4096``, exact in float32), so the comparison needs no row
order from the workers.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
lgb_dask = pytest.importorskip("lightgbm.dask")
xgb_dask = pytest.importorskip("xgboost.dask")

import lightgbm as lgb  # noqa: E402
import pandas as pd  # noqa: E402

import stochrank  # noqa: E402
from stochrank.dask import check_query_partitions, group_sizes, partition_by_query  # noqa: E402
from stochrank.datasets import load_mq2008  # noqa: E402
from stochrank.protocol import RankingTarget  # noqa: E402
from stochrank.xgboost import DaskXGBRanker  # noqa: E402

STEP = 1.0 / 4096  # start score of document i: i * STEP, exact in float32 for i < 2**24


class Recorder:
    """Wrap an objective; write the scores and gradients of its first call to a file (on the worker)."""

    def __init__(self, objective: Any, folder: str) -> None:
        self.objective = objective
        self.folder = folder
        self.calls = 0

    def __call__(self, a: Any, b: Any, weight: Any = None, group: Any = None) -> Any:
        grad, hess = self.objective(a, b, weight, group)
        if self.calls == 0:
            preds = np.asarray(b if group is not None else a, dtype=np.float64)
            np.savez(Path(self.folder) / f"{os.getpid()}-{id(self)}.npz", preds=preds, grad=grad, hess=hess)
        self.calls += 1
        return grad, hess


def _recorded(folder: Path) -> list[dict[str, np.ndarray]]:
    return [dict(np.load(f)) for f in sorted(folder.glob("*.npz"))]


@pytest.fixture(scope="module")
def client() -> Any:
    # compile (or load) the kernels here first, so the workers find them in Numba's on-disk cache
    split = load_mq2008()
    stochrank.ndcg(k=5)(np.zeros(split.y.size), RankingTarget(split.y, split.group))
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def mq() -> Any:
    return _unique_content(load_mq2008())


def _two_partitions(split: Any, client: Any = None, *extra: np.ndarray) -> Any:
    """MQ2008 as Dask arrays cut into two partitions at a query boundary (partition i on worker i).

    ``extra`` per-row arrays come back as Dask arrays cut the same way, after the query partitions.
    """
    parts = partition_by_query(
        da.from_array(split.X, chunks=(2000, -1)),
        da.from_array(split.y, chunks=2000),
        da.from_array(split.qid, chunks=2000),
        npartitions=2,
    )
    if client is None:
        return parts
    workers = sorted(client.scheduler_info()["workers"])
    cut = parts.y.chunks[0][0]

    def placed(a: np.ndarray) -> Any:
        pieces = [a[:cut], a[cut:]]
        futures = [client.scatter(p, workers=[w]) for p, w in zip(pieces, workers, strict=True)]
        return da.concatenate(
            [da.from_delayed(f, shape=p.shape, dtype=p.dtype) for f, p in zip(futures, pieces, strict=True)]
        )

    group = parts.group.compute()
    n_first = parts.group.chunks[0][0]
    group_parts = [
        client.scatter(g, workers=[w])
        for g, w in zip((group[:n_first], group[n_first:]), workers, strict=True)
    ]
    group_array = da.concatenate(
        [
            da.from_delayed(f, shape=(n,), dtype=group.dtype)
            for f, n in zip(group_parts, (n_first, group.size - n_first), strict=True)
        ]
    )
    return (placed(split.X), placed(split.y), placed(split.qid), group_array, *(placed(e) for e in extra))


def _compare(records: list[dict[str, np.ndarray]], split: Any, objective: Any) -> tuple[Any, ...]:
    """Return (worker grads, single-process grads at the same documents, worker of each document)."""
    assert len(records) == 2  # one first call per worker
    preds = np.arange(split.y.size) * STEP
    single, single_hess = objective(preds, RankingTarget(split.y, split.group))
    idx = np.concatenate([np.rint(r["preds"] / STEP).astype(np.int64) for r in records])
    assert np.array_equal(np.sort(idx), np.arange(split.y.size))  # every document once, on one worker
    worker = np.concatenate([np.full(r["preds"].size, i) for i, r in enumerate(records)])
    grad = np.concatenate([r["grad"] for r in records])
    hess = np.concatenate([r["hess"] for r in records])
    return grad, single[idx], hess, single_hess[idx], worker


def _unique_content(split: Any) -> SimpleNamespace:
    """The queries of ``split`` whose labels no other query repeats.

    Copies of one label list are told apart by their order of appearance, which restarts on each worker:
    when copies sit on two workers their noise differs from the single process's (and, through the
    Newton scale, every gradient by one common factor, +0.2 % on MQ2008 Fold1). Without copies, every
    query's noise is its own.
    """
    info = RankingTarget(split.y, split.group).info()
    keys = stochrank.kernels.query_keys(info.labels, info.offsets)
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    keep = np.repeat(counts[inverse] == 1, split.group)
    group = split.group[counts[inverse] == 1]
    return SimpleNamespace(X=split.X[keep], y=split.y[keep], qid=split.qid[keep], group=group)


OBJECTIVES = {
    "ndcg": lambda: stochrank.ndcg(k=5),
    "ndcg-sglb": lambda: stochrank.ndcg(k=5, sglb=stochrank.SGLB(learning_rate=0.1)),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_xgboost_dask_gradients_equal_single_process(client: Any, mq: Any, tmp_path: Path, name: str) -> None:
    X, y, qid, _, margin = _two_partitions(mq, client, np.arange(mq.y.size) * STEP)
    dtrain = xgb_dask.DaskDMatrix(client, X, y, qid=qid, base_margin=margin)
    xgb_dask.train(
        client,
        {"base_score": 0.0, "eta": 0.1, "max_depth": 3},
        dtrain,
        num_boost_round=2,
        obj=Recorder(OBJECTIVES[name](), str(tmp_path)),
    )
    grad, single, hess, single_hess, _ = _compare(_recorded(tmp_path), mq, OBJECTIVES[name]())
    # the Newton scale is all-reduced over the workers: equal up to the order of one floating-point sum
    assert np.allclose(grad, single, rtol=1e-12, atol=1e-15)
    assert np.allclose(hess, single_hess, rtol=1e-12, atol=0)


@pytest.mark.slow
def test_lightgbm_dask_gradients(client: Any, mq: Any, tmp_path: Path) -> None:
    """Unit Hessians: equal document by document. Newton: one factor per worker (LightGBM has no collective
    for the mean curvature), the same for gradients and Hessians, so each worker's leaves are Newton steps."""
    X, y, _, group, init = _two_partitions(mq, client, np.arange(mq.y.size) * STEP)
    for hessian in ("unit", "newton"):
        folder = tmp_path / hessian
        folder.mkdir()
        objective = stochrank.ndcg(k=5, hessian=hessian)
        ranker = lgb_dask.DaskLGBMRanker(
            objective=Recorder(objective, str(folder)), n_estimators=2, num_leaves=7, verbose=-1
        )
        ranker.fit(X, y, group=group, init_score=init)
        grad, single, hess, single_hess, worker = _compare(_recorded(folder), mq, objective)
        if hessian == "unit":
            assert np.array_equal(grad, single) and np.array_equal(hess, single_hess)
            continue
        for w in (0, 1):
            on = (worker == w) & (single_hess > 0)
            ratio = hess[on] / single_hess[on]
            assert np.allclose(ratio, ratio[0], rtol=1e-9)
            assert np.allclose(grad[on], ratio[0] * single[on], rtol=1e-9, atol=1e-15)


def _test_ndcg(scores: np.ndarray, split: Any) -> float:
    return float(stochrank.metrics.ndcg(split.y, scores, split.group, k=5))


@pytest.mark.slow
def test_mq2008_test_ndcg_matches_single_process(client: Any) -> None:
    mq, test = load_mq2008(), load_mq2008(split="test")
    X, y, qid, group = _two_partitions(mq, client)
    params = {"n_estimators": 40, "learning_rate": 0.1, "num_leaves": 15, "min_child_samples": 20}
    dist = lgb_dask.DaskLGBMRanker(objective=stochrank.ndcg(k=5), verbose=-1, **params)
    dist.fit(X, y, group=group)
    local = lgb.LGBMRanker(objective=stochrank.ndcg(k=5), verbose=-1, **params).fit(
        mq.X, mq.y, group=mq.group
    )
    lgb_gap = _test_ndcg(dist.to_local().predict(test.X), test) - _test_ndcg(local.predict(test.X), test)

    xparams = {"n_estimators": 40, "learning_rate": 0.1, "max_depth": 4}
    xdist = DaskXGBRanker(objective=stochrank.ndcg(k=5), allow_group_split=True, **xparams)
    xdist.client = client
    xdist.fit(X, y, qid=qid)
    xlocal = stochrank.xgboost.XGBRanker(objective=stochrank.ndcg(k=5), **xparams).fit(mq.X, mq.y, qid=mq.qid)
    xgb_gap = _test_ndcg(xdist.predict(da.from_array(test.X)).compute(), test) - _test_ndcg(
        xlocal.predict(test.X), test
    )
    # 156 test queries: NDCG@5's standard error is ~0.03; two workers change LightGBM's and XGBoost's
    # histogram bins (and LightGBM's Newton scale per worker), not the objective
    assert abs(lgb_gap) < 0.03
    assert abs(xgb_gap) < 0.03


@pytest.mark.slow
def test_dask_xgbranker_eval_set_early_stopping_and_reproducible(client: Any, mq: Any) -> None:
    """Same data, partitions and placement of the partitions on the workers: the same model.

    The partitions are pinned to the workers: XGBoost's result depends on which worker holds what (its
    all-reduces add the workers up in rank order), and with a DataFrame eval set a worker left without eval
    rows fails XGBoost's feature-name check.
    """
    X, y, qid, _ = _two_partitions(mq, client)
    vX, vy, vq, _ = _two_partitions(load_mq2008(split="vali"), client)

    def fit() -> DaskXGBRanker:
        ranker = DaskXGBRanker(
            objective=stochrank.ndcg(k=5),
            n_estimators=200,
            learning_rate=0.3,
            max_depth=3,
            early_stopping_rounds=5,
            allow_group_split=True,
        )
        ranker.client = client
        return ranker.fit(X, y, qid=qid, eval_set=[(vX, vy)], eval_qid=[vq])

    ranker = fit()
    history = ranker.evals_result()["validation_0"]["ndcg@5"]
    assert ranker.best_iteration < 199 and len(history) == ranker.best_iteration + 6
    again = fit()
    assert again.best_iteration == ranker.best_iteration
    assert np.array_equal(ranker.predict(vX).compute(), again.predict(vX).compute())


@pytest.mark.parametrize("objective", ["rank:ndcg", "stochrank"])
def test_dask_xgbranker_stochrank_metric_is_the_whole_sets_mean(client: Any, mq: Any, objective: str) -> None:
    """``feval`` is XGBoost's custom metric, with a string objective too, and its logged value is the mean
    over every worker's queries (XGBoost itself reports the plain mean of the workers' own values)."""
    X, y, qid, _ = _two_partitions(mq, client)
    vX, vy, vq, _ = _two_partitions(load_mq2008(split="vali"), client)
    metric = stochrank.metrics.feval("ndcg", k=5)
    objective_of = {"rank:ndcg": "rank:ndcg", "stochrank": stochrank.ndcg(k=5)}
    ranker = DaskXGBRanker(objective=objective_of[objective], eval_metric=metric, n_estimators=4, max_depth=3,
                           allow_group_split=True)  # fmt: skip
    ranker.client = client
    ranker.fit(X, y, qid=qid, eval_set=[(vX, vy)], eval_qid=[vq])
    curve = ranker.evals_result()["validation_0"][metric.name]
    scores = ranker.predict(vX).compute()  # in the partitions' row order, as the labels below
    expected = stochrank.metrics.ndcg(vy.compute(), scores, stochrank.group_sizes(vq.compute()), k=5)
    assert len(curve) == 4 and curve[-1] == pytest.approx(expected, rel=1e-6)


def test_stochrank_metric_with_an_eval_set_on_one_worker(client: Any, mq: Any) -> None:
    """A worker holding none of the eval rows evaluates an empty DMatrix: it shares nothing, the value is the
    eval set's own (training used to fail: that worker could not read its share's query groups)."""
    X, y, qid, _ = _two_partitions(mq, client)
    vali = load_mq2008(split="vali")
    workers = sorted(client.scheduler_info()["workers"])
    vX, vy, vq = (
        da.from_delayed(client.scatter(a, workers=[workers[0]]), shape=a.shape, dtype=a.dtype)
        for a in (vali.X, vali.y, vali.qid)
    )
    metric = stochrank.metrics.feval("ndcg", k=5)
    ranker = DaskXGBRanker(objective=stochrank.ndcg(k=5), eval_metric=metric, n_estimators=3, max_depth=3,
                           allow_group_split=True)  # fmt: skip
    ranker.client = client
    ranker.fit(X, y, qid=qid, eval_set=[(vX, vy)], eval_qid=[vq])
    curve = ranker.evals_result()["validation_0"][metric.name]
    expected = stochrank.metrics.ndcg(vali.y, ranker.predict(vX).compute(), vali.group, k=5)
    assert len(curve) == 3 and curve[-1] == pytest.approx(expected, rel=1e-6)


@pytest.mark.slow
def test_dask_xgbranker_repartitions_dataframes_by_query(client: Any) -> None:
    """allow_group_split=False (default): scattered queries in DataFrames are made whole before training."""
    split = load_mq2008(split="vali")
    order = np.random.default_rng(0).permutation(split.y.size)  # every query's rows scattered
    columns = [f"f{i}" for i in range(split.X.shape[1])]
    X = dd.from_pandas(pd.DataFrame(split.X[order], columns=columns), npartitions=3)
    y = dd.from_pandas(pd.Series(split.y[order], name="label"), npartitions=3)
    qid = dd.from_pandas(pd.Series(split.qid[order], name="qid"), npartitions=3)
    with pytest.raises(ValueError, match=r"is split"):
        check_query_partitions(qid)
    ranker = DaskXGBRanker(objective=stochrank.ndcg(k=5), n_estimators=10, max_depth=3)
    ranker.client = client
    ranker.fit(X, y, qid=qid)
    scores = ranker.predict(dd.from_pandas(pd.DataFrame(split.X, columns=columns), npartitions=1)).compute()
    assert _test_ndcg(scores, split) > _test_ndcg(np.zeros(split.y.size), split) + 0.1


def test_objective_pickles_to_workers(client: Any, mq: Any) -> None:
    objective = stochrank.ndcg(k=5, sglb=stochrank.SGLB(learning_rate=0.1), seed=7)
    assert pickle.loads(pickle.dumps(objective)) == objective
    preds = np.random.default_rng(0).normal(size=mq.y.size)

    def remote(obj: Any) -> tuple[np.ndarray, np.ndarray]:
        return obj(preds, RankingTarget(mq.y, mq.group))  # type: ignore[no-any-return]

    grad, hess = client.submit(remote, objective, pure=False).result()
    local_grad, local_hess = remote(objective.with_sglb(objective.sglb))
    assert np.array_equal(grad, local_grad) and np.array_equal(hess, local_hess)
    ranker = DaskXGBRanker(objective=objective, n_estimators=3)
    clone = pickle.loads(pickle.dumps(ranker))
    assert clone.get_params()["objective"] == objective and clone.n_estimators == 3


def test_split_query_is_refused(client: Any) -> None:
    qid = da.from_array(np.array([1, 1, 2, 2, 2, 3, 3]), chunks=3)  # query 2 in partitions 0 and 1
    X = da.from_array(np.zeros((7, 2)), chunks=(3, 2))
    y = da.from_array(np.array([0, 1, 0, 1, 2, 1, 0.0]), chunks=3)
    with pytest.raises(
        ValueError, match=r"Query 2 is split: its rows are in partitions 0, 1.*partition_by_query"
    ):
        check_query_partitions(qid)
    with pytest.raises(ValueError, match=r"Query 2 is split"):
        group_sizes(qid)
    ranker = DaskXGBRanker(objective=stochrank.ndcg(k=5), allow_group_split=True, n_estimators=2)
    ranker.client = client
    with pytest.raises(ValueError, match=r"Query 2 is split"):
        ranker.fit(X, y, qid=qid)
    with pytest.raises(ValueError, match=r"DaskXGBRanker.fit needs the query structure: pass qid="):
        ranker.fit(X, y)
    with pytest.raises(ValueError, match=r"eval_set has 1 entries but eval_qid has 0: pass eval_qid="):
        ranker.fit(X, y, qid=qid, eval_set=[(X, y)])
    with pytest.raises(ValueError, match=r"DaskXGBRanker needs a ranking objective .* got objective='reg:"):
        DaskXGBRanker(objective="reg:squarederror")
    rows = da.from_array(np.array([1, 2, 1, 3]), chunks=4)
    with pytest.raises(
        ValueError, match=r"Query 1 is split: its rows are in partition 0, in runs of rows that"
    ):
        check_query_partitions(rows)


def test_partition_by_query_keeps_rows_and_cuts_at_query_boundaries() -> None:
    rng = np.random.default_rng(3)
    sizes = rng.integers(1, 9, 60)
    qid = np.repeat(rng.permutation(60) * 5, sizes)
    X = rng.normal(size=(qid.size, 3))
    y = rng.integers(0, 3, qid.size).astype(float)
    order = rng.permutation(qid.size)  # queries scattered over the rows
    with dask.config.set(scheduler="synchronous"):
        for kind in ("array", "frame"):
            if kind == "array":
                args = [da.from_array(a[order], chunks=50) for a in (X, y, qid)]
            else:
                args = [
                    dd.from_pandas(pd.DataFrame(X[order]), npartitions=4),
                    dd.from_pandas(pd.Series(y[order]), npartitions=4),
                    dd.from_pandas(pd.Series(qid[order]), npartitions=4),
                ]
            out = partition_by_query(*args, weight=args[1])
            check_query_partitions(out.qid)
            got_q, got_y, got_w = (np.asarray(c.compute()).reshape(-1) for c in (out.qid, out.y, out.weight))
            got_X = np.asarray(out.X.compute())
            # every row travels whole: (features, label, query) triples are the same multiset
            before = sorted(map(tuple, np.c_[X, y, qid].round(12)))
            assert sorted(map(tuple, np.c_[got_X, got_y, got_q].round(12))) == before
            assert np.array_equal(got_w, got_y)
            group = out.group.compute()
            assert group.sum() == qid.size and group.size == 60
            assert np.array_equal(
                np.repeat(np.arange(60), group), np.cumsum(np.r_[True, got_q[1:] != got_q[:-1]]) - 1
            )
            assert np.array_equal(group_sizes(out.qid).compute(), group)
    with pytest.raises(ValueError, match=r"npartitions must be a positive integer; got npartitions=0"):
        partition_by_query(*[da.from_array(a, chunks=50) for a in (X, y, qid)], npartitions=0)
