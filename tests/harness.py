"""The contract every public entry point keeps on bad input, the catalogue of bad-input classes, and the
slow references the outputs are held to.

Contract: a call either raises ``ValueError`` / ``TypeError`` (``FileNotFoundError`` for a missing file)
whose message names the argument at fault (or the file), or returns finite outputs equal to a slow,
independent reference. Anything else is a defect: an error that does not say what is wrong ("unclear
error"), another exception or a crash ("crash"), or a result that differs from the reference ("silent
wrong result").

:data:`CASES` is the catalogue of bad-input classes, one representative input each; ``tests/test_fuzz.py``
asserts every case's outcome and explores the same entry points with generated inputs (hypothesis), and
``benchmarks/bad_inputs.py`` writes the table of outcomes into ``benchmarks/RESULTS.md`` from this list.
"""

from __future__ import annotations

import bz2
import gzip
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import stochrank
from stochrank import metrics as M

from .test_datasets import naive_parse
from .test_metrics import naive_metric

CLEAR_ERROR, CORRECT = "clear error", "correct handling"
UNCLEAR_ERROR, CRASH, SILENT_WRONG = "unclear error", "crash", "silent wrong result"
GOOD_OUTCOMES = (CLEAR_ERROR, CORRECT)
# Errors a caller can act on; FileNotFoundError only for paths.
CLEAR_TYPES = (ValueError, TypeError, FileNotFoundError)


@dataclass(frozen=True)
class Outcome:
    """What one call did: one of the five kinds, and the message or the reason."""

    kind: str
    detail: str

    @property
    def ok(self) -> bool:
        return self.kind in GOOD_OUTCOMES


def classify(
    call: Callable[[], Any], names: Sequence[str] = (), check: Callable[[Any], None] | None = None
) -> Outcome:
    """Run ``call`` and say how it kept the contract.

    ``names``: an error must mention one of them (the argument, or the file). ``check``: a returned result
    must pass it (raise AssertionError otherwise); ``check=None`` means an error was due, so a return is a
    silent wrong result.
    """
    try:
        result = call()
    except CLEAR_TYPES as exc:
        message = str(exc)
        if names and any(name in message for name in names):
            return Outcome(CLEAR_ERROR, f"{type(exc).__name__}: {message}")
        return Outcome(UNCLEAR_ERROR, f"{type(exc).__name__} not naming {list(names)}: {message}")
    except Exception as exc:  # everything else breaks the contract
        return Outcome(CRASH, f"{type(exc).__name__}: {exc}")
    if check is None:
        return Outcome(
            SILENT_WRONG, f"returned {summary(result)} where an error naming {list(names)} was due"
        )
    try:
        check(result)
    except AssertionError as exc:
        return Outcome(SILENT_WRONG, f"returned {summary(result)}: {exc}")
    return Outcome(CORRECT, f"{summary(result)}, equal to the reference")


def summary(result: Any) -> str:
    if isinstance(result, float):
        return f"{result:.6g}"
    if isinstance(result, np.ndarray):
        return f"array of shape {result.shape}"
    if isinstance(result, tuple):
        return "(" + ", ".join(summary(r) for r in result) + ")"
    return f"a fitted {type(result).__name__}" if hasattr(result, "fit") else type(result).__name__


# ----------------------------------------------------------------------------------- slow references
def assert_finite_equal(actual: Any, expected: Any, *, rtol: float = 1e-12, what: str = "") -> None:
    a, e = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, f"{what} shape {a.shape} != reference {e.shape}"
    assert np.isfinite(a).all(), f"{what} has non-finite values"
    assert np.allclose(a, e, rtol=rtol, atol=rtol), (
        f"{what} differs from the reference by {np.max(np.abs(a - e)):.3g}"
    )


def metric_reference(
    name: str, labels: Any, scores: Any, group: Any, **conventions: Any
) -> Callable[[Any], None]:
    """Check against the plain-Python twin of ``stochrank.metrics.<name>`` (tests/test_metrics.py)."""

    def check(result: Any) -> None:
        expected = naive_metric(
            name,
            np.asarray(labels, float),
            np.asarray(scores, float).reshape(-1),
            np.asarray(group),
            **conventions,
        )
        assert_finite_equal(result, expected, what=f"metrics.{name}")

    return check


def parse_reference(path: Path, n_features: int | None = None) -> Callable[[Any], None]:
    """Check a loaded RankingSplit against the plain-Python LETOR reader (tests/test_datasets.py)."""

    def check(split: Any) -> None:
        X, y, qid, group = naive_parse(path, n_features or split.X.shape[1])
        for field, expected in (("X", X), ("y", y), ("qid", qid), ("group", group)):
            actual = getattr(split, field)
            assert actual.shape == expected.shape, f"{field} shape {actual.shape} != {expected.shape}"
            assert np.array_equal(actual, expected, equal_nan=True), f"{field} differs from the plain reader"

    return check


