"""``stochrank.catboost`` inputs: the forms of ``eval_set``, label-count errors, the ``native_loss`` docs.

Small synthetic data (50 rows, 10 queries), 2-3 CatBoost iterations per fit; runtime a few seconds.
"""

from __future__ import annotations

import doctest
import re

import numpy as np
import pytest

import stochrank

catboost = pytest.importorskip("catboost")

# E402 is wrong for the imports below: they load catboost, so importorskip must run before them.
import stochrank.catboost as sc  # noqa: E402
from stochrank.catboost import CatBoostRanker, _native, native_loss  # noqa: E402
from stochrank.catboost._data import eval_data  # noqa: E402
from stochrank.catboost._native import NoCatBoostEquivalent  # noqa: E402

RNG = np.random.default_rng(0)
QID = np.repeat(np.arange(10), 5)
X = RNG.normal(size=(50, 3))
Y = RNG.integers(0, 3, 50).astype(float)
SIZES = np.full(10, 5)


def ranker(**kwargs) -> CatBoostRanker:
    return CatBoostRanker(stochrank.ndcg(k=3, hessian="unit"), iterations=3, thread_count=1, **kwargs)


# ------------------------------------------------------------------------------------- eval_set forms
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: [(X.tolist(), Y)], id="[(X_list, y)]"),
        pytest.param(lambda: (X.tolist(), Y), id="(X_list, y)"),
        pytest.param(lambda: [(X.tolist(), Y.tolist())], id="[(X_list, y_list)]"),
        pytest.param(lambda: (X.tolist(), Y.tolist()), id="(X_list, y_list)"),
        pytest.param(lambda: [(tuple(map(tuple, X)), Y)], id="[(X_tuple_of_rows, y)]"),
        pytest.param(lambda: [(X, Y)], id="[(X_array, y)]"),
        pytest.param(lambda: (X, Y), id="(X_array, y)"),
        pytest.param(lambda: [(X, Y.reshape(-1, 1))], id="[(X_array, y_column)]"),
        pytest.param(lambda: (X.tolist(), Y.reshape(-1, 1)), id="(X_list, y_column)"),
        pytest.param(lambda: [[X.tolist(), Y]], id="[[X_list, y]]"),
    ],
)
def test_eval_set_pair_forms_are_read_as_one_eval_set(make) -> None:
    """An (X, y) pair is recognised whatever array-like X is (a list of rows as fit's X may be)."""
    data = eval_data(make(), [QID], None)
    assert data is not None
    np.testing.assert_array_equal(data.labels, Y)
    np.testing.assert_array_equal(data.offsets, np.arange(0, 55, 5))
    assert np.shape(data.features) == (50, 3)


def test_eval_set_with_list_rows_trains_and_early_stops_like_arrays() -> None:
    as_array = ranker().fit(X, Y, group_id=QID, eval_set=[(X, Y)], eval_group_id=[QID])
    for eval_set in ([(X.tolist(), Y)], (X.tolist(), Y)):
        as_list = ranker().fit(X, Y, group_id=QID, eval_set=eval_set, eval_group_id=[QID])
        assert as_list.best_iteration_ == as_array.best_iteration_
        np.testing.assert_allclose(as_list.predict(X), as_array.predict(X))
        assert as_list.evals_result_ == as_array.evals_result_


@pytest.mark.parametrize(
    ("make", "match"),
    [
        # Two eval sets (pairs or Pools), given as a list or a tuple: refused as more than one.
        (lambda: [(X, Y), (X, Y)], r"takes one eval set.*got 2 items \(tuple, tuple\)"),
        (lambda: ((X, Y), (X, Y)), r"takes one eval set.*got 2 items \(tuple, tuple\)"),
        (lambda: ((X.tolist(), Y), (X.tolist(), Y)), r"takes one eval set.*got 2 items \(tuple, tuple\)"),
        (lambda: [(X.tolist(), Y), (X.tolist(), Y)], r"takes one eval set.*got 2 items"),
        (lambda: (catboost.Pool(X, Y, group_id=QID),) * 2, r"takes one eval set.*got 2 items \(Pool, Pool\)"),
        # A Pool with labels as well: its own labels are the ones used.
        (lambda: (catboost.Pool(X, Y, group_id=QID), Y), r"is a catboost.Pool.*do not pass y"),
        (lambda: [(catboost.Pool(X, Y, group_id=QID), Y)], r"is a catboost.Pool.*do not pass y"),
        # [X, y] is not a pair (a list holds eval sets): told to wrap it, with X as an array or a list.
        (lambda: [X, Y], r"list of two items that are not \(X, y\) tuples.*eval_set=\[\(X_val, y_val\)\]"),
        (lambda: [X.tolist(), Y], r"list of two items that are not \(X, y\) tuples"),
    ],
    ids=[
        "[pair, pair]",
        "(pair, pair)",
        "(list-pair, list-pair)",
        "[list-pair, list-pair]",
        "(Pool, Pool)",
        "(Pool, y)",
        "[(Pool, y)]",
        "[X, y]",
        "[X_list, y]",
    ],
)
def test_several_eval_sets_or_an_unwrapped_pair_are_refused(make, match) -> None:
    with pytest.raises(ValueError, match=match):
        eval_data(make(), QID, None)


