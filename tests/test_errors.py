"""Bad input gets a clear error naming the argument and the fix — never a silent NaN or a wrong number."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb

import stochrank
from stochrank.protocol import RankingTarget

from .test_boosters import make_queries


@pytest.fixture(scope="module")
def data():
    return make_queries(n_queries=20)


def test_lengths_and_groups(data):
    _, y, sizes, _ = data
    obj = stochrank.ndcg(k=5)
    with pytest.raises(ValueError, match="'scores' has 10 entries but there are"):
        obj.gradient(np.zeros(10), y, sizes)
    with pytest.raises(ValueError, match=r"sums to .* documents but there are .* rows"):
        obj.gradient(np.zeros(y.size), y, sizes[:-1])
    with pytest.raises(
        ValueError, match=rf"positive integer query sizes.*query {sizes.size - 1} has size 0.5"
    ):
        obj.gradient(np.zeros(y.size), y, np.r_[sizes[:-1], 0.5])
    with pytest.raises(ValueError, match=r"query 3 has size 0 .*An empty query has no ranking"):
        obj.gradient(np.zeros(y.size), y, np.r_[sizes[:3], 0, sizes[3:]])
    with pytest.raises(ValueError, match="'group' is required"):
        obj.gradient(np.zeros(y.size), y, None)
    with pytest.raises(ValueError, match=r"query 1 .* not contiguous.*argsort"):
        stochrank.group_sizes([1, 1, 2, 2, 1])
    np.testing.assert_array_equal(stochrank.group_sizes([7, 7, 3, 5, 5, 5]), [2, 1, 3])


def test_nan_and_inf_scores(data):
    X, y, sizes, _ = data
    obj = stochrank.ndcg(k=5)
    bad = np.zeros(y.size)
    bad[3] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinite values .*row 3"):
        obj(bad, lgb.Dataset(X, y, group=sizes).construct())
    bad[3] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        obj.gradient(bad, y, sizes)


def test_labels_outside_the_metric_range(data):
    _, y, sizes, _ = data
    z = np.zeros(y.size)
    with pytest.raises(ValueError, match=r"labels in \[0\.0, 1\.0\].*max_grade"):
        stochrank.err().gradient(z, y, sizes)
    with pytest.raises(ValueError, match="Raise max_grade"):
        stochrank.pfound(max_grade=2).gradient(z, y, sizes)
    with pytest.raises(ValueError, match=r"labels in \[0\.0, 50\.0\].*gain='linear'"):
        stochrank.ndcg().gradient(z, y * 100, sizes)
    with pytest.raises(ValueError, match=r"labels in \[0\.0"):
        stochrank.dcg(gain="linear").gradient(z, -y, sizes)
    with pytest.raises(ValueError, match="NaN or inf"):
        stochrank.ndcg().gradient(z, np.where(y > 3, np.nan, y), sizes)
    with pytest.raises(
        ValueError, match=r"found 1 outside \(e\.g\. -2\.0\)"
    ):  # the value, not np.float64(...)
        stochrank.metrics.ndcg(np.r_[-2.0, y[1:]], z, sizes)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (
            lambda: stochrank.ndcg(k=0),
            "'k' parameter of stochrank.ndcg must be an int in the range \\[1, inf\\)",
        ),
        (lambda: stochrank.mrr(k=2.5), "'k' parameter"),
        (lambda: stochrank.ndcg(sigma=0), "'sigma' parameter .* \\[1e-06, 1000000.0\\]"),
        (lambda: stochrank.ndcg(sigma=float("nan")), "'sigma' parameter"),
        (lambda: stochrank.ndcg(mu=-1), "'mu' parameter"),
        (lambda: stochrank.ndcg(nu=0), "'nu' parameter"),
        (lambda: stochrank.ndcg(sfa=2), "'sfa' parameter .* \\[0.0, 1.0\\]"),
        (lambda: stochrank.ndcg(n_samples=0), "'n_samples' parameter"),
        (lambda: stochrank.ndcg(seed=-1), "'seed' parameter"),
        (lambda: stochrank.ndcg(gain="Exp"), "'gain' parameter .* one of 'exp', 'linear'"),
        (lambda: stochrank.pfound(decay=1.5), "'decay' parameter"),
        (lambda: stochrank.err(max_grade=0), "'max_grade' parameter"),
        (lambda: stochrank.lso(order="rows"), "'order' parameter"),
        (lambda: stochrank.ndcg(sglb={"temperature": 1}), "must be stochrank.SGLB"),
    ],
)
def test_parameter_errors_name_the_parameter(make, match):
    with pytest.raises(ValueError if "SGLB" not in match else TypeError, match=match):
        make()


def test_unknown_parameter_names_are_rejected_with_a_suggestion():
    with pytest.raises(TypeError, match="'num_estimations' \\(use 'n_samples'\\)"):
        stochrank.ndcg(k=5, num_estimations=10)
    with pytest.raises(TypeError, match="'top' \\(use 'k'\\)"):
        stochrank.err(top=5)
    with pytest.raises(TypeError, match="unknown parameter\\(s\\) 'sigmaa'"):
        stochrank.mrr(sigmaa=1.0)
    with pytest.raises(TypeError, match="'mu'"):
        stochrank.lso(mu=1.0)  # LSO has no relevance shift


def test_calls_without_groups_explain_the_fix(data):
    X, y, sizes, _ = data
    obj = stochrank.ndcg(k=5)
    # The LGBMRanker *args trap (LightGBM #7018): a *args wrapper is called without `group`.
    wrapped = lgb.LGBMRanker(
        objective=lambda *args, **kwargs: obj(*args, **kwargs), n_estimators=2, verbose=-1
    )
    with pytest.raises(ValueError, match=r"without query groups.*LGBMRanker"):
        wrapped.fit(X, y, group=sizes)
    with pytest.raises(ValueError, match=r"stochrank\.xgboost\.XGBRanker"):
        xgb.XGBRegressor(objective=obj, n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="has no query groups"):
        obj(np.zeros(y.size), lgb.Dataset(X, y).construct())
    with pytest.raises(ValueError, match="num_class"):
        obj(np.zeros((y.size, 2)), lgb.Dataset(X, y, group=sizes).construct())


@pytest.mark.slow
def test_workqueue_threading_layer_survives_concurrent_fits():
    """Numba's workqueue layer aborts the process on concurrent kernel launches; stochrank serialises them."""
    script = textwrap.dedent(
        """
        import threading, numba, numpy as np, lightgbm as lgb, stochrank
        rng = np.random.default_rng(0)
        sizes = np.full(400, 50); n = int(sizes.sum())
        X = rng.normal(size=(n, 5)); y = rng.integers(0, 3, n).astype(float)
        errors = []
        def fit(seed):
            try:
                lgb.train({"objective": stochrank.ndcg(k=10, seed=seed), "verbose": -1, "num_threads": 1},
                          lgb.Dataset(X, y, group=sizes), 15)
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)
        threads = [threading.Thread(target=fit, args=(s,)) for s in range(4)]
        [t.start() for t in threads]; [t.join() for t in threads]
        assert not errors, errors
        print(numba.threading_layer())
        """
    )
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue", "NUMBA_NUM_THREADS": "2"}
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("workqueue")