def booster_reference(
    objective: Any, preds: Any, labels: Any, sizes: Any, weights: Any = None, call: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(grad, hess) a booster must receive, from the objective's direct API and the documented hand-off.

    ``derivatives`` gives the ascent g and, with Newton leaves, the curvature h of the ``call``-th booster
    call. Unit Hessians: grad = -w_q g, hess = w_q. Newton leaves: grad = -w_q kappa g, hess = w_q kappa h,
    kappa = 1 / (mean of the positive curvatures), 1 if there are none (the Hessian has mean 1 where it is
    not 0, and is 0 for documents of constant queries).
    """
    ascent = objective.derivatives(preds, labels, sizes, call=call)
    sizes = np.asarray(sizes)
    w = np.repeat(np.ones(sizes.size) if weights is None else np.asarray(weights, float), sizes)
    if ascent.curvature.size == 0:
        return -w * ascent.gradient, w
    positive = ascent.curvature[ascent.curvature > 0]
    kappa = 1.0 / float(np.mean(positive)) if positive.size else 1.0
    return -w * kappa * ascent.gradient, w * kappa * ascent.curvature


def open_bytes(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


def assert_gp_matches_reference(model: Any, X: Any, alpha: float | None = None) -> None:
    """A fitted GP's predictions against :func:`gp_reference`.

    The variance is a difference of two terms of the size of the prior variance K(x, x) (the posterior
    can be far smaller), so it is compared to within 1e-9 of K(x, x): the rounding of the larger terms.
    """
    mean, std = gp_reference(model, X)
    got_mean, got_std = model.predict(X, return_std=True)
    Z = (np.asarray(X, dtype=np.float64) - model.feature_mean_) / model.feature_scale_
    prior = float(np.max(model.amplitude_ + (Z**2) @ model.linear_weights_))
    scale = max(1.0, float(np.max(np.abs(mean))))
    assert np.isfinite(got_mean).all() and np.isfinite(got_std).all(), "non-finite predictions"
    gap_mean, gap_var = np.max(np.abs(got_mean - mean)), np.max(np.abs(got_std**2 - std**2))
    assert np.allclose(got_mean, mean, rtol=1e-8, atol=1e-9 * scale), f"mean off by {gap_mean:.3g}"
    assert np.allclose(got_std**2, std**2, rtol=1e-8, atol=1e-9 * prior), f"variance off by {gap_var:.3g}"
    if alpha is not None:
        score = got_mean + alpha * got_std
        assert np.allclose(model.predict(X), score, rtol=1e-12, atol=1e-12), "score != mean + alpha std"


def gp_reference(model: Any, X: Any) -> tuple[np.ndarray, np.ndarray]:
    """Predictive (mean, std) of a fitted GPRanker / SparseGP from its documented formulas, in plain loops.

    k_u(x) = c exp(-1/2 sum_d (x_d - u_d)^2 / lambda_d^2) + sum_d eta_d x_d u_d on z-scored features,
    mean = k^T w, var = sigma^2 + K(x, x) - k^T P k (P the fitted variance matrix); the prototype form's w and
    P are recomputed from the prototypes and virtual outputs: w = (K_uu + sigma^2 I)^-1 y_u, P = (K_uu +
    sigma^2 I)^-1. SparseGP maps back to the target units (y_mean_, y_scale_).
    """
    Z = (np.asarray(X, dtype=np.float64) - model.feature_mean_) / model.feature_scale_
    U, c, lam, eta, s2 = (
        model.inducing_points_, model.amplitude_, model.lengthscale_, model.linear_weights_, model.noise_,
    )  # fmt: skip

    def kernel(a: np.ndarray, b: np.ndarray) -> float:
        return c * math.exp(-0.5 * float(np.sum((a - b) ** 2 / lam**2))) + float(np.sum(eta * a * b))

    if model.form == "prototype":
        Kuu = np.array([[kernel(u, v) for v in U] for u in U])
        P = np.linalg.inv(Kuu + s2 * np.eye(len(U)))
        w = P @ model.outputs_
    else:
        P, w = model.variance_matrix_, model.weights_
    mean, var = np.empty(len(Z)), np.empty(len(Z))
    for i, z in enumerate(Z):
        k = np.array([kernel(z, u) for u in U])
        mean[i] = k @ w
        var[i] = s2 + kernel(z, z) - k @ P @ k
    # SparseGP's fitted state is already in target units; only the target mean is added back.
    return mean + getattr(model, "y_mean_", 0.0), np.sqrt(var)


# ---------------------------------------------------------------------------------------- the cases
@dataclass(frozen=True)
class Case:
    """One class of bad input: its entry point, a representative call and the outcome it must have.

    ``run(tmp)`` returns the zero-argument call (``tmp`` a private directory for files) and either the
    names an error must mention or the check a result must pass (:func:`classify`).
    """

    area: str
    entry: str
    input_class: str
    run: Callable[[Path], tuple[Callable[[], Any], Sequence[str], Callable[[Any], None] | None]]

    def outcome(self, tmp: Path) -> Outcome:
        call, names, check = self.run(tmp)
        return classify(call, names, check)


CASES: list[Case] = []


def case(area: str, entry: str, input_class: str):
    def register(run):
        CASES.append(Case(area, entry, input_class, run))
        return run

    return register


def error(call: Callable[[], Any], *names: str):
    return call, names, None


def correct(call: Callable[[], Any], check: Callable[[Any], None]):
    return call, (), check


# Small fixed data: two queries with ties and an all-zero query.
LABELS = np.array([2.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 2.0])
SCORES = np.array([0.5, 0.5, 0.1, 0.3, 0.3, 0.2, 0.9, 0.9, 0.0])
GROUP = np.array([3, 2, 4])


def _with(index: int, value: float, base: np.ndarray) -> np.ndarray:
    out = base.copy()
    out[index] = value
    return out


# ---- metrics: data
@case("metrics", "metrics.ndcg", "labels and scores of different lengths")
def _(tmp):
    return error(lambda: M.ndcg(LABELS[:-1], SCORES, GROUP), "'labels'")


@case("metrics", "metrics.ndcg", "group summing to fewer rows than the scores")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, SCORES, GROUP[:-1]), "'group'")


@case("metrics", "metrics.ndcg", "group missing (None)")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, SCORES, None), "'group'")


@case("metrics", "metrics.map", "a zero-size query in group")
def _(tmp):
    return error(lambda: M.map(LABELS, SCORES, [3, 0, 2, 4]), "'group'", "query 1")


@case("metrics", "metrics.ndcg", "fractional or negative query sizes")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, SCORES, [3.5, 1.5, 4]), "'group'")


@case("metrics", "metrics.ndcg", "per-row query ids passed as group")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, SCORES, np.repeat([0, 1, 2], GROUP)), "'group'")


@case("metrics", "metrics.err", "no documents at all")
def _(tmp):
    return error(lambda: M.err([], [], []), "'group'")


@case("metrics", "metrics.ndcg", "NaN score")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, _with(4, np.nan, SCORES), GROUP), "'scores'")


@case("metrics", "metrics.mrr", "infinite score")
def _(tmp):
    return error(lambda: M.mrr(LABELS, _with(0, np.inf, SCORES), GROUP), "'scores'")


@case("metrics", "metrics.precision", "non-numeric scores")
def _(tmp):
    return error(lambda: M.precision(LABELS, ["high"] * 9, GROUP, k=2), "'scores'")


@case("metrics", "metrics.ndcg", "scores of shape (n, 2)")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, np.c_[SCORES, SCORES], GROUP), "'scores'")


@case("metrics", "metrics.ndcg", "scores of shape (n, 1) (a column)")
def _(tmp):
    return correct(
        lambda: M.ndcg(LABELS, SCORES[:, None], GROUP), metric_reference("ndcg", LABELS, SCORES, GROUP)
    )


@case("metrics", "metrics.dcg", "NaN label")
def _(tmp):
    return error(lambda: M.dcg(_with(2, np.nan, LABELS), SCORES, GROUP), "'labels'")


@case("metrics", "metrics.mrr", "negative label")
def _(tmp):
    return error(lambda: M.mrr(_with(2, -1.0, LABELS), SCORES, GROUP), "labels")


@case("metrics", "metrics.ndcg", "label too large for the exponential gain (2^60)")
def _(tmp):
    return error(lambda: M.ndcg(_with(0, 60.0, LABELS), SCORES, GROUP), "labels", "gain='linear'")


@case("metrics", "metrics.err", "grades passed as ERR probabilities (labels > 1)")
def _(tmp):
    return error(lambda: M.err(LABELS, SCORES, GROUP), "max_grade")


# ---- metrics: parameters
@case("metrics", "metrics.ndcg", "k = 0")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, SCORES, GROUP, k=0), "'k'")


@case("metrics", "metrics.map", "k not an integer (2.5, True)")
def _(tmp):
    return error(lambda: (M.map(LABELS, SCORES, GROUP, k=2.5), M.map(LABELS, SCORES, GROUP, k=True)), "'k'")


@case("metrics", "metrics.precision", "precision without a cut-off (k=None)")
def _(tmp):
    return error(lambda: M.precision(LABELS, SCORES, GROUP, k=None), "'k'")


@case("metrics", "metrics.ndcg", "k longer than every query")
def _(tmp):
    return correct(
        lambda: M.ndcg(LABELS, SCORES, GROUP, k=50), metric_reference("ndcg", LABELS, SCORES, GROUP, k=50)
    )


@case("metrics", "metrics.ndcg", "unknown tie rule")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, SCORES, GROUP, ties="random"), "'ties'")


@case("metrics", "metrics.err", "ties='average' for a non-linear metric")
def _(tmp):
    return error(lambda: M.err(LABELS / 2, SCORES, GROUP, ties="average"), "ties='average'")


@case("metrics", "metrics.ndcg", "unknown gain, discount or empty rule")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, SCORES, GROUP, empty="drop"), "'empty'")


@case("metrics", "metrics.precision", "unknown denominator")
def _(tmp):
    return error(lambda: M.precision(LABELS, SCORES, GROUP, k=3, denominator="R"), "'denominator'")


@case("metrics", "metrics.err", "max_grade <= 0")
def _(tmp):
    return error(lambda: M.err(LABELS, SCORES, GROUP, max_grade=0), "'max_grade'")


@case("metrics", "metrics.pfound", "decay outside [0, 1]")
def _(tmp):
    return error(lambda: M.pfound(LABELS / 2, SCORES, GROUP, decay=1.5), "'decay'")


@case("metrics", "metrics.mrr", "NaN threshold")
def _(tmp):
    return error(lambda: M.mrr(LABELS, SCORES, GROUP, threshold=np.nan), "'threshold'")


@case("metrics", "metrics.ndcg", "negative or NaN query weight")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, SCORES, GROUP, weight=[1.0, np.nan, 1.0]), "'weight'")


@case("metrics", "metrics.ndcg", "row weights varying within a query")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, SCORES, GROUP, weight=np.arange(9.0)), "'weight'")


@case("metrics", "metrics.map", "weights neither per row nor per query")
def _(tmp):
    return error(lambda: M.map(LABELS, SCORES, GROUP, weight=[1.0, 2.0]), "'weight'")


@case("metrics", "metrics.ndcg", "tiebreak key without a key tie rule")
def _(tmp):
    return error(lambda: M.ndcg(LABELS, SCORES, GROUP, tiebreak=np.arange(9)), "'tiebreak'")


@case("metrics", "metrics.map", "key tie rule without a tiebreak key, or one of the wrong length")
def _(tmp):
    return error(lambda: M.map(LABELS, SCORES, GROUP, ties="key_descending", tiebreak=[1, 2]), "'tiebreak'")


@case("metrics", "metrics.mrr", "tiebreak keys mixing strings and numbers")
def _(tmp):
    keys = np.array(["a", 1, 2.0, "b", "c", "d", "e", "f", "g"], dtype=object)
    return error(lambda: M.mrr(LABELS, SCORES, GROUP, ties="key_ascending", tiebreak=keys), "'tiebreak'")


@case("metrics", "metrics.ndcg", "every score tied")
def _(tmp):
    zeros = np.zeros(9)
    return correct(
        lambda: M.ndcg(LABELS, zeros, GROUP, per_query=True),
        metric_reference("ndcg", LABELS, zeros, GROUP, per_query=True),
    )


@case("metrics", "metrics.err", "one-document queries")
def _(tmp):
    labels = LABELS / 2
    return correct(
        lambda: M.err(labels, SCORES, np.ones(9, int)),
        metric_reference("err", labels, SCORES, np.ones(9, int)),
    )


@case("metrics", "metrics.ndcg", "a query with nothing to find (all labels 0)")
def _(tmp):
    return correct(
        lambda: M.ndcg(LABELS, SCORES, GROUP, empty="zero", per_query=True),
        metric_reference("ndcg", LABELS, SCORES, GROUP, empty="zero", per_query=True),
    )


@case("metrics", "metrics.ndcg", "every query skipped (empty='skip' and all labels 0)")
def _(tmp):
    def check(value):
        assert math.isnan(value), "the mean over no queries must be NaN (documented), not a number"

    return correct(lambda: M.ndcg(np.zeros(9), SCORES, GROUP, empty="skip"), check)


@case("metrics", "metrics.feval", "unknown metric name or convention")
def _(tmp):
    return error(lambda: M.feval("ndcg", gains="exp"), "'gains'")


@case("metrics", "metrics.feval", "a per-row tie rule for a booster metric")
def _(tmp):
    return error(lambda: M.feval("ndcg", ties="key_descending"), "ties=")


# ---- objectives
def _lgb_data(labels: np.ndarray | None = None, **dataset_kwargs: Any):
    import lightgbm as lgb

    rng = np.random.default_rng(0)
    sizes = np.array([6, 5, 7, 4])
    n = int(sizes.sum())
    y = rng.integers(0, 3, n).astype(np.float64) if labels is None else labels
    X = rng.normal(size=(n, 3))
    return lgb.Dataset(X, y, group=sizes, **dataset_kwargs).construct(), X, y, sizes


@case("objectives", "stochrank.ndcg", "cut-off k = 0")
def _(tmp):
    return error(lambda: stochrank.ndcg(k=0), "'k'")


@case("objectives", "stochrank.ndcg", "sigma = 0 or NaN")
def _(tmp):
    return error(lambda: stochrank.ndcg(sigma=float("nan")), "'sigma'")


@case("objectives", "stochrank.err", "CatBoost's parameter names (top=, num_estimations=)")
def _(tmp):
    return error(lambda: stochrank.err(top=5), "'top'")


@case("objectives", "stochrank.ndcg", "sglb given as a dict")
def _(tmp):
    return error(lambda: stochrank.ndcg(sglb={"temperature": 1.0}), "SGLB")


@case("objectives", "stochrank.pfound", "n_samples = 0, seed < 0")
def _(tmp):
    return error(lambda: stochrank.pfound(n_samples=0), "'n_samples'")


@case("objectives", "stochrank.ndcg(...).gradient", "NaN label")
def _(tmp):
    labels = _with(3, np.nan, np.ones(22))
    return error(lambda: stochrank.ndcg(k=3).gradient(np.zeros(22), labels, [6, 5, 7, 4]), "labels")


@case("objectives", "lgb.train(stochrank.err)", "graded labels for ERR without max_grade")
def _(tmp):
    ds, *_ = _lgb_data()
    return error(lambda: stochrank.err(k=3)(np.zeros(22), ds), "max_grade")


@case("objectives", "lgb.train(stochrank.ndcg)", "row weights varying within a query")
def _(tmp):
    ds, *_ = _lgb_data(weight=np.linspace(0.5, 2.0, 22))
    return error(lambda: stochrank.ndcg(k=3)(np.zeros(22), ds), "weight' varies")


@case("objectives", "lgb.train(stochrank.ndcg)", "Dataset without query groups")
def _(tmp):
    import lightgbm as lgb

    ds = lgb.Dataset(np.zeros((4, 1)), np.ones(4)).construct()
    return error(lambda: stochrank.ndcg(k=3)(np.zeros(4), ds), "query groups")


@case("objectives", "lgb.train(stochrank.ndcg)", "NaN init_score / predictions")
def _(tmp):
    ds, *_ = _lgb_data()
    return error(lambda: stochrank.ndcg(k=3)(_with(0, np.nan, np.zeros(22)), ds), "'predictions'")


@case("objectives", "lgb.train(stochrank.ndcg)", "multi-class predictions (num_class=2)")
def _(tmp):
    ds, *_ = _lgb_data()
    return error(lambda: stochrank.ndcg(k=3)(np.zeros((22, 2)), ds), "num_class")


@case("objectives", "xgboost.XGBRegressor(objective=stochrank.ndcg)", "a ranking objective in a regressor")
def _(tmp):
    import xgboost as xgb

    _, X, y, _ = _lgb_data()
    return error(
        lambda: xgb.XGBRegressor(objective=stochrank.ndcg(k=3), n_estimators=1).fit(X, y), "XGBRanker"
    )


@case("objectives", "stochrank.ndcg", "sigma outside the float32-safe range (1e-300, 1e-40, 1e7)")
def _(tmp):
    return error(lambda: [stochrank.ndcg(k=5, sigma=s) for s in (1e-300, 1e-40, 1e7)], "'sigma'", "[1e-06")


@case("objectives", "stochrank.softrank", "sigma too small for float32 gradients (1e-40)")
def _(tmp):
    return error(lambda: stochrank.softrank(k=5, sigma=1e-40), "'sigma'")


@case(
    "objectives", "LGBMRanker call form (stochrank.ndcg)", "query weights of 1e40: gradients overflow float32"
)
def _(tmp):
    _, _, y, sizes = _lgb_data()
    weight = np.full(y.size, 1e40)
    return error(lambda: stochrank.ndcg(k=3)(y, np.zeros(y.size), weight, sizes), "overflows float32")


@case("objectives", "lgb.train(stochrank.mrr)", "negative label (-1 for unjudged)")
def _(tmp):
    ds, *_ = _lgb_data(_with(4, -1.0, np.r_[np.ones(11), np.zeros(11)]))
    return error(lambda: stochrank.mrr(k=3)(np.zeros(22), ds), "stochrank.mrr needs labels")


@case("objectives", "xgb.train(stochrank.ndcg)", "NaN base_margin")
def _(tmp):
    import xgboost as xgb

    _, X, y, sizes = _lgb_data()
    dm = xgb.DMatrix(X, y, group=sizes, base_margin=_with(0, np.nan, np.zeros(22)))
    train = lambda: xgb.train({"nthread": 1}, dm, 2, obj=stochrank.ndcg(k=3))  # noqa: E731
    return error(train, "'predictions'")


@case("objectives", "xgb.train(stochrank.ndcg)", "one objective and one DMatrix shared by two threads")
def _(tmp):
    import threading

    import xgboost as xgb

    _, X, y, sizes = _lgb_data()
    dm, obj, rounds = xgb.DMatrix(X, y, group=sizes), stochrank.ndcg(k=3, seed=2), 6
    params = {"nthread": 1, "max_depth": 2, "base_score": 0.0}
    barrier = threading.Barrier(2, timeout=60)

    class LockStep(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            barrier.wait()  # the two runs' objective calls interleave on every round
            return False

    def fit(callbacks=()):
        return xgb.train(params, dm, rounds, obj=obj, callbacks=list(callbacks)).predict(
            dm, output_margin=True
        )

    alone = fit()

    def both():
        results = [None, None]

        def worker(i):
            results[i] = fit([LockStep()])

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return np.array(results, dtype=float)

    def check(results):
        for row in results:
            assert_finite_equal(row, alone, rtol=0, what="a threaded run's predictions")

    return correct(both, check)


@case("objectives", "lgb.train(stochrank.ndcg)", "every label 0 (nothing to learn)")
def _(tmp):
    ds, *_ = _lgb_data(np.zeros(22))

    def check(grad_hess):
        grad, hess = grad_hess
        assert_finite_equal(grad, np.zeros(22), what="gradient of queries that cannot change")
        assert_finite_equal(hess, np.zeros(22), what="Newton Hessian of queries that cannot change")

    return correct(lambda: stochrank.ndcg(k=3)(np.zeros(22), ds), check)


@case("objectives", "lgb.train(stochrank.mrr)", "one-document queries mixed with longer ones")
def _(tmp):
    import lightgbm as lgb

    sizes = np.array([1, 4, 1, 3])
    y = np.array([1.0, 0, 1, 0, 2, 1, 0, 1, 0])
    ds = lgb.Dataset(np.zeros((9, 1)), y, group=sizes).construct()
    obj = stochrank.mrr(k=3)

    def check(grad_hess):
        grad, hess = grad_hess
        expected_grad, expected_hess = booster_reference(obj, np.zeros(9), y, sizes)
        assert_finite_equal(grad, expected_grad, what="booster gradient")
        assert_finite_equal(hess, expected_hess, what="booster Hessian")
        assert grad[0] == 0.0 and grad[5] == 0.0, "a one-document query has nothing to rank"

    return correct(lambda: stochrank.mrr(k=3)(np.zeros(9), ds), check)


# ---- loaders
ROWS = "2 qid:10 1:0.5 3:1.25\n0 qid:10 2:-1 3:0.5\n1 qid:11 1:1 2:2\n0 qid:11 3:3\n"


def _file(tmp: Path, text: str | bytes, name: str = "f.txt") -> Path:
    path = tmp / name
    data = text.encode() if isinstance(text, str) else text
    if name.endswith(".gz"):
        data = gzip.compress(data)
    elif name.endswith(".bz2"):
        data = bz2.compress(data)
    path.write_bytes(data)
    return path


def _load(path: Path, **kwargs: Any):
    from stochrank.datasets import load_svmlight_ranking

    return lambda: load_svmlight_ranking(path, **kwargs)


@case("loaders", "load_svmlight_ranking", "missing file")
def _(tmp):
    return error(_load(tmp / "absent.txt"), str(tmp / "absent.txt"))


@case("loaders", "load_svmlight_ranking", "empty or comment-only file")
def _(tmp):
    path = _file(tmp, "# nothing here\n\n")
    return error(_load(path), str(path))


@case("loaders", "load_svmlight_ranking", "a row without qid")
def _(tmp):
    path = _file(tmp, ROWS + "1 1:0.5\n")
    return error(_load(path), "qid", str(path))


@case("loaders", "load_svmlight_ranking", "feature index 0 in a one-based file")
def _(tmp):
    path = _file(tmp, "1 qid:1 0:0.5 1:1\n")
    return error(_load(path), "zero_based")


@case("loaders", "load_svmlight_ranking", "feature index beyond n_features")
def _(tmp):
    path = _file(tmp, ROWS)
    return error(_load(path, n_features=2), str(path))


@case("loaders", "load_svmlight_ranking", "a non-numeric label or value")
def _(tmp):
    path = _file(tmp, ROWS + "relevant qid:12 1:1\n")
    return error(_load(path), str(path))


@case("loaders", "load_svmlight_ranking", "NaN or infinite label")
def _(tmp):
    path = _file(tmp, ROWS + "nan qid:12 1:1\n")
    return error(_load(path), str(path))


@case("loaders", "load_svmlight_ranking", "negative label (-1 for unjudged)")
def _(tmp):
    path = _file(tmp, ROWS + "-1 qid:12 1:1\n")
    return error(_load(path), str(path))


@case("loaders", "load_svmlight_ranking", "UTF-8 byte-order mark")
def _(tmp):
    path = _file(tmp, b"\xef\xbb\xbf" + ROWS.encode())
    return error(_load(path), "BOM")


@case("loaders", "load_svmlight_ranking", "UTF-16 text")
def _(tmp):
    path = _file(tmp, ROWS.encode("utf-16"))
    return error(_load(path), "BOM")


@case("loaders", "load_svmlight_ranking", "truncated .gz")
def _(tmp):
    path = tmp / "f.txt.gz"
    path.write_bytes(gzip.compress(ROWS.encode() * 50)[:-20])
    return error(_load(path), str(path))


@case("loaders", "load_svmlight_ranking", ".gz with a bad CRC")
def _(tmp):
    blob = bytearray(gzip.compress(ROWS.encode()))
    blob[-6] ^= 0xFF
    path = _file(tmp, bytes(blob), "f.txt")
    path = path.rename(tmp / "g.txt.gz")
    return error(_load(path), str(path))


@case("loaders", "load_svmlight_ranking", "truncated .bz2")
def _(tmp):
    path = tmp / "f.txt.bz2"
    path.write_bytes(bz2.compress(ROWS.encode() * 50)[:-20])
    return error(_load(path), str(path))


@case("loaders", "load_svmlight_ranking", "Windows line endings (CRLF)")
def _(tmp):
    path = _file(tmp, ROWS.replace("\n", "\r\n"))
    return correct(_load(path), parse_reference(path))


@case("loaders", "load_svmlight_ranking", "tabs, trailing spaces, blank lines and comments")
def _(tmp):
    text = "# header\n\n" + ROWS.replace(" ", "\t", 2).replace("\n", "   # docid\n", 1) + "\n\n"
    path = _file(tmp, text)
    return correct(_load(path), parse_reference(path))


@case("loaders", "load_svmlight_ranking", "gzip-compressed file")
def _(tmp):
    path = _file(tmp, ROWS, "f.txt.gz")
    return correct(_load(path), parse_reference(path))


@case("loaders", "load_svmlight_ranking", "a qid that reappears after another query")
def _(tmp):
    path = _file(tmp, ROWS + "1 qid:10 1:7\n")
    return correct(_load(path), parse_reference(path))


@case("loaders", "load_svmlight_ranking", "a reappearing qid with repeated_qid='error'")
def _(tmp):
    path = _file(tmp, ROWS + "1 qid:10 1:7\n")
    return error(_load(path, repeated_qid="error"), "repeated_qid")


@case("loaders", "load_svmlight_ranking", "NaN feature value (allow_nan=False)")
def _(tmp):
    path = _file(tmp, ROWS + "1 qid:12 1:nan\n")
    return error(_load(path, allow_nan=False), str(path))


@case("loaders", "load_svmlight_ranking", "NaN feature value (default: missing)")
def _(tmp):
    path = _file(tmp, ROWS + "1 qid:12 1:nan\n")
    return correct(_load(path), parse_reference(path))


@case("loaders", "load_svmlight_ranking", "query file with a zero-size group")
def _(tmp):
    path = _file(tmp, "1 1:1\n0 1:2\n1 1:3\n")
    query = _file(tmp, "1\n0\n2\n", "f.query")
    return error(_load(path, query_file=query), "query 1")


@case("loaders", "load_svmlight_ranking", "query file not adding up to the rows")
def _(tmp):
    path = _file(tmp, "1 1:1\n0 1:2\n1 1:3\n")
    query = _file(tmp, "2\n2\n", "f.query")
    return error(_load(path, query_file=query), str(query))


@case("loaders", "load_svmlight_ranking", "invalid dtype / repeated_qid option")
def _(tmp):
    path = _file(tmp, ROWS)
    return error(_load(path, dtype=np.int32), "'dtype'")


@case("loaders", "load_svmlight_ranking(cache=...)", "truncated cache entry")
def _(tmp):
    path = _file(tmp, ROWS)
    _load(path, cache=tmp / "cache")()
    (entry,) = (tmp / "cache").glob("*.npz")
    entry.write_bytes(entry.read_bytes()[:100])
    return correct(_load(path, cache=tmp / "cache"), parse_reference(path))


@case("loaders", "load_svmlight_ranking(cache=...)", "cache entry with flipped bytes")
def _(tmp):
    path = _file(tmp, ROWS)
    _load(path, cache=tmp / "cache")()
    (entry,) = (tmp / "cache").glob("*.npz")
    blob = bytearray(entry.read_bytes())
    for i in range(40, len(blob) - 40, 97):
        blob[i] ^= 0x5A
    entry.write_bytes(bytes(blob))
    return correct(_load(path, cache=tmp / "cache"), parse_reference(path))


@case("loaders", "load_svmlight_ranking(cache=...)", "file edited keeping its size and mtime")
def _(tmp):
    path = _file(tmp, ROWS)
    _load(path, cache=tmp / "cache")()
    stat = path.stat()
    path.write_text(ROWS.replace("2 qid:10", "1 qid:10"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return correct(_load(path, cache=tmp / "cache"), parse_reference(path))


@case("loaders", "datasets.load", "labels outside the dataset's grades")
def _(tmp):
    from stochrank.datasets import load

    (tmp / "MQ2007" / "Fold1").mkdir(parents=True)
    _file(tmp / "MQ2007" / "Fold1", "3 qid:1 1:0.5\n0 qid:1 1:0.1\n", "train.txt")
    return error(lambda: load("mq2007", 1, "train", root=tmp), "grades")


@case("loaders", "datasets.load", "unknown name, fold or split")
def _(tmp):
    from stochrank.datasets import load

    return error(lambda: load("istella", 1, "vali"), "'split'")


@case("loaders", "datasets.load", "dataset not under the data root")
def _(tmp):
    from stochrank.datasets import load

    return error(lambda: load("mslr-web10k", 1, "train", root=tmp), str(tmp))


# ---- booster adapters
@case("adapters", "catboost.CatBoostRanker", "a feval metric as the objective")
def _(tmp):
    from stochrank.catboost import CatBoostRanker

    _, X, y, sizes = _lgb_data()
    return error(lambda: CatBoostRanker(M.feval("ndcg"), iterations=1).fit(X, y, group=sizes), "objective")


@case("adapters", "catboost.CatBoostRanker", "a CatBoost loss name as the objective")
def _(tmp):
    from stochrank.catboost import CatBoostRanker

    _, X, y, sizes = _lgb_data()
    return error(lambda: CatBoostRanker("YetiRank", iterations=1).fit(X, y, group=sizes), "objective")


@case("adapters", "xgboost.XGBRanker", "string query ids")
def _(tmp):
    from stochrank.xgboost import XGBRanker

    _, X, y, sizes = _lgb_data()
    qid = np.repeat([3, 1, 4, 2], sizes)
    make = lambda: XGBRanker(objective=stochrank.ndcg(k=3), n_estimators=2, n_jobs=1)  # noqa: E731
    expected = make().fit(X, y, group=sizes).predict(X)

    def check(model):
        assert_finite_equal(model.predict(X), expected, rtol=0, what="predictions with string qid")

    return correct(lambda: make().fit(X, y, qid=np.array([f"q{q}" for q in qid])), check)


@case("adapters", "xgboost.XGBRanker", "query ids whose rows are not contiguous")
def _(tmp):
    from stochrank.xgboost import XGBRanker

    _, X, y, _ = _lgb_data()
    qid = np.array([f"q{q}" for q in np.arange(22) % 4])
    return error(lambda: XGBRanker(objective=stochrank.ndcg(k=3), n_estimators=2).fit(X, y, qid=qid), "'qid'")


@case("adapters", "xgboost.XGBRanker", "no query structure (neither group nor qid)")
def _(tmp):
    from stochrank.xgboost import XGBRanker

    _, X, y, _ = _lgb_data()
    return error(lambda: XGBRanker(objective=stochrank.ndcg(k=3)).fit(X, y), "group=")


@case("adapters", "xgboost.XGBRanker", "whole-list objective with queries longer than 32 (default metric)")
def _(tmp):
    from stochrank.xgboost import XGBRanker

    rng = np.random.default_rng(1)
    sizes = np.array([40, 50])
    X, y = rng.normal(size=(90, 3)), rng.integers(0, 3, 90).astype(float)

    def check(model):
        logged = model.evals_result_["validation_0"]["sr-ndcg"][-1]
        whole = M.ndcg(y, model.predict(X), sizes, ties="input")
        assert abs(logged - whole) <= 1e-6, f"logged {logged} is not the whole-list NDCG {whole}"

    fit = lambda: XGBRanker(objective=stochrank.ndcg(), n_estimators=2, n_jobs=1).fit(  # noqa: E731
        X, y, group=sizes, eval_set=[(X, y)], eval_group=[sizes]
    )
    return correct(fit, check)


# ---- Gaussian processes
def _gp_data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((12, 3)), np.array([0, 1, 2, 0, 1, 0, 0, 2, 1, 0, 0, 1.0]), np.array([5, 7])


@case("gp", "gp.GPRanker", "NaN feature")
def _(tmp):
    from stochrank.gp import GPRanker

    X, y, group = _gp_data()
    return error(
        lambda: GPRanker(max_iter=2).fit(_with(0, np.nan, X.ravel()).reshape(X.shape), y, group=group), "X"
    )


@case("gp", "gp.GPRanker", "negative labels")
def _(tmp):
    from stochrank.gp import GPRanker

    X, y, group = _gp_data()
    return error(lambda: GPRanker(max_iter=2).fit(X, -y, group=group), "labels")


@case("gp", "gp.GPRanker", "no query with two different labels")
def _(tmp):
    from stochrank.gp import GPRanker

    X, _, group = _gp_data()
    return error(lambda: GPRanker(max_iter=2).fit(X, np.ones(12), group=group), "labels")


@case("gp", "gp.GPRanker", "more prototypes than training rows")
def _(tmp):
    from stochrank.gp import GPRanker

    X, y, group = _gp_data()
    return error(lambda: GPRanker(n_prototypes=13, max_iter=2).fit(X, y, group=group), "'n_prototypes'")


@case("gp", "gp.GPRanker", "predict with another number of features")
def _(tmp):
    from stochrank.gp import GPRanker

    X, y, group = _gp_data()
    model = GPRanker(max_iter=2, random_state=0).fit(X, y, group=group)
    return error(lambda: model.predict(np.zeros((2, 4))), "X has 4 features")


@case("gp", "gp.GPRanker", "a constant feature column and a one-document query")
def _(tmp):
    from stochrank.gp import GPRanker

    X, y, _ = _gp_data()
    X[:, 1] = 3.0
    group = np.array([1, 4, 7])
    model = GPRanker(form="prototype", max_iter=3, random_state=0, alpha=0.5)

    return correct(
        lambda: model.fit(X, y, group=group), lambda fitted: assert_gp_matches_reference(fitted, X, 0.5)
    )


@case("gp", "gp.SparseGP", "targets far from unit scale (1e6)")
def _(tmp):
    from stochrank.gp import SparseGP

    X, y, _ = _gp_data()

    fit = lambda: SparseGP(form="fitc", n_prototypes=4, max_iter=3, random_state=0).fit(X, 1e6 * y)  # noqa: E731
    return correct(fit, lambda fitted: assert_gp_matches_reference(fitted, X))


def case_id(c: Case) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", f"{c.entry} {c.input_class}").strip("-")[:90]