@pytest.mark.parametrize("to_x", [np.asarray, lambda a: a.tolist()], ids=["X_array", "X_list"])
@pytest.mark.parametrize("wrap", [lambda p: p, lambda p: [p]], ids=["(X, y)", "[(X, y)]"])
def test_eval_set_label_count_mismatch_names_the_eval_set(to_x, wrap) -> None:
    """A short eval y is a pair with a length error, not 'two eval sets' or 'pass the labels'."""
    with pytest.raises(ValueError, match=r"y of eval_set has 49 labels but its X has 50 rows"):
        eval_data(wrap((to_x(X), Y[:-1])), [QID], None)


# -------------------------------------------------------------------------------- label-length errors
@pytest.mark.parametrize(
    "query",
    [
        pytest.param({"group_id": QID}, id="group_id"),
        pytest.param({"group": SIZES}, id="group"),
        pytest.param({"group_id": QID[:-1]}, id="group_id-matching-y"),
        pytest.param({"group": np.r_[np.full(9, 5), 4]}, id="group-matching-y"),
    ],
)
@pytest.mark.parametrize("to_x", [np.asarray, lambda a: a.tolist()], ids=["X_array", "X_list"])
def test_fit_y_one_short_is_reported_as_y_versus_rows(query, to_x) -> None:
    """X has 50 rows, y 49 labels: the message says so, whatever the query structure."""
    with pytest.raises(ValueError, match=r"^y has 49 labels but X has 50 rows"):
        ranker().fit(to_x(X), Y[:-1], **query)


def test_fit_y_one_long_is_reported_as_y_versus_rows() -> None:
    with pytest.raises(ValueError, match=r"^y has 50 labels but X has 49 rows"):
        ranker().fit(X[:-1], Y, group_id=QID)


def test_score_y_length_mismatch_is_reported_as_y_versus_rows() -> None:
    fitted = ranker().fit(X, Y, group_id=QID)
    with pytest.raises(ValueError, match=r"^y has 49 labels but X has 50 rows"):
        fitted.score(X, Y[:-1], group_id=QID)


def test_query_structure_length_mismatch_still_blames_it() -> None:
    """With y matching X, a wrong group_id / group is what the message names (against X's rows)."""
    with pytest.raises(ValueError, match=r"group_id has 49 entries but X has 50 rows"):
        ranker().fit(X, Y, group_id=QID[:-1])
    with pytest.raises(ValueError, match=r"'group' sums to 49 documents but there are 50 rows"):
        ranker().fit(X, Y, group=np.r_[np.full(9, 5), 4])


def test_dataframe_qid_column_with_short_y() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(qid=QID)
    with pytest.raises(ValueError, match=r"^y has 49 labels but X has 50 rows"):
        ranker().fit(frame, Y[:-1])


# ------------------------------------------------------------------------------- native_loss examples
NDCG5_UNIT = (
    "StochasticRank:metric=NDCG;top=5;type=Exp;denominator=LogPosition;sigma=1.0;mu=0.0;nu=0.01;"
    "lambda=1.0;num_estimations=1"
)


def test_native_loss_example_output() -> None:
    assert native_loss(stochrank.ndcg(k=5, hessian="unit")) == NDCG5_UNIT


@pytest.mark.parametrize("where", ["package", "native_loss"])
def test_native_loss_docstring_examples_run_as_shown(where: str) -> None:
    """The ``native_loss`` examples are doctests (the project collects none, so they run here)."""
    obj, module = (sc, sc) if where == "package" else (native_loss, _native)
    (test,) = doctest.DocTestFinder(recurse=False).find(obj, where, module=module, globs={})
    assert any("native_loss(" in example.source for example in test.examples)
    result = doctest.DocTestRunner(verbose=False).run(test)
    assert result.failed == 0 and result.attempted >= 2


def test_native_loss_raises_section_names_the_newton_default() -> None:
    """The documented error cases include Newton leaves, the default of ndcg/dcg/err/pfound/mrr."""
    doc = native_loss.__doc__
    raises = doc[doc.index("Raises") : doc.index("Warns")]
    assert "NoCatBoostEquivalent" in raises
    assert re.search(r"hessian\s*=\s*'newton'", raises)
    with pytest.raises(NoCatBoostEquivalent, match="hessian='unit'"):
        native_loss(stochrank.ndcg(k=5))