@pytest.mark.parametrize("sigma", [1e-300, 1e-40, 1e-7, 1e7, 1e300])
def test_sigma_outside_the_float32_safe_range_is_refused(sigma):
    """sigma=1e-300 raised SystemError inside the kernel; 1e-40 handed LightGBM gradients of 1e39."""
    expected = r"'sigma' parameter of stochrank\.ndcg must be a float in the range \[1e-06"
    with pytest.raises(ValueError, match=expected):
        stochrank.ndcg(k=5, sigma=sigma)
    with pytest.raises(ValueError, match=r"'sigma' parameter of stochrank\.softrank"):
        stochrank.softrank(k=5, sigma=sigma)


def test_gradients_that_would_overflow_float32_raise_instead_of_training_nothing(data):
    _, y, sizes, _ = data
    weight = np.repeat(np.full(sizes.size, 1e40), sizes)  # valid, but 1e40 * gradient is no float32
    obj = stochrank.ndcg(k=5)
    with pytest.raises(ValueError, match="overflows float32"):
        obj(y, np.zeros(y.size), weight, sizes)  # LGBMRanker's call form (LightGBM clips a Dataset's weights)


def test_mrr_objective_and_metric_share_one_label_rule(data):
    """One rule for labels across loaders, metrics and objectives: finite and >= 0. metrics.mrr, every
    other objective and load_svmlight_ranking refuse -1; the mrr objective must too (relevance is
    label > threshold, so -1 would silently count as irrelevant)."""
    X, y, sizes, _ = data
    labels = np.where(np.arange(y.size) == 3, -1.0, y)
    scores = np.zeros(y.size)
    with pytest.raises(ValueError, match=r"stochrank\.metrics\.mrr needs labels in \[0\.0, inf\]"):
        stochrank.metrics.mrr(labels, scores, sizes)
    with pytest.raises(ValueError, match=r"stochrank\.ndcg needs labels in \[0\.0, 50\.0\]"):
        stochrank.ndcg().gradient(scores, labels, sizes)
    with pytest.raises(ValueError, match=r"stochrank\.mrr needs labels in \[0\.0, inf\]"):
        stochrank.mrr().gradient(scores, labels, sizes)
    with pytest.raises(ValueError, match=r"stochrank\.mrr needs labels in \[0\.0, inf\]"):
        stochrank.mrr(k=3)(scores, lgb.Dataset(X, labels, group=sizes).construct())


