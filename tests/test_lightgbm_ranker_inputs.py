"""stochrank.lightgbm.LGBMRanker's eval-set arguments under LightGBM 4.7's own rules (compared with
lightgbm.LGBMRanker where it accepts them, refused where it refuses), and lgb.cv with an objective object:
query-wise folds with ``folds=GroupKFold(...)``, pieces of queries and a warning without."""

from __future__ import annotations

import warnings

import lightgbm as lgb
import numpy as np
import pytest
from sklearn.model_selection import GroupKFold

import stochrank
from stochrank.lightgbm import LGBMRanker

from .test_boosters import make_queries

KW = {"n_estimators": 3, "learning_rate": 0.3, "num_leaves": 7, "min_child_samples": 5, "verbose": -1,
      "n_jobs": 1}  # fmt: skip
CUT = "ranked in pieces"  # stochrank's warning about a Dataset subset that cuts its parent's queries
# LightGBM 4.7 deprecates eval_set (stochrank passes eval_X / eval_y on): not what these tests are about.
pytestmark = pytest.mark.filterwarnings("ignore:The argument 'eval_set' is deprecated")


SMALL = {"size": 10, "n_features": 4}  # queries of 5-10 documents, 4 features
TRAIN = make_queries(30, **SMALL)[:3]
VALID = make_queries(12, seed=1, **SMALL)[:3]
OTHER = make_queries(8, seed=2, **SMALL)[:3]


def fit_both(**fit_kwargs):
    """Fit stochrank's ranker and LightGBM's, each with a fresh ndcg(k=3), on TRAIN with ``fit_kwargs``."""
    X, y, sizes = TRAIN
    ours = LGBMRanker(objective=stochrank.ndcg(k=3), **KW).fit(X, y, group=sizes, **fit_kwargs)
    theirs = lgb.LGBMRanker(objective=stochrank.ndcg(k=3), **KW).fit(X, y, group=sizes, **fit_kwargs)
    return ours, theirs


def curves(model):
    return {name: {m: list(v) for m, v in d.items()} for name, d in model.evals_result_.items()}


def test_a_bare_eval_set_tuple_is_one_eval_set_as_in_lightgbm():
    Xv, yv, sv = VALID
    ours, theirs = fit_both(eval_set=(Xv, yv), eval_group=[sv], eval_at=(3,))
    assert list(curves(theirs)) == ["valid_0"]
    assert curves(ours) == curves(theirs)
    listed, _ = fit_both(eval_set=[(Xv, yv)], eval_group=[sv], eval_at=(3,))
    assert curves(listed) == curves(ours)
    np.testing.assert_array_equal(ours.predict(Xv), theirs.predict(Xv))


@pytest.mark.parametrize("eval_at", [3, np.int64(3)])
def test_eval_at_may_be_one_position_as_in_lightgbm(eval_at):
    Xv, yv, sv = VALID
    ours, theirs = fit_both(eval_X=Xv, eval_y=yv, eval_group=[sv], eval_at=eval_at)
    assert ours.eval_at_ == (3,)
    assert list(curves(ours)["valid_0"]) == ["ndcg@3"]
    assert curves(ours) == curves(theirs)


def test_eval_X_and_eval_y_tuples_are_one_eval_set_each_as_in_lightgbm():
    (Xv, yv, sv), (Xo, yo, so) = VALID, OTHER
    ours, theirs = fit_both(eval_X=(Xv, Xo), eval_y=(yv, yo), eval_group=[sv, so], eval_at=(3,))
    assert list(curves(theirs)) == ["valid_0", "valid_1"]
    assert curves(ours) == curves(theirs)
    pairs, _ = fit_both(eval_set=[(Xv, yv), (Xo, yo)], eval_group=[sv, so], eval_at=(3,))
    assert curves(pairs) == curves(ours)


def _refused():
    Xv, yv, sv = VALID
    return {
        "eval_X without eval_y": ({"eval_X": Xv}, "eval_X= is given without eval_y="),
        "eval_y without eval_X": ({"eval_y": yv}, "eval_y= is given without eval_X="),
        "eval_set and eval_X/eval_y": (
            {"eval_set": [(Xv, yv)], "eval_X": Xv[:5], "eval_y": yv[:5]},
            "either eval_set=.* or eval_X= and eval_y=, not both",
        ),
        "eval_set and eval_y": ({"eval_set": [(Xv, yv)], "eval_y": yv}, "not both"),
        "eval_X a tuple, eval_y not": ({"eval_X": (Xv,), "eval_y": yv}, "both tuples of the same length"),
        "tuples of different lengths": (
            {"eval_X": (Xv, Xv), "eval_y": (yv,)},
            "both tuples of the same length",
        ),
    }, [sv]


@pytest.mark.parametrize("case", list(_refused()[0]))
def test_eval_arguments_lightgbm_refuses_are_refused_with_the_arguments_named(case):
    refused, eval_group = _refused()
    kwargs, message = refused[case]
    X, y, sizes = TRAIN
    with pytest.raises(ValueError):  # noqa: PT011  LightGBM's own messages are not ours to pin
        lgb.LGBMRanker(objective=stochrank.ndcg(k=3), **KW).fit(X, y, group=sizes, eval_group=eval_group,
                                                                **kwargs)  # fmt: skip
    ranker = LGBMRanker(objective=stochrank.ndcg(k=3), **KW)
    with pytest.raises(ValueError, match=message):
        ranker.fit(X, y, group=sizes, eval_group=eval_group, **kwargs)
    assert not hasattr(ranker, "booster_")  # refused before training, not after


