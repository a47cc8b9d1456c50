"""The bundled small sets with rotated query folds and the generated nonlinear synthetic set (issue 9)."""

from __future__ import annotations

import doctest
import gzip
import hashlib

import numpy as np
import pytest

from stochrank.data import CATBOOST_QUERYWISE_DIR, LIGHTGBM_EXAMPLE_DIR
from stochrank.datasets import DATASETS, load
from stochrank.datasets._pooled import catboost_querywise, lightgbm_example, query_parts, rotate
from stochrank.datasets.synthetic import (
    _topic_free_relevance,
    nonlinear_mslr,
    nonlinear_mslr_cuts,
    nonlinear_mslr_expected_gain,
)
from stochrank.metrics import ndcg

SPLITS = ("train", "vali", "test")


def _rows(path, n):  # naive reader of a gzip text file: the first n lines, split on whitespace
    with gzip.open(path, "rt") as handle:
        return [line.split() for line, _ in zip(handle, range(n), strict=False)]


@pytest.mark.parametrize(("name", "n_queries", "n_rows"), [("catboost-querywise", 117, 2000),
                                                          ("lightgbm-example", 251, 3773)])  # fmt: skip
def test_rotated_folds_test_every_query_once_and_never_mix_splits(
    name: str, n_queries: int, n_rows: int
) -> None:
    tested = []
    for fold in DATASETS[name].folds:
        parts = {s: load(name, fold, s) for s in SPLITS}
        qids = {s: set(p.qid.tolist()) for s, p in parts.items()}
        assert len(qids["train"] | qids["vali"] | qids["test"]) == n_queries  # disjoint and complete
        assert sum(p.n_queries for p in parts.values()) == n_queries
        assert sum(int(p.group.sum()) == p.X.shape[0] for p in parts.values()) == 3
        assert sum(p.X.shape[0] for p in parts.values()) == n_rows
        nxt = load(name, fold % 5 + 1, "test")  # vali of fold f is the test part of fold f + 1
        np.testing.assert_array_equal(parts["vali"].qid, nxt.qid)
        np.testing.assert_array_equal(parts["vali"].X, nxt.X)
        tested += sorted(qids["test"])
    assert len(tested) == n_queries and len(set(tested)) == n_queries


def test_query_parts_are_balanced_and_seeded() -> None:
    part = query_parts(117)
    assert np.bincount(part).tolist() == [24, 24, 23, 23, 23]
    np.testing.assert_array_equal(part, np.random.default_rng(0).permutation(np.arange(117) % 5))


def test_rotate_refuses_bad_arguments() -> None:
    pool = load("catboost-querywise", 1, "test")
    with pytest.raises(ValueError, match=r"'fold' parameter of rotate must be in 1\.\.5"):
        rotate(pool, 6, "test")
    with pytest.raises(ValueError, match="'split' parameter of rotate"):
        rotate(pool, 1, "valid")


def test_catboost_querywise_pool_is_the_tsv_files_with_grades_round_10r() -> None:
    """Naive reread of the TSV files (GroupId column 1, target column 2, features from column 5)."""
    rows = _rows(CATBOOST_QUERYWISE_DIR / "train.gz", 10**6) + _rows(
        CATBOOST_QUERYWISE_DIR / "test.gz", 10**6
    )
    pool = catboost_querywise()
    np.testing.assert_array_equal(pool.qid, [int(row[1]) for row in rows])
    np.testing.assert_array_equal(pool.y, np.rint(10 * np.array([float(row[2]) for row in rows])))
    np.testing.assert_array_equal(pool.X, [[float(v) for v in row[5:]] for row in rows])
    assert pool.n_queries == 117 and set(np.unique(pool.y)) <= set(range(7))
    assert DATASETS["catboost-querywise"].gain == "linear"


