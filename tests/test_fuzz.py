"""Fuzzing harness over the public entry points: metrics, objectives through real ``lgb.train`` /
``xgb.train`` calls, the loaders on generated malformed files, and the GP estimators.

Every generated input either is valid, and the outputs must be finite and equal a slow reference, or has
one thing wrong with it, and the call must raise ``ValueError`` / ``TypeError`` naming that thing (the
contract of :mod:`tests.harness`). The catalogue of bad-input classes (:data:`tests.harness.CASES`, the
table in ``benchmarks/RESULTS.md``) is checked here too.

Budget: the hypothesis profile decides (tests/conftest.py): ``CI=true`` (set by ``.ci/run``) runs a fixed
derandomised search, 150 examples for metrics and loaders, 50 booster trainings, 30 GP fits (about 10 s on
two shared cores, against a two-minute budget); locally 100 / 33 / 20 examples, freshly random. A hang
ends the run with every thread's traceback instead of stalling it (faulthandler).
"""

from __future__ import annotations

import bz2
import faulthandler
import gzip
import math

import lightgbm as lgb
import numpy as np
import pytest
import xgboost as xgb
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import stochrank
from stochrank import metrics as M
from stochrank.datasets import load_svmlight_ranking
from stochrank.gp import GPRanker, SparseGP
from stochrank.protocol import RankingTarget

from .harness import (
    CASES,
    CORRECT,
    Outcome,
    assert_finite_equal,
    assert_gp_matches_reference,
    booster_reference,
    case_id,
    classify,
)
from .test_metrics import naive_metric, queries