@pytest.mark.parametrize("objective", [stochrank.ndcg(k=5), "rank:ndcg"], ids=["stochrank", "xgboost"])
def test_xgbranker_checks_queries_and_weights_before_xgboost(data, objective):
    """Unsorted qid, per-row weights and group=qid reached XGBoost's C++ checks (issue 11, item 4)."""
    X, y, sizes, qid = data
    ranker = stochrank.xgboost.XGBRanker(objective=objective, n_estimators=3, max_depth=2, n_jobs=1)
    reference = ranker.fit(X, y, qid=qid).predict(X)
    # Contiguous queries whose ids are not sorted (XGBoost's qid must be) train the same model.
    shuffled_ids = np.random.default_rng(0).permutation(sizes.size)[qid]
    np.testing.assert_array_equal(ranker.fit(X, y, qid=shuffled_ids).predict(X), reference)
    # Weights constant within a query, given per row (the README promises that works) = per query.
    w = np.random.default_rng(1).uniform(0.5, 2.0, sizes.size)
    per_query = ranker.fit(X, y, group=sizes, sample_weight=w).predict(X)
    np.testing.assert_array_equal(
        ranker.fit(X, y, qid=qid, sample_weight=np.repeat(w, sizes)).predict(X), per_query
    )
    assert not np.array_equal(per_query, reference)  # the weights did something
    with pytest.raises(ValueError, match=r"'group' sums to .* not query ids.*stochrank\.group_sizes\(qid\)"):
        ranker.fit(X, y, group=qid + 1)
    with pytest.raises(ValueError, match=r"query 0 in 'qid' are not contiguous.*argsort"):
        ranker.fit(X, y, qid=np.r_[qid[1:], qid[:1]])
    with pytest.raises(ValueError, match=r"'sample_weight' varies within query 0"):
        ranker.fit(X, y, qid=qid, sample_weight=np.arange(y.size, dtype=float))
    with pytest.raises(ValueError, match=r"Got both 'group' and 'qid'"):
        ranker.fit(X, y, group=sizes, qid=qid)
    with pytest.raises(ValueError, match=r"'eval_qid\[0\]' has 5 entries but there are \d+ rows"):
        ranker.fit(X, y, qid=qid, eval_set=[(X, y)], eval_qid=[qid[:5]])


def test_a_constructor_passed_as_the_objective_says_call_it(data):
    """lgb.train({"objective": stochrank.ndcg}) said 'ndcg() takes from 0 to 1 positional arguments'."""
    X, y, sizes, qid = data
    call_it = r"stochrank\.{} is the function that makes an objective.*call it, stochrank\.{}\(k=\.\.\.\)"
    with pytest.raises(TypeError, match=call_it.format("ndcg", "ndcg")):
        lgb.train({"objective": stochrank.ndcg, "verbose": -1}, lgb.Dataset(X, y, group=sizes), 2)
    with pytest.raises(TypeError, match=call_it.format("softrank", "softrank")):
        xgb.train({}, xgb.DMatrix(X, y, group=sizes), 2, obj=stochrank.softrank)
    with pytest.raises(TypeError, match=call_it.format("mrr", "mrr")):
        stochrank.xgboost.XGBRanker(objective=stochrank.mrr, n_estimators=2).fit(X, y, qid=qid)
    with pytest.raises(TypeError, match=call_it.format("err", "err")):
        stochrank.catboost.CatBoostRanker(stochrank.err, iterations=2).fit(X, y, group_id=qid)
    assert stochrank.ndcg(5).k == 5  # k stays positional