def test_an_eval_set_entry_that_is_not_a_pair_is_refused_with_its_index():
    X, y, sizes = TRAIN
    Xv, yv, sv = VALID
    with pytest.raises(ValueError, match=r"eval_set\[1\] must be an \(X, y\) pair"):
        LGBMRanker(**KW).fit(X, y, group=sizes, eval_set=[(Xv, yv), (Xv, yv, sv)], eval_group=[sv, sv])


class Spy:
    """An objective that records the training Datasets LightGBM passes, then defers to ndcg(k=3)."""

    def __init__(self):
        self.objective = stochrank.ndcg(k=3)
        self.seen = []

    def __deepcopy__(self, memo):  # lgb.train / lgb.cv deep-copy their params: record in this one
        return self

    def __call__(self, preds, data):
        if not any(d is data for d in self.seen):
            self.seen.append(data)
        return self.objective(preds, data)


def queries_kept(subset, sizes):
    """Return, per query of the full data, how many of its rows the ``lgb.cv`` subset holds."""
    query_of_row = np.repeat(np.arange(sizes.size), sizes)
    return np.bincount(query_of_row[np.asarray(subset.used_indices)], minlength=sizes.size)


PARAMS = {"metric": "ndcg", "eval_at": [3], "num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1,
          "num_threads": 1}  # fmt: skip


def run_cv(objective, **cv_kwargs):
    X, y, sizes = TRAIN
    params = {**PARAMS, "objective": objective}
    return lgb.cv(params, lgb.Dataset(X, y, group=sizes), num_boost_round=2, **cv_kwargs)


def test_lgb_cv_with_group_kfold_keeps_every_query_whole_and_does_not_warn():
    """The README's recipe: each training fold the objective receives holds whole queries, with their sizes,
    and the folds' held-out queries are the data's queries, each once."""
    _, _, sizes = TRAIN
    spy = Spy()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=f".*{CUT}")
        result = run_cv(spy, folds=GroupKFold(n_splits=3))
    assert len(result["valid ndcg@3-mean"]) == 2
    assert len(spy.seen) == 3
    held_out = np.zeros(sizes.size, dtype=int)
    for train in spy.seen:
        kept = queries_kept(train, sizes)
        assert np.all((kept == 0) | (kept == sizes))  # every query whole or absent
        np.testing.assert_array_equal(train.get_group(), sizes[kept > 0])  # what the objective ranks
        held_out += kept == 0
    np.testing.assert_array_equal(held_out, np.ones(sizes.size))


@pytest.mark.filterwarnings("ignore:The least populated class in y")  # StratifiedKFold on graded labels
@pytest.mark.parametrize("cv_kwargs", [{}, {"stratified": False}], ids=["defaults", "unstratified"])
def test_plain_lgb_cv_with_an_objective_object_cuts_queries_and_warns(cv_kwargs):
    _, _, sizes = TRAIN
    spy = Spy()
    with pytest.warns(UserWarning, match=CUT):
        run_cv(spy, nfold=3, **cv_kwargs)
    pieces = [queries_kept(train, sizes) for train in spy.seen]
    assert any(np.any((kept > 0) & (kept < sizes)) for kept in pieces)  # what the warning says


def test_no_cut_warning_for_string_objectives_validation_sets_or_whole_query_subsets():
    X, y, sizes = TRAIN
    Xv, yv, sv = VALID
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=f".*{CUT}")
        # LightGBM's own ranking objective keeps queries whole; the stochrank metric sees its folds
        run_cv("lambdarank", nfold=3, feval=stochrank.metrics.feval("ndcg", k=3))
        train = lgb.Dataset(X, y, group=sizes)
        valid = lgb.Dataset(Xv, yv, group=sv, reference=train)  # a validation set, not a subset
        lgb.train({**PARAMS, "objective": stochrank.ndcg(k=3)}, train, 2, valid_sets=[valid],
                  feval=stochrank.metrics.feval("ndcg", k=3))  # fmt: skip
        whole = lgb.Dataset(X, y, group=sizes, free_raw_data=False).construct()
        first_ten = whole.subset(list(range(int(sizes[:10].sum())))).construct()
        stochrank.ndcg(k=3)(np.zeros(first_ten.num_data()), first_ten)


def test_a_hand_made_subset_that_cuts_a_query_warns():
    X, y, sizes = TRAIN
    whole = lgb.Dataset(X, y, group=sizes, free_raw_data=False).construct()
    part = whole.subset(list(range(int(sizes[0]) + 2))).construct()  # query 0 and two rows of query 1
    np.testing.assert_array_equal(part.get_group(), [sizes[0], 2])
    with pytest.warns(UserWarning, match=CUT):
        stochrank.ndcg(k=3)(np.zeros(part.num_data()), part)