def test_lightgbm_example_pool_is_the_libsvm_files_with_query_files() -> None:
    rows, sizes = [], []
    for name in ("train", "test"):
        rows += _rows(LIGHTGBM_EXAMPLE_DIR / f"rank.{name}.gz", 10**6)
        sizes += [int(line[0]) for line in _rows(LIGHTGBM_EXAMPLE_DIR / f"rank.{name}.query.gz", 10**6)]
    X = np.zeros((len(rows), 300))
    for i, row in enumerate(rows):
        for item in row[1:]:
            j, v = item.split(":")
            X[i, int(j) - 1] = float(v)
    pool = lightgbm_example()
    np.testing.assert_array_equal(pool.group, sizes)
    np.testing.assert_array_equal(pool.y, [float(row[0]) for row in rows])
    np.testing.assert_array_equal(pool.X, X)
    np.testing.assert_array_equal(pool.qid, np.repeat(np.arange(251), sizes))


def test_nonlinear_synthetic_is_seeded_skewed_and_labelled_synthetic() -> None:
    a, b, c = nonlinear_mslr(300, seed=3), nonlinear_mslr(300, seed=3), nonlinear_mslr(300, seed=4)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert not np.array_equal(a.y, c.y)
    assert a.n_queries == 300 and a.group.sum() == a.X.shape[0] and a.X.dtype == np.float32
    assert np.all(np.diff(nonlinear_mslr_cuts()) > 0)
    big = nonlinear_mslr(2000, seed=1)
    share = np.bincount(big.y.astype(int), minlength=5) / big.y.size
    np.testing.assert_allclose(share, [0.52, 0.32, 0.13, 0.02, 0.01], atol=0.02)
    spec = DATASETS["synthetic-nonlinear"]
    assert spec.title.startswith("synthetic") and spec.notes.startswith("SYNTHETIC")
    with pytest.raises(ValueError, match="'n_features' parameter of nonlinear_mslr"):
        nonlinear_mslr(10, n_features=5)


@pytest.mark.slow
def test_nonlinear_synthetic_benchmark_splits_are_large_and_distinct() -> None:
    sizes = {s: load("synthetic-nonlinear", 1, s).n_queries for s in SPLITS}
    assert sizes == {"train": 10_000, "vali": 2_000, "test": 9_000}
    assert not np.array_equal(
        load("synthetic-nonlinear", 1, "vali").y[:100], load("synthetic-nonlinear", 1, "test").y[:100]
    )


def _calibration_gaps(expected: np.ndarray, gain: np.ndarray, bins: int = 10) -> np.ndarray:
    """Per quantile bin of ``expected``: |mean expected - mean gain| in standard errors of the gain's mean."""
    edges = np.quantile(expected, np.linspace(0, 1, bins + 1))
    which = np.clip(np.searchsorted(edges, expected, side="right") - 1, 0, bins - 1)
    gaps = []
    for b in range(bins):
        inside = which == b
        se = max(gain[inside].std(ddof=1) / np.sqrt(inside.sum()), 1e-4)
        gaps.append(abs(expected[inside].mean() - gain[inside].mean()) / se)
    return np.array(gaps)


@pytest.mark.parametrize("pooled", [False, True])
@pytest.mark.parametrize("gain", ["exp", "linear"])
def test_expected_gain_is_calibrated_against_the_generator(pooled: bool, gain: str) -> None:
    # The closed form's E[gain | features] must match the gain the generator actually draws, bin by bin
    # of the prediction (700,000 documents: a wrong own-view posterior or variance shows up as many
    # standard errors; pooled over ~35 views the posterior is too narrow for this to see its errors, which
    # the importance-sampling test below checks).
    data = nonlinear_mslr(20_000, seed=11)
    expected = nonlinear_mslr_expected_gain(data.X, data.group if pooled else None, gain=gain)
    drawn = np.exp2(data.y) - 1 if gain == "exp" else data.y
    assert np.all(_calibration_gaps(expected, drawn) < 4.5)