HANG_SECONDS = 300  # per test; a generated input must never stall the suite
PROFILE = settings()  # the profile loaded by conftest.py
METRIC_SETTINGS = settings(PROFILE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Booster trainings (3 rounds) cost up to ~0.1 s an example, GP fits ~0.04 s: a third, a fifth of the budget.
BOOSTER_SETTINGS = settings(METRIC_SETTINGS, max_examples=max(4, PROFILE.max_examples // 3))
GP_SETTINGS = settings(METRIC_SETTINGS, max_examples=max(3, PROFILE.max_examples // 5))


@pytest.fixture(autouse=True)
def _no_hang():
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def assert_contract(outcome: Outcome) -> None:
    assert outcome.ok, f"{outcome.kind}: {outcome.detail}"


# ------------------------------------------------------------------------------------- the catalogue
@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_bad_input_class(case, tmp_path):
    """Every class in the table: a clear error naming the argument, or handled correctly."""
    assert_contract(case.outcome(tmp_path))


def test_the_catalogue_covers_sixty_classes():
    assert len(CASES) >= 60
    assert len({(c.entry, c.input_class) for c in CASES}) == len(CASES)
    assert {c.area for c in CASES} == {"metrics", "objectives", "loaders", "adapters", "gp"}


# ------------------------------------------------------------------------------------------- metrics
METRIC_TIES = {
    "ndcg": ["worst", "input", "average", "key_descending"],
    "dcg": ["worst", "input", "average", "key_ascending"],
    "precision": ["worst", "input", "average", "key_descending"],
    "err": ["worst", "input", "key_descending"],
    "pfound": ["worst", "input", "key_ascending"],
    "mrr": ["worst", "input", "key_descending"],
    "map": ["worst", "input", "key_ascending"],
}
# One wrong argument at a time: (argument, what the message must name, how to break the call's kwargs).
CORRUPTIONS = {
    "labels NaN": ("labels", lambda kw, i: kw["labels"].__setitem__(i, np.nan)),
    "labels negative": ("labels", lambda kw, i: kw["labels"].__setitem__(i, -1.0)),
    "scores NaN": ("'scores'", lambda kw, i: kw["scores"].__setitem__(i, np.nan)),
    "scores -inf": ("'scores'", lambda kw, i: kw["scores"].__setitem__(i, -np.inf)),
    "group short": (
        "'group'",
        lambda kw, i: kw.update(group=kw["group"][:-1] if kw["group"].size > 1 else kw["group"] + 1),
    ),
    "group with 0": ("'group'", lambda kw, i: kw.update(group=np.r_[kw["group"], 0])),
    "group fractional": (
        "'group'",
        lambda kw, i: kw.update(group=np.r_[kw["group"][:-1], kw["group"][-1] - 0.5]),
    ),
    "k = 0": ("'k'", lambda kw, i: kw.update(k=0)),
    "k = 2.5": ("'k'", lambda kw, i: kw.update(k=2.5)),
    "ties unknown": ("'ties'", lambda kw, i: kw.update(ties="pessimistic")),
    "weight negative": ("'weight'", lambda kw, i: kw.update(weight=-np.ones(kw["group"].size))),
    "weight NaN": ("'weight'", lambda kw, i: kw.update(weight=np.full(kw["group"].size, np.nan))),
    "weight length": ("'weight'", lambda kw, i: kw.update(weight=np.ones(kw["labels"].size + 1))),
    "tiebreak length": (
        "'tiebreak'",
        lambda kw, i: kw.update(ties="key_ascending", tiebreak=np.arange(kw["labels"].size + 1)),
    ),
}


@st.composite
def metric_calls(draw):
    labels, scores, sizes = draw(queries())
    name = draw(st.sampled_from(sorted(METRIC_TIES)))
    conventions = {"ties": draw(st.sampled_from(METRIC_TIES[name]))}
    if conventions["ties"].startswith("key_"):
        conventions["tiebreak"] = np.array([f"d{i}" for i in draw(st.permutations(range(labels.size)))])
    if name in ("err", "pfound"):
        conventions["max_grade"] = 4
    if name in ("ndcg", "dcg"):
        conventions["gain"] = draw(st.sampled_from(["exp", "linear"]))
        conventions["discount"] = draw(st.sampled_from(["log", "position"]))
    if name in ("mrr", "map", "precision"):
        conventions["threshold"] = draw(st.sampled_from([0.0, 0.5, 2.0]))
    if name == "precision":
        conventions["denominator"] = draw(st.sampled_from(["min", "k"]))
    if name == "map":
        conventions["denominator"] = draw(st.sampled_from(["min", "relevant"]))
    if name != "dcg":
        conventions["empty"] = draw(st.sampled_from(["one", "zero"]))
    k = draw(st.one_of(st.none(), st.integers(1, 12)) if name != "precision" else st.integers(1, 12))
    weight = draw(
        st.one_of(st.none(), st.lists(st.floats(0.1, 3.0), min_size=sizes.size, max_size=sizes.size))
    )
    corruption = draw(st.one_of(st.none(), st.sampled_from(sorted(CORRUPTIONS))))
    row = draw(st.integers(0, labels.size - 1))
    return (
        name,
        {"labels": labels, "scores": scores, "group": sizes, "k": k, "weight": weight, **conventions},
        corruption,
        row,
    )


@METRIC_SETTINGS
@given(metric_calls())
def test_metrics_keep_the_contract(call):
    name, kwargs, corruption, row = call
    kwargs = {
        key: (value.copy() if isinstance(value, np.ndarray) else value) for key, value in kwargs.items()
    }
    if corruption is None:
        labels, scores, group = kwargs.pop("labels"), kwargs.pop("scores"), kwargs.pop("group")
        weight = kwargs.pop("weight")

        def check(values):
            expected = naive_metric(name, labels, scores, group, per_query=True, **kwargs)
            assert_finite_equal(values, expected, what=f"metrics.{name} per query")
            mean = getattr(M, name)(labels, scores, group, weight=weight, **kwargs)
            w = np.ones(group.size) if weight is None else np.asarray(weight)
            assert math.isclose(mean, float(np.dot(w, expected) / w.sum()), rel_tol=1e-12, abs_tol=1e-12)

        outcome = classify(
            lambda: getattr(M, name)(labels, scores, group, per_query=True, weight=weight, **kwargs),
            check=check,
        )
    else:
        argument, corrupt = CORRUPTIONS[corruption]
        corrupt(kwargs, row)
        labels, scores, group = kwargs.pop("labels"), kwargs.pop("scores"), kwargs.pop("group")
        outcome = classify(lambda: getattr(M, name)(labels, scores, group, **kwargs), names=(argument,))
    assert_contract(outcome)


# ----------------------------------------------------------------------------------------- objectives
STOCHASTIC_RANK = {
    "ndcg": lambda k, s, seed: stochrank.ndcg(k=k, sigma=s, seed=seed),
    "dcg": lambda k, s, seed: stochrank.dcg(k=k, sigma=s, seed=seed, gain="linear"),
    "err": lambda k, s, seed: stochrank.err(k=k, sigma=s, seed=seed, max_grade=3),
    "pfound": lambda k, s, seed: stochrank.pfound(k=k, sigma=s, seed=seed, max_grade=3),
    "mrr": lambda k, s, seed: stochrank.mrr(k=k, sigma=s, seed=seed),
    "lso": lambda k, s, seed: stochrank.lso(k=k, sigma=s, seed=seed),
}
OTHERS = {"softrank": lambda k, s, seed: stochrank.softrank(k=k, sigma=s)}


@st.composite
def training_sets(draw):
    sizes = np.array(draw(st.lists(st.integers(1, 8), min_size=1, max_size=5)))
    n = int(sizes.sum())
    assume(n >= 4)  # LightGBM needs rows to bin a feature (it refuses a 1-row set itself)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    labels = rng.integers(0, 4, n).astype(np.float64)
    if draw(st.booleans()):
        labels[rng.random(n) < 0.5] = 0.0
    X = rng.normal(size=(n, 2)).round(1)  # rounded: tied features, hence tied scores
    # float32-exact weights: both boosters store weights as float32
    weights = (
        rng.uniform(0.5, 2.0, sizes.size).astype(np.float32).astype(np.float64)
        if draw(st.booleans())
        else None
    )
    name = draw(st.sampled_from(sorted(STOCHASTIC_RANK) + sorted(OTHERS)))
    k = draw(st.one_of(st.none(), st.integers(1, 6)))
    objective = {**STOCHASTIC_RANK, **OTHERS}[name](
        k, draw(st.sampled_from([0.3, 1.0, 3.0])), draw(st.integers(0, 99))
    )
    # One thing wrong, or nothing: varying weights within a query, a NaN starting score, a negative label.
    corruption = draw(st.sampled_from([None, None, "weight", "init", "label"]))
    return X, labels, sizes, weights, name, objective, corruption


class Recorder:
    """The objective as a plain function that keeps every (preds, grad, hess) the booster exchanged."""

    def __init__(self, objective):
        self.objective, self.calls = objective, []

    def __deepcopy__(self, memo):
        return self  # lgb.train deep-copies its parameters: the record must stay with this object

    def __call__(self, preds, dataset):
        grad, hess = self.objective(preds, dataset)
        self.calls.append((np.array(preds, dtype=np.float64), grad.copy(), hess.copy()))
        return grad, hess


def reference_derivatives(name, objective, labels, sizes, weights, preds, call):
    """(grad, hess) the booster must get: the objective's direct API, or the RankingTarget call."""
    if name in OTHERS:
        return objective(preds, RankingTarget(labels, sizes, weights))
    return booster_reference(objective, preds, labels, sizes, weights, call)


def _train(library, X, labels, sizes, weights, objective, corruption):
    row_weight = None if weights is None else np.repeat(weights, sizes)
    if corruption == "weight":
        row_weight = np.linspace(0.5, 1.5, labels.size)
        if (
            np.maximum.reduceat(row_weight, np.r_[0, np.cumsum(sizes)[:-1]])
            == np.minimum.reduceat(row_weight, np.r_[0, np.cumsum(sizes)[:-1]])
        ).all():
            row_weight = None  # one-document queries only: nothing to vary
    init = np.where(np.arange(labels.size) == 0, np.nan, 0.0) if corruption == "init" else None
    y = np.where(np.arange(labels.size) == 0, -1.0, labels) if corruption == "label" else labels
    recorder = Recorder(objective)
    if library == "lightgbm":
        ds = lgb.Dataset(
            X,
            y,
            group=sizes,
            weight=row_weight,
            init_score=init,
            params={"verbose": -1, "min_data_in_bin": 1},
        )
        params = {
            "objective": recorder,
            "num_leaves": 3,
            "min_data_in_leaf": 1,
            "learning_rate": 0.3,
            "verbose": -1,
            "num_threads": 1,
        }
        booster = lgb.train(params, ds, 3)
        preds = booster.predict(X, raw_score=True)
    else:
        dm = xgb.DMatrix(X, y, group=sizes, base_margin=init)
        if weights is not None or corruption == "weight":
            dm.set_weight(weights if corruption != "weight" else np.linspace(0.5, 1.5, sizes.size))
        booster = xgb.train(
            {"max_depth": 2, "eta": 0.3, "nthread": 1, "base_score": 0.0}, dm, 3, obj=recorder
        )
        preds = booster.predict(xgb.DMatrix(X), output_margin=True)
    return preds, recorder.calls


@BOOSTER_SETTINGS
@given(data=training_sets(), library=st.sampled_from(["lightgbm", "xgboost"]))
def test_objectives_through_real_booster_calls_keep_the_contract(data, library):
    X, labels, sizes, weights, name, objective, corruption = data
    if library == "xgboost" and corruption == "weight":
        corruption = None  # XGBoost ranking weights are per query: they cannot vary within one
    if library == "lightgbm" and corruption == "init":
        corruption = None  # LightGBM stores a NaN init_score (and a NaN label) as 0 before any objective runs
    if corruption == "weight" and sizes.max() == 1:
        corruption = None
    names = {"weight": ("weight",), "init": ("'predictions'",), "label": ("labels",)}.get(corruption, ())
    reference = {**STOCHASTIC_RANK, **OTHERS}[name]

    def check(result):
        preds, calls = result
        assert np.isfinite(preds).all(), "non-finite predictions"
        assert len(calls) == 3
        fresh = reference(objective.k, objective_sigma(objective), getattr(objective, "seed", 0))
        for t, (p, grad, hess) in enumerate(calls):
            assert (hess >= 0).all(), "Hessians must be >= 0 (0 only for queries that cannot change)"
            expected_grad, expected_hess = reference_derivatives(name, fresh, labels, sizes, weights, p, t)
            # The boosters hand float32 scores and take float32 gradients back (XGBoost's weights too).
            rtol = 1e-6 if library == "xgboost" else 1e-12
            assert_finite_equal(grad, expected_grad, rtol=rtol, what=f"call {t} gradient")
            assert_finite_equal(hess, expected_hess, rtol=rtol, what=f"call {t} Hessian")

    outcome = classify(
        lambda: _train(library, X, labels, sizes, weights, objective, corruption),
        names,
        None if corruption else check,
    )
    assert_contract(outcome)


def objective_sigma(objective):
    return objective.parameters().get("sigma", 1.0) if hasattr(objective, "parameters") else objective.sigma


# -------------------------------------------------------------------------------------------- loaders
@st.composite
def letor_files(draw):
    n_queries = draw(st.integers(1, 3))
    lines = []
    for q in range(n_queries):
        for _ in range(draw(st.integers(1, 4))):
            label = draw(st.sampled_from(["0", "1", "2", "3"]))
            indices = sorted(draw(st.sets(st.integers(1, 5), max_size=4)))
            values = [draw(st.sampled_from(["0.5", "-1.25", "3", "0", "10.125"])) for _ in indices]
            lines.append(
                " ".join(
                    [label, f"qid:{100 + q}", *(f"{i}:{v}" for i, v in zip(indices, values, strict=True))]
                )
            )
    mutation = draw(
        st.sampled_from(
            ["none", "crlf", "tabs and comments", "gzip", "bzip2", "truncate", "truncate gzip", "bom",
             "nan label", "negative label", "no qid", "index 0", "garbage token", "unsorted indices"]
        )
    )  # fmt: skip
    return lines, mutation, draw(st.floats(0.05, 0.95)), draw(st.integers(0, 1000))


def strict_parse(text: str):
    """The format as stochrank reads it, strictly: labels finite >= 0, qid on every row, indices >= 1 and
    increasing; raises ValueError otherwise. Returns (X, y, qid, group) like the loader."""
    rows, labels, qids = [], [], []
    for line in text.splitlines():
        tokens = line.split("#", 1)[0].split()
        if not tokens:
            continue
        label = float(tokens[0])
        if not (math.isfinite(label) and label >= 0):
            raise ValueError("label")
        if len(tokens) < 2 or not tokens[1].startswith("qid:"):
            raise ValueError("qid")
        qids.append(int(tokens[1][4:]))
        row, last = {}, 0
        for token in tokens[2:]:
            index, sep, value = token.partition(":")
            if not sep or int(index) <= last:
                raise ValueError("feature")
            last = int(index)
            row[last] = float(value)
        labels.append(label)
        rows.append(row)
    if not rows:
        raise ValueError("empty")
    width = max((max(r) for r in rows if r), default=0)
    X = np.zeros((len(rows), width))
    for i, row in enumerate(rows):
        for index, value in row.items():
            X[i, index - 1] = value
    change = [0] + [i for i in range(1, len(qids)) if qids[i] != qids[i - 1]] + [len(qids)]
    return X, np.array(labels), np.array(qids), np.diff(change)


@METRIC_SETTINGS
@given(letor_files())
def test_loader_on_generated_malformed_files_keeps_the_contract(tmp_path_factory, generated):
    lines, mutation, where, row = generated
    tmp = tmp_path_factory.mktemp("fuzz")
    row %= len(lines)
    edit = {
        "nan label": lambda t: t.replace(t.split()[0], "nan", 1),
        "negative label": lambda t: "-1" + t[t.index(" ") :],
        "no qid": lambda t: " ".join(x for x in t.split() if not x.startswith("qid:")),
        "index 0": lambda t: (
            t + " 0:1" if len(t.split()) == 2 else t.replace(" ", " 0:1 ", 2).replace(" 0:1 ", " ", 1)
        ),
        "garbage token": lambda t: t + " relevant",
        "unsorted indices": lambda t: t + " 9:1 7:1",
    }
    if mutation in edit:
        lines = [*lines[:row], edit[mutation](lines[row]), *lines[row + 1 :]]
    text = "\n".join(lines) + "\n"
    if mutation == "crlf":
        text = text.replace("\n", "\r\n")
    if mutation == "tabs and comments":
        text = "# generated\n\n" + text.replace(" ", "\t", 1).replace("\n", "  # doc\n", 1)
    data = text.encode()
    if mutation == "bom":
        data = b"\xef\xbb\xbf" + data
    if mutation == "truncate":
        data = data[: max(1, int(where * len(data)))]
    name = "data.txt" + {"gzip": ".gz", "truncate gzip": ".gz", "bzip2": ".bz2"}.get(mutation, "")
    path = tmp / name
    compressed = (
        gzip.compress(data) if name.endswith(".gz") else bz2.compress(data) if name.endswith(".bz2") else data
    )
    if mutation == "truncate gzip":
        compressed = compressed[: int(where * (len(compressed) - 1))]
    path.write_bytes(compressed)

    try:
        expected = None if mutation in ("bom", "truncate gzip") else strict_parse(data.decode())
    except ValueError:
        expected = None
    if expected is None:
        names = ("BOM",) if mutation == "bom" else ("zero_based",) if mutation == "index 0" else (str(path),)
        outcome = classify(lambda: load_svmlight_ranking(path), names)
    else:

        def check(split):
            X, y, qid, group = expected
            width = max(X.shape[1], split.X.shape[1])
            assert_finite_equal(np.pad(X, ((0, 0), (0, width - X.shape[1]))), split.X, rtol=0, what="X")
            for field, value in (("y", y), ("qid", qid), ("group", group)):
                assert np.array_equal(getattr(split, field), value), f"{field} differs from the strict reader"

        outcome = classify(lambda: load_svmlight_ranking(path), check=check)
    assert_contract(outcome)


# ------------------------------------------------------------------------------------- GP estimators
@st.composite
def gp_problems(draw):
    sizes = np.array(draw(st.lists(st.integers(1, 6), min_size=2, max_size=3)))
    n, d = int(sizes.sum()), draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n, d))
    if draw(st.booleans()):
        X[:, 0] = 1.5  # a constant column
    labels = rng.integers(0, 3, n).astype(np.float64)
    corruption = draw(st.sampled_from([None, None, None, "nan X", "negative label", "all labels equal"]))
    estimator = draw(
        st.sampled_from(["GPRanker fitc", "GPRanker prototype", "SparseGP fitc", "SparseGP prototype"])
    )
    return X, labels, sizes, corruption, estimator, draw(st.integers(0, 99))


@GP_SETTINGS
@given(gp_problems())
def test_gp_estimators_keep_the_contract(problem):
    X, labels, sizes, corruption, estimator, seed = problem
    kind, form = estimator.split()
    if corruption == "nan X":
        X[0, 0] = np.nan
    if corruption == "negative label":
        labels[0] = -1.0
    if corruption == "all labels equal":
        labels[:] = 1.0
    informative = any(np.unique(part).size > 1 for part in np.split(labels, np.cumsum(sizes)[:-1]))
    if kind == "SparseGP" and corruption != "nan X":
        corruption = None  # a regressor takes any real targets
    elif corruption is None:
        assume(informative)
    n_prototypes = min(3, labels.size)
    if kind == "GPRanker":
        model = GPRanker(form=form, n_prototypes=n_prototypes, max_iter=3, random_state=seed, alpha=0.5)
        fit = lambda: model.fit(X, labels, group=sizes)  # noqa: E731
    else:
        model = SparseGP(form=form, n_prototypes=n_prototypes, max_iter=3, random_state=seed)
        fit = lambda: model.fit(X, labels)  # noqa: E731
    names = {"nan X": ("X",), "negative label": ("labels",), "all labels equal": ("labels",)}.get(
        corruption, ()
    )

    def check(fitted):
        assert_gp_matches_reference(fitted, X, 0.5 if kind == "GPRanker" else None)

    outcome = classify(fit, names, None if corruption else check)
    assert outcome.kind == CORRECT if corruption is None else outcome.ok, f"{outcome.kind}: {outcome.detail}"