# ------------------------------------------------------------------------------------- Pool baseline
def test_pool_baseline_is_the_start_of_the_stochrank_engine_as_in_catboost() -> None:
    obj = stochrank.ndcg(k=3)  # Newton leaves: trained by the stochrank engine
    far_apart = 1e3 * Y  # a start ranked by the labels, 1000 noise scales apart: nothing left to move
    pool = catboost.Pool(X, Y, group_id=QID, baseline=far_apart)
    with pytest.warns(stochrank.StartWarning, match="spread far more than sigma"):
        fitted = CatBoostRanker(obj, iterations=3, thread_count=1).fit(pool)
    assert fitted.engine_ == "stochrank"
    # predict on the Pool adds its baseline back (CatBoost's convention), as the native engine's model does
    np.testing.assert_allclose(fitted.predict(pool) - fitted.predict(X), far_apart, atol=1e-3)
    from_zero = CatBoostRanker(obj, iterations=3, thread_count=1).fit(catboost.Pool(X, Y, group_id=QID))
    assert np.ptp(from_zero.predict(X)) > np.ptp(fitted.predict(X))


def test_pool_baseline_with_sglb_on_the_stochrank_engine_is_refused() -> None:
    sglb = stochrank.ndcg(k=3, hessian="unit", sglb=stochrank.SGLB(temperature=1e4, learning_rate=0.03))
    pool = catboost.Pool(X, Y, group_id=QID, baseline=np.zeros(Y.size) + 0.5)
    with pytest.raises(ValueError, match=r"SGLB starts from zero scores.*baseline"):
        CatBoostRanker(sglb, engine="stochrank", iterations=2, thread_count=1).fit(pool)


def test_pool_baseline_with_several_dimensions_is_refused() -> None:
    pool = catboost.Pool(X, Y, group_id=QID, baseline=np.zeros((Y.size, 2)))
    with pytest.raises(ValueError, match=r"baseline of shape \(50, 2\).*one baseline value per row"):
        CatBoostRanker(stochrank.ndcg(k=3), iterations=2, thread_count=1).fit(pool)


# ------------------------------------------------------------------------------- categorical features
def test_native_engine_with_cat_features_on_a_dataframe_trains_as_on_the_equivalent_pool() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "colour": np.array(list("xyz"))[QID % 3]})
    settings = {"engine": "native", "cat_features": [2], "iterations": 3, "thread_count": 1, "random_seed": 0}
    objective = stochrank.ndcg(k=3, hessian="unit")
    from_frame = CatBoostRanker(objective, **settings).fit(
        frame, Y, group_id=QID, eval_set=(frame, Y), eval_group_id=QID
    )
    pool = catboost.Pool(frame, Y, group_id=QID, cat_features=[2])
    from_pool = CatBoostRanker(objective, **settings).fit(pool, eval_set=pool)
    np.testing.assert_array_equal(from_frame.predict(frame), from_pool.predict(pool))


def test_pool_baselines_start_the_eval_scores_the_early_stopping_reads() -> None:
    start, eval_start = 0.3 * Y, 0.2 * Y[::-1]
    train = catboost.Pool(X, Y, group_id=QID, baseline=start)
    valid = catboost.Pool(X, Y, group_id=QID, baseline=eval_start)
    fitted = CatBoostRanker(
        stochrank.ndcg(k=3), iterations=4, thread_count=1, eval_metric="NDCG:top=3;type=Exp"
    ).fit(train, eval_set=valid)
    history = fitted.evals_result_["validation"]["NDCG:top=3;type=Exp"]
    kept = eval_start + fitted.predict(X)  # the kept trees on top of the eval set's own start
    expected = catboost.utils.eval_metric(Y, kept, "NDCG:top=3;type=Exp", group_id=QID)[0]
    assert history[fitted.best_iteration_] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("which", ["train", "eval_set"])
def test_a_baseline_on_only_one_of_train_and_eval_set_is_refused(which) -> None:
    with_start = catboost.Pool(X, Y, group_id=QID, baseline=0.5 * Y)
    without = catboost.Pool(X, Y, group_id=QID)
    train, valid = (with_start, without) if which == "train" else (without, with_start)
    ranker = CatBoostRanker(stochrank.ndcg(k=3), iterations=2, thread_count=1, eval_metric="NDCG:top=3")
    with pytest.raises(ValueError, match="Only one of the training data and the eval_set has a baseline"):
        ranker.fit(train, eval_set=valid)


def test_a_non_finite_pool_baseline_is_refused_by_row() -> None:
    start = np.zeros(Y.size)
    start[7] = np.nan
    with pytest.raises(ValueError, match=r"Pool given as X has NaN or inf \(first at row 7\)"):
        CatBoostRanker(stochrank.ndcg(k=3), iterations=2, thread_count=1).fit(
            catboost.Pool(X, Y, group_id=QID, baseline=start)
        )
