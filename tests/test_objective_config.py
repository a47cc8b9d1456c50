"""Configuration of the StochasticRank objectives: labels, replace, SGLB, repr and parameters round trips."""

from __future__ import annotations

import copy
import inspect
import pickle
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import stochrank
from stochrank import SGLB
from stochrank.objectives import LSO, RankingObjective, Smoothing, StochasticRankObjective, _base

SCORES = np.array([0.3, -0.1, 0.2, 0.0, 0.5, -0.4])
GROUP = [3, 3]


# ------------------------------------------------------------------ binary labels
@pytest.mark.parametrize(
    "make",
    [stochrank.auc, lambda: stochrank.map(2), lambda: stochrank.precision(1)],
    ids=["auc", "map", "pre"],
)
@pytest.mark.parametrize("bad", [-1.0, np.nan], ids=["negative", "nan"])
def test_binary_objectives_reject_labels_that_are_not_finite_and_nonnegative(make, bad):
    labels = np.array([1.0, bad, 0.0, 1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"labels"):
        make().gradient(SCORES, labels, GROUP)
    with pytest.raises(ValueError, match=r"labels"):  # LGBMRanker's call: no check before the encoding
        make()(labels, SCORES, None, np.array(GROUP))


def test_binary_objectives_still_take_graded_labels():
    graded = np.array([2.0, 0.0, 1.0, 0.0, 3.0, 0.0])
    assert np.abs(stochrank.auc().gradient(SCORES, graded, GROUP)).max() > 0.0


# ------------------------------------------------------------------ LSO has no relevance shift
def test_lso_takes_no_relevance_shift():
    with pytest.raises(TypeError, match=r"stochrank\.lso\(\) has no parameter.*'mu'"):
        stochrank.lso(k=3).replace(mu=1.0)
    with pytest.raises(ValueError, match=r"stochrank\.lso takes no relevance shift.*mu=1\.0"):
        StochasticRankObjective(LSO(3), Smoothing(mu=1.0))
    with pytest.raises(TypeError, match=r"'hessian'"):
        stochrank.lso(k=3).replace(hessian="unit")


# ------------------------------------------------------------------ replace and with_sglb re-resolve defaults
SGLB_ON = SGLB(learning_rate=0.1)
SAME_AS_CONSTRUCTOR = [
    (lambda: stochrank.ndcg(k=5).replace(hessian="unit"), lambda: stochrank.ndcg(k=5, hessian="unit")),
    (
        lambda: stochrank.ndcg(k=5, hessian="unit").replace(hessian="newton"),
        lambda: stochrank.ndcg(k=5, hessian="newton"),
    ),
    (lambda: stochrank.ndcg(k=5).replace(sglb=SGLB_ON), lambda: stochrank.ndcg(k=5, sglb=SGLB_ON)),
    (lambda: stochrank.ndcg(k=5).with_sglb(SGLB_ON), lambda: stochrank.ndcg(k=5, sglb=SGLB_ON)),
    (lambda: stochrank.ndcg(k=5, sglb=SGLB_ON).with_sglb(None), lambda: stochrank.ndcg(k=5)),
    (lambda: stochrank.auc().with_sglb(SGLB_ON), lambda: stochrank.auc(sglb=SGLB_ON)),
    (
        lambda: stochrank.err(k=3, max_grade=3, sfa=0.5, hessian="unit").replace(k=4),
        lambda: stochrank.err(4, max_grade=3, sfa=0.5, hessian="unit"),
    ),
    (
        lambda: pickle.loads(pickle.dumps(stochrank.mrr(k=3))).with_sglb(SGLB_ON),
        lambda: stochrank.mrr(3, sglb=SGLB_ON),
    ),
    (
        lambda: copy.deepcopy(stochrank.map(3)).replace(hessian="unit"),
        lambda: stochrank.map(3, hessian="unit"),
    ),
    (lambda: stochrank.lso(k=3).with_sglb(SGLB_ON), lambda: stochrank.lso(k=3, sglb=SGLB_ON)),
]


@pytest.mark.parametrize(("changed", "built"), SAME_AS_CONSTRUCTOR)
def test_replace_and_with_sglb_build_what_the_constructor_builds(changed, built):
    a, b = changed(), built()
    assert a == b and hash(a) == hash(b) and repr(a) == repr(b)
    assert a.smoothing == b.smoothing  # the defaults resolved alike
    labels = np.array([2.0, 0.0, 1.0, 1.0, 0.0, 3.0])
    np.testing.assert_array_equal(a.gradient(SCORES, labels, GROUP), b.gradient(SCORES, labels, GROUP))


def test_replaced_leaves_take_their_own_sfa_default():
    assert stochrank.ndcg(k=5).replace(hessian="unit").smoothing.sfa == 1.0
    assert stochrank.ndcg(k=5, hessian="unit").replace(hessian="newton").smoothing.sfa == 0.0
    assert stochrank.ndcg(k=5).with_sglb(SGLB_ON).smoothing.hessian == "unit"
    with pytest.raises(ValueError, match=r"hessian='newton'.*sglb"):  # given explicitly: still refused
        stochrank.ndcg(k=5, hessian="newton").with_sglb(SGLB_ON)


# ------------------------------------------------------------------ SGLB: eq / hash
def test_sglb_stores_checked_floats_so_equal_settings_hash_alike():
    a, b = SGLB(temperature=10000), SGLB(temperature=1e4)
    assert a == b and hash(a) == hash(b) and repr(a) == repr(b)
    assert type(a.temperature) is float
    c = SGLB(temperature=np.float32(8.0), shrink_rate=np.float64(0.5), learning_rate=np.float32(0.25))
    assert all(type(v) is float for v in (c.temperature, c.shrink_rate, c.learning_rate))
    assert "np." not in repr(c) and c.rate == 0.5
    x, y = stochrank.ndcg(k=5, sglb=a), stochrank.ndcg(k=5, sglb=b)
    assert x == y and hash(x) == hash(y)


# ------------------------------------------------------------------ repr and parameters() round trips
CONSTRUCTORS: list[tuple[Callable[..., RankingObjective[Any]], dict[str, Any]]] = [
    (stochrank.ndcg, {"k": 5}),
    (stochrank.ndcg, {"k": 5, "hessian": "unit", "gain": "linear", "mu": 0.5}),
    (stochrank.dcg, {"k": 3, "discount": "position"}),
    (stochrank.err, {"k": 3, "max_grade": 4}),
    (stochrank.pfound, {"decay": 0.5, "n_samples": 2}),
    (stochrank.mrr, {"k": 3, "threshold": 1.0}),
    (stochrank.lso, {"k": 3}),
    (stochrank.lso, {"order": "score", "sfa": 0.5}),
    (stochrank.auc, {}),
    (stochrank.auc, {"threshold": 1.0, "sfa": 0.5, "hessian": "unit"}),
    (stochrank.map, {"k": 5, "seed": 3}),
    (stochrank.precision, {"k": 3}),
    (stochrank.softrank, {"k": 3}),
    (stochrank.softrank, {"k": 3, "variance": 0.25, "train_discount": "linear"}),
]
SGLBS = [None, SGLB(temperature=100, shrink_mode="decreasing", learning_rate=0.1)]


@pytest.mark.parametrize(("ctor", "kwargs"), CONSTRUCTORS, ids=lambda x: getattr(x, "__name__", repr(x)))
@pytest.mark.parametrize("sglb", SGLBS, ids=["plain", "sglb"])
def test_repr_and_parameters_rebuild_an_equal_objective(ctor, kwargs, sglb):
    obj = ctor(**kwargs, sglb=sglb)
    for twin in (eval(repr(obj), {"stochrank": stochrank}), ctor(**obj.parameters())):
        assert type(twin) is type(obj) and twin == obj and hash(twin) == hash(obj) and repr(twin) == repr(obj)
    assert obj.parameters() is not obj.parameters()  # a new dict every time


def test_every_public_constructor_is_covered():
    public = {
        name
        for name in stochrank.objectives.__all__
        if inspect.isfunction(getattr(stochrank.objectives, name))
    }
    assert public == {ctor.__name__ for ctor, _ in CONSTRUCTORS}


def test_pickles_and_copies_keep_the_given_defaults():
    obj = stochrank.ndcg(k=5)
    for twin in (pickle.loads(pickle.dumps(obj)), copy.deepcopy(obj)):
        assert twin == obj and twin.parameters()["hessian"] is None and twin.smoothing.hessian == "newton"


# ------------------------------------------------------------------ docs
def test_hessian_docs_cover_both_leaf_kinds():
    for doc in (_base.__doc__, RankingObjective.__doc__, StochasticRankObjective.__doc__):
        assert doc is not None and "Newton" in doc and "unit" in doc.lower()


@pytest.mark.parametrize("ctor", [stochrank.auc, stochrank.map, stochrank.precision])
def test_binary_docstrings_list_threshold_and_sigma_on_lines_of_their_own(ctor):
    doc = ctor.__doc__
    assert re.search(r"^    threshold : float", doc, re.MULTILINE)
    assert re.search(r"^    sigma : float", doc, re.MULTILINE)
    assert not re.search(r"\S    sigma : ", doc)


def test_replace_keeps_a_subclass():
    """The rankers route SGLB objectives through with_sglb; a subclass must not silently become the base."""

    class Scaled(StochasticRankObjective):
        pass

    base = stochrank.ndcg(k=3, hessian="unit")
    scaled = Scaled(base.target, base.smoothing)
    assert type(scaled.replace(seed=4)) is Scaled
    assert type(scaled.with_sglb(stochrank.SGLB(learning_rate=0.1))) is Scaled