def _importance_sampled_gain(x: np.ndarray, n_draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """E[2**grade - 1 | one query's features] and its standard error, from the generator's own law.

    The topic is drawn around the views' mean (sd 1 / sqrt(m), about twice the posterior's) and weighted by
    prior x likelihood / proposal; the score adds the generator's N(0, 0.5^2) noise. No closed form is used.
    """
    rng = np.random.default_rng(seed)
    views, m = x[:, 8:11], x.shape[0]
    centre, spread = views.mean(axis=0), 1.0 / np.sqrt(m)
    topic = centre + spread * rng.standard_normal((n_draws, 3))
    log_w = (
        -0.5 * np.sum(topic**2, axis=1)
        - np.sum((views[None] - topic[:, None]) ** 2, axis=(1, 2)) / (2 * 0.25)
        + 0.5 * np.sum((topic - centre) ** 2, axis=1) / spread**2
    )
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    s = _topic_free_relevance(x)[None] + 0.8 * np.sum(x[None, :, 5:8] * topic[:, None], axis=2)
    s += 0.5 * rng.standard_normal(s.shape)
    gain = np.exp2(np.searchsorted(nonlinear_mslr_cuts(), s)) - 1
    mean = w @ gain
    return mean, np.sqrt(w**2 @ (gain - mean) ** 2)


@pytest.mark.parametrize("pooled", [False, True])
def test_expected_gain_matches_importance_sampling_on_fixed_queries(pooled: bool) -> None:
    # Pooled mode too, which calibration over many documents cannot check finely: with ~35 views the
    # topic's posterior is narrow. Strong topic loadings (x_5..7 doubled) make its variance count.
    data = nonlinear_mslr(3, seed=21)
    for q in range(3):
        x = data.X[data.qid == q].astype(np.float64)
        x[:, 5:8] *= 2.0
        x = x[:6] if pooled else x[:1]  # one document alone: its own view is the whole query
        closed = nonlinear_mslr_expected_gain(x, [len(x)] if pooled else None)
        sampled, se = _importance_sampled_gain(x, 400_000, seed=q)
        assert np.all(np.abs(closed - sampled) < 4 * se + 1e-3), (q, closed, sampled, se)


def test_expected_gain_ranks_near_the_top_and_pooling_the_topic_helps() -> None:
    data = nonlinear_mslr(3000, seed=12)
    own = ndcg(data.y, nonlinear_mslr_expected_gain(data.X), data.group, k=5, empty="skip")
    pooled = ndcg(data.y, nonlinear_mslr_expected_gain(data.X, data.group), data.group, k=5, empty="skip")
    topic_free = ndcg(data.y, _topic_free_relevance(data.X.astype(np.float64)), data.group, k=5, empty="skip")
    assert topic_free + 0.05 < own < pooled - 0.03


def test_nonlinear_synthetic_draws_are_pinned() -> None:
    # The benchmark caches key fits on the generator's arguments, so its draws must never change.
    data = nonlinear_mslr(300, seed=5)
    digest = hashlib.sha256(data.X.tobytes() + data.y.tobytes()).hexdigest()
    assert digest == "52ff16a03148e6e449c9deb066779058152628e9a9dcdaef7ee2c4bf81c01b21"
    np.testing.assert_allclose(
        nonlinear_mslr_cuts(), [0.74209806, 2.56639055, 4.5421994, 5.74951228], rtol=1e-7
    )


def test_expected_gain_names_non_numeric_features() -> None:
    with pytest.raises(TypeError, match="'X' must be a dense 2-D array of numbers; got list"):
        nonlinear_mslr_expected_gain([["a"] * 11])


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((np.zeros((4, 10)),), {}, "'X' must be 2-D with at least 11 feature columns"),
        ((np.full((4, 11), np.nan),), {}, r"'X' has NaN or infinite values .*\(4 rows, the first row 0\)"),
        ((np.zeros((4, 11)), [2, 3]), {}, "'group' sums to 5 documents but there are 4 rows"),
        ((np.zeros((4, 11)),), {"gain": "log"}, "'gain'"),
    ],
)
def test_expected_gain_rejects_bad_input(args: tuple, kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        nonlinear_mslr_expected_gain(*args, **kwargs)


def test_expected_gain_docstring_example_runs_as_shown() -> None:
    """The example is a doctest (the project collects none, so it runs here)."""
    (test,) = doctest.DocTestFinder(recurse=False).find(nonlinear_mslr_expected_gain, globs={})
    result = doctest.DocTestRunner(verbose=False).run(test)
    assert result.failed == 0 and result.attempted == 5