def test_every_query_of_one_document_warns(data):
    """LightGBM trained a constant model without a word, CatBoost stopped with 'Too few sampling units'."""
    X, y, sizes, _ = data
    ones = np.ones(y.size, dtype=np.int64)
    nothing = r"Every query of the .* has one document .*nothing to rank.*group_sizes\(qid\)"
    with pytest.warns(UserWarning, match=nothing):
        booster = lgb.train(
            {"objective": stochrank.ndcg(k=5), "verbose": -1}, lgb.Dataset(X, y, group=ones), 3
        )
    assert np.all(booster.predict(X) == 0.0)  # the useless model it warns about
    with pytest.warns(UserWarning, match=nothing):
        lgb.LGBMRanker(objective=stochrank.ndcg(k=5), n_estimators=2, verbose=-1).fit(X, y, group=ones)
    with pytest.warns(UserWarning, match=nothing):
        xgb.train({"base_score": 0.0}, xgb.DMatrix(X, y, group=ones), 2, obj=stochrank.ndcg(k=5))
    for engine in ("native", "stochrank"):
        ranker = stochrank.catboost.CatBoostRanker(
            stochrank.ndcg(k=5, hessian="unit"),
            engine=engine,
            iterations=2,
            bootstrap_type="No",
            thread_count=1,
        )  # CatBoost's native StochasticRank has gradient leaves only
        with pytest.warns(UserWarning, match=nothing):
            ranker.fit(X, y, group=ones)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lgb.train({"objective": stochrank.ndcg(k=5), "verbose": -1}, lgb.Dataset(X, y, group=sizes), 2)
    assert not [w for w in caught if "Every query" in str(w.message)]


def test_a_nan_gradient_reaches_the_float32_guard_instead_of_the_booster():
    """Numba's parallel peaks.max() dropped NaN, so the guard never saw NaN or inf gradients."""
    from stochrank.kernels.stochastic_rank import booster_gradients

    ascent = np.array([0.1, -0.1, np.nan, 0.2])
    grad, hess = np.empty(4), np.empty(4)
    offsets, weights, noise = np.array([0, 2, 4]), np.ones(2), np.zeros(4)
    assert np.isnan(
        booster_gradients(ascent, np.empty(0), 1.0, offsets, weights, noise, 0.0, 1.0, grad, hess)
    )
    ascent[2] = 0.3  # finite again: the peak is the largest |gradient|, or the query weight (1) above it
    assert booster_gradients(ascent, np.empty(0), 1.0, offsets, weights, noise, 0.0, 1.0, grad, hess) == 1.0
    # Scores 53.2 noise scales apart: the mean Newton curvature underflows to a subnormal, its inverse
    # overflows, and the gradients were NaN, handed to LightGBM / XGBoost without a word.
    target, obj = RankingTarget([0.0, 1.0], [2]), stochrank.ndcg()
    obj(np.zeros(2), target)
    with pytest.raises(ValueError, match=r"produced a gradient or Hessian of (nan|inf).*use a larger sigma"):
        obj(np.array([53.2, 0.0]), target)


def test_nu_below_its_floor_is_refused_by_name():
    """nu = 1e-200 squared to 0 in the SFA denominator at equal scores: a SystemError from the kernel."""
    with pytest.raises(
        ValueError, match=r"'nu' parameter of stochrank\.ndcg must be a float in the range \[1e-100"
    ):
        stochrank.ndcg(hessian="unit", nu=1e-200)
    stochrank.ndcg(hessian="unit", nu=1e-100)(np.zeros(3), RankingTarget([0.0, 1.0, 2.0], [3]))


def test_start_warning_names_mu_when_the_relevance_shift_separates_the_grades():
    y, sizes = np.tile([0.0, 1.0, 2.0, 3.0], 2), [4, 4]
    with pytest.warns(stochrank.StartWarning, match=r"mu=10 the noise is also centred .* lower mu"):
        stochrank.ndcg(k=5, mu=10)(np.zeros(8), RankingTarget(y, sizes))


def test_float32_overflow_under_sglb_names_the_temperature():
    y, sizes = np.tile([0.0, 1.0, 2.0, 3.0], 2), [4, 4]
    obj = stochrank.ndcg(k=5, sglb=stochrank.SGLB(temperature=1e-80, learning_rate=0.1))
    with pytest.raises(ValueError, match=r"overflows float32.*SGLB Langevin noise \(a higher temperature\)"):
        obj(np.zeros(8), RankingTarget(y, sizes))


def test_n_samples_beyond_int64_is_refused_by_name():
    """n_samples = 2**63 drew no sample in the kernel: all-zero gradients, without a word."""
    with pytest.raises(
        ValueError, match=r"'n_samples' .* range \[1, 2\*\*62\] \(the kernels count in int64\)"
    ):
        stochrank.ndcg(k=5, n_samples=2**63)
    stochrank.ndcg(k=5, seed=2**63 - 1)  # seeds keep their own, wider range
