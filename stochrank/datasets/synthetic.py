"""Synthetic ranking data: MSLR-shaped data for scale, and multimodal instances with a known optimum.

**MSLR-shaped** (:func:`mslr_like`): query lengths ~ Normal(120, 30) rounded (at least 2), grades 0..4
drawn with MSLR-WEB30K's skew (52 / 32 / 13 / 2 / 1 %), 136 float32 features of which the first quarter
are noisy copies of the grade (signal falling from 1 to 0.1 per column) and the rest pure N(0, 1) noise.
It has MSLR's shapes and label skew, not its feature distributions: use it for timing and scaling, not
for quality claims. :func:`write_mslr_like` writes it in MSLR's layout, readable as
``stochrank.datasets.load("synthetic-mslr", root=...)``.

**Nonlinear MSLR-shaped** (:func:`nonlinear_mslr`, the benchmark's ``synthetic-nonlinear`` dataset): a
*synthetic* quality benchmark, large enough to resolve differences of 0.003 NDCG@5. Query lengths ~
Normal(mean_docs, mean_docs / 4), features N(0, 1), and a relevance score that is nonlinear in the features
and depends on a hidden per-query topic; grades 0..4 at MSLR-WEB30K's skew (see the function). It is not
real data: a win here says what a method does on this generative model, nothing more.

**Multimodal instances** (:data:`PAPER`, :data:`CYCLIC`): every document is a one-hot vector, so a
model can only give each *distinct* vector one score and the train NDCG@k depends only on the weak
ordering of those scores: :func:`global_optimum` enumerates them all (13 for three vectors) with
worst-case ties (within a tie the lower label is shown first, as in the paper). Ties never help under
worst-case resolution, so the maximum over strict orderings is the same; both are returned.

* ``PAPER`` — §7.1 of Ustimenko & Prokhorenkova (ICML 2020): r1 = (3, 2, 1) on x1, x2, x3 and
  r2 = (3, 2) on x3, x1; NDCG@3 optimum 0.917 (x1 > x2 > x3); LambdaMART's 0.903 is x1 > x3 > x2.
* ``CYCLIC`` — three two-document queries over one-hot A, B, C whose preferences form a cycle
  (q1 A:3 > B:2, q2 C:1 > A:0, q3 B:3 > C:2). No ranking satisfies all three; the optima drop one cheap
  query (B > C > A or C > A > B, NDCG@3 0.9447), while LambdaMART's compromise C > B > A keeps the
  expensive q2 and drops both cheap ones (0.8893). ``tests/test_global_optimum.py`` trains on both.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from .._validation import check_choice, check_int
from ..conventions.queries import offsets_from_sizes
from ..conventions.relevance import GainKind, gains
from ._multimodal import (
    CYCLIC,
    MULTIMODAL,
    PAPER,
    Query,
    global_optimum,
    one_hot_instance,
    optimal_orders,
    weak_orderings,
)
from ._split import RankingSplit

__all__ = [
    "CYCLIC",
    "MSLR_LABEL_P",
    "MSLR_MEAN_DOCS",
    "MULTIMODAL",
    "PAPER",
    "Query",
    "global_optimum",
    "grade_features",
    "mslr_grades",
    "mslr_like",
    "mslr_query_sizes",
    "nonlinear_mslr",
    "nonlinear_mslr_cuts",
    "nonlinear_mslr_expected_gain",
    "one_hot_instance",
    "optimal_orders",
    "weak_orderings",
    "write_mslr_like",
    "write_svmlight",
]

# MSLR-WEB30K's label distribution (grades 0..4), rounded: 52 / 32 / 13 / 2 / 1 %.
MSLR_LABEL_P = np.array([0.52, 0.32, 0.13, 0.02, 0.01])
MSLR_MEAN_DOCS = 120
MSLR_FEATURES = 136


# ----------------------------------------------------------------------------------- MSLR-shaped
def mslr_like(
    n_queries: int, *, n_features: int = MSLR_FEATURES, mean_docs: int = MSLR_MEAN_DOCS, seed: int = 0
) -> RankingSplit:
    """MSLR-shaped synthetic data (see the module docstring for the generative model).

    Parameters
    ----------
    n_queries : int
        Number of queries; about ``mean_docs * n_queries`` rows.
    n_features : int
        Feature columns (MSLR: 136); the first ``max(1, n_features // 4)`` carry the grade.
    mean_docs : int
        Mean documents per query (sd ``mean_docs / 4``, at least 2 per query).
    seed : int
        Seed of the generator; the same arguments give the same arrays.

    Returns
    -------
    RankingSplit
        float32 ``X``, float64 grades 0..4, qid 1..n_queries (sorted), ``group`` the query lengths.
    """
    check_int(n_queries, "n_queries", "mslr_like", low=1)
    check_int(n_features, "n_features", "mslr_like", low=1)
    check_int(mean_docs, "mean_docs", "mslr_like", low=2)
    check_int(seed, "seed", "mslr_like", low=0)
    rng = np.random.default_rng(seed)
    sizes = mslr_query_sizes(n_queries, rng, mean_docs)
    labels = mslr_grades(int(sizes.sum()), rng)
    X = grade_features(labels, n_features, rng)
    qid = np.repeat(np.arange(1, n_queries + 1, dtype=np.int64), sizes)
    return RankingSplit(X, labels, qid, sizes)


def mslr_query_sizes(n_queries: int, rng: np.random.Generator, mean_docs: int = MSLR_MEAN_DOCS) -> np.ndarray:
    """Documents per query: Normal(mean_docs, mean_docs / 4) rounded, at least 2."""
    return np.maximum(np.rint(rng.normal(mean_docs, mean_docs / 4, n_queries)).astype(np.int64), 2)


def mslr_grades(n_docs: int, rng: np.random.Generator) -> np.ndarray:
    """Relevance grades 0..4 (float64) with MSLR-WEB30K's skew."""
    return rng.choice(MSLR_LABEL_P.size, size=n_docs, p=MSLR_LABEL_P).astype(np.float64)


def grade_features(labels: np.ndarray, n_features: int, rng: np.random.Generator) -> np.ndarray:
    """Draw float32 features, a quarter of them informative.

    The first ``max(1, n_features // 4)`` columns are N(0, 1) plus the grade times a strength falling
    from 1 to 0.1, the rest pure N(0, 1) noise.
    """
    X = rng.standard_normal((labels.size, n_features), dtype=np.float32)
    informative = max(1, n_features // 4)
    X[:, :informative] += labels.astype(np.float32)[:, None] * np.linspace(
        1.0, 0.1, informative, dtype=np.float32
    )
    return X


def nonlinear_mslr(
    n_queries: int, *, mean_docs: int = 35, n_features: int = 30, seed: int = 0
) -> RankingSplit:
    r"""Nonlinear MSLR-shaped synthetic data (the benchmark's ``synthetic-nonlinear``).

    Per query a hidden topic :math:`u_q \sim N(0, I_3)`; per document features :math:`x \sim N(0, I)`
    except :math:`x_{8..10} = u_q + N(0, 0.5^2 I)` (a noisy view of the topic), and the relevance score

    .. math:: s = \sin(2 x_0) + x_1 x_2 + |x_3| - 0.7\,\max(x_4 - 0.5, 0)
              + 0.8\,\langle x_{5..7}, u_q \rangle + 0.5\,\varepsilon, \quad \varepsilon \sim N(0, 1).

    Grades 0..4 cut ``s`` at fixed thresholds, the quantiles of MSLR-WEB30K's skew (52 / 32 / 13 / 2 / 1 %)
    of ``s`` over a reference draw of 200,000 documents (:func:`nonlinear_mslr_cuts`), so every split and
    seed uses the same relevance scale. Features 11.. are noise.

    Parameters
    ----------
    n_queries : int
        Number of queries.
    mean_docs : int
        Mean documents per query (sd ``mean_docs / 4``, at least 2 per query).
    n_features : int
        Feature columns, at least 11 (the model uses the first 11).
    seed : int
        Seed of the generator; the same arguments give the same arrays.

    Returns
    -------
    RankingSplit
        float32 ``X``, float64 grades 0..4, qid 0..n_queries-1 (sorted), ``group`` the query lengths.

    Examples
    --------
    >>> from stochrank.datasets.synthetic import nonlinear_mslr
    >>> data = nonlinear_mslr(100, seed=1)
    >>> data.X.shape[1], data.n_queries
    (30, 100)
    """
    check_int(n_queries, "n_queries", "nonlinear_mslr", low=1)
    check_int(mean_docs, "mean_docs", "nonlinear_mslr", low=2)
    check_int(n_features, "n_features", "nonlinear_mslr", low=11)
    check_int(seed, "seed", "nonlinear_mslr", low=0)
    rng = np.random.default_rng(seed)
    sizes = mslr_query_sizes(n_queries, rng, mean_docs)
    X, s = _nonlinear_documents(sizes, n_features, rng)
    y = np.searchsorted(nonlinear_mslr_cuts(), s).astype(np.float64)
    qid = np.repeat(np.arange(n_queries, dtype=np.int64), sizes)
    return RankingSplit(X, y, qid, sizes)


_TOPIC_WEIGHT = 0.8  # weight of <x_5..7, topic> in the relevance score
_NOISE_SD = 0.5  # sd of the relevance score's own noise, and of each document's view of the topic


def _nonlinear_documents(
    sizes: np.ndarray, n_features: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Features (float32) and relevance scores of :func:`nonlinear_mslr`."""
    n = int(sizes.sum())
    X = rng.standard_normal((n, n_features), dtype=np.float32)
    topic = np.repeat(rng.standard_normal((sizes.size, 3), dtype=np.float32), sizes, axis=0)
    X[:, 8:11] = topic + _NOISE_SD * rng.standard_normal((n, 3), dtype=np.float32)
    x = X.astype(np.float64)
    topic_term = _TOPIC_WEIGHT * np.sum(x[:, 5:8] * topic, axis=1)
    s = _topic_free_relevance(x) + topic_term + _NOISE_SD * rng.standard_normal(n)
    return X, s


def _topic_free_relevance(x: np.ndarray) -> np.ndarray:
    """Return the part of :func:`nonlinear_mslr`'s relevance score that is a fixed function of x_0..4."""
    relevance: np.ndarray = (
        np.sin(2 * x[:, 0]) + x[:, 1] * x[:, 2] + np.abs(x[:, 3]) - 0.7 * np.maximum(x[:, 4] - 0.5, 0.0)
    )
    return relevance


@functools.cache
def nonlinear_mslr_cuts() -> np.ndarray:
    """Return the four grade thresholds of :func:`nonlinear_mslr` (fixed: a seed-0 draw of 200,000 docs)."""
    rng = np.random.default_rng(0)
    sizes = mslr_query_sizes(200_000 // 35, rng, 35)
    _, s = _nonlinear_documents(sizes, 11, rng)
    cuts: np.ndarray = np.quantile(s, np.cumsum(MSLR_LABEL_P[:-1]))
    return cuts


def nonlinear_mslr_expected_gain(X: Any, group: Any = None, *, gain: GainKind = "exp") -> np.ndarray:
    r"""Return each document's expected gain under :func:`nonlinear_mslr`'s model, given features.

    A document sees the query's topic :math:`u \sim N(0, I_3)` through :math:`x_{8..10} = u + N(0, 0.5^2
    I)`; from m such views the topic's posterior is normal, mean :math:`\sum x_{8..10} / (m + 0.25)`,
    variance :math:`v_u = 0.25 / (m + 0.25)` per coordinate. So the relevance score s is normal given the
    features, mean :math:`f(x_{0..4}) + 0.8 \langle x_{5..7}, E[u] \rangle`, variance :math:`0.25 + 0.64
    \lVert x_{5..7} \rVert^2 v_u`, and with :math:`c_j` the cut between grades j and j + 1
    (:func:`nonlinear_mslr_cuts`)

    .. math:: E[\text{gain} \mid x] = \textstyle\sum_{j=0}^{3} (\text{gain}(j + 1) - \text{gain}(j))
              \, \Phi\bigl((E[s] - c_j) / \sqrt{\operatorname{Var}(s)}\bigr).

    With ``group`` these are the Bayes ranking's scores: given all of a query's features, sorting by them
    maximises the expected DCG@k for every k (for NDCG, whose normaliser depends on the labels, a
    near-optimum). Without it each document's own view is used: a reference for models that score one
    document at a time, **not** their optimum (a query's documents share the topic, so the best such
    score is not the marginal expectation; another shrinkage of the view can rank better).

    Parameters
    ----------
    X : array of shape (n_documents, >= 11)
        Features as :func:`nonlinear_mslr` returns them.
    group : array of query sizes, optional
        Documents per query, in row order: every document's topic posterior pools its query's views.
        None: each document's own view only.
    gain : {'exp', 'linear'}
        ``2**grade - 1`` or the grade.

    Returns
    -------
    numpy.ndarray of float64, shape (n_documents,)

    Examples
    --------
    >>> from stochrank.datasets.synthetic import nonlinear_mslr, nonlinear_mslr_expected_gain
    >>> from stochrank.metrics import ndcg
    >>> data = nonlinear_mslr(2000, seed=1)
    >>> own, pooled = (nonlinear_mslr_expected_gain(data.X, g) for g in (None, data.group))
    >>> [round(float(ndcg(data.y, s, data.group, k=5, empty="skip")), 3) for s in (own, pooled)]
    [0.903, 0.958]
    """
    owner = "nonlinear_mslr_expected_gain"
    check_choice(gain, "gain", owner, ("exp", "linear"))
    try:
        x = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{owner}: 'X' must be a dense 2-D array of numbers; got {type(X).__name__}: {exc}"
        ) from None
    if x.ndim != 2 or x.shape[1] < 11:
        raise ValueError(
            f"{owner}: 'X' must be 2-D with at least 11 feature columns, as nonlinear_mslr returns it; got "
            f"shape {x.shape}."
        )
    bad = np.flatnonzero(~np.isfinite(x[:, :11]).all(axis=1))
    if bad.size:
        raise ValueError(
            f"{owner}: 'X' has NaN or infinite values in its first 11 columns ({bad.size} rows, the first "
            f"row {bad[0]}); pass finite features."
        )
    views = x[:, 8:11]
    view_var = _NOISE_SD**2
    if group is None:
        view_sums, n_views = views, np.ones(x.shape[0])
    else:
        offsets = offsets_from_sizes(group, x.shape[0])
        sizes = np.diff(offsets)
        view_sums = np.repeat(np.add.reduceat(views, offsets[:-1], axis=0), sizes, axis=0)
        n_views = np.repeat(sizes, sizes).astype(np.float64)
    topic_mean = view_sums / (n_views + view_var)[:, None]
    return _expected_gain_given_topic(x, topic_mean, view_var / (n_views + view_var), gain)


def _expected_gain_given_topic(
    x: np.ndarray, topic_mean: np.ndarray, topic_var: Any, gain: GainKind
) -> np.ndarray:
    """E[gain | features] of :func:`nonlinear_mslr` when the topic is N(topic_mean, topic_var I) given them.

    ``x`` float64 features (validated), ``topic_mean`` one row of 3 per document, ``topic_var`` a scalar or
    one value per document: the formula of :func:`nonlinear_mslr_expected_gain` for any such belief.
    """
    mean = _topic_free_relevance(x) + _TOPIC_WEIGHT * np.sum(x[:, 5:8] * topic_mean, axis=1)
    sd = np.sqrt(_NOISE_SD**2 + _TOPIC_WEIGHT**2 * np.sum(x[:, 5:8] ** 2, axis=1) * topic_var)
    steps = np.diff(gains(np.arange(MSLR_LABEL_P.size, dtype=np.float64), gain))
    expected: np.ndarray = (
        special.ndtr((mean[:, None] - nonlinear_mslr_cuts()[None, :]) / sd[:, None]) @ steps
    )
    return expected


def write_svmlight(split: RankingSplit, path: str | os.PathLike[str], decimals: int | None = 6) -> Path:
    """Write ``split`` as a LETOR/SVMlight file (one-based indices, ``qid:``).

    The file is gzip-compressed if the name ends in ``.gz``. Uses
    :func:`sklearn.datasets.dump_svmlight_file`; zero features are omitted.

    Feature values are rounded to ``decimals`` decimals (MSLR's files carry 6), which keeps the file
    about a third of the size of full float precision; None writes them unrounded.
    """
    import gzip

    from sklearn.datasets import dump_svmlight_file

    X = np.asarray(split.X, dtype=np.float64)
    if decimals is not None:
        X = np.round(X, decimals)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") if path.suffix == ".gz" else open(path, "wb") as handle:
        dump_svmlight_file(X, split.y, handle, zero_based=False, query_id=split.qid)
    return path


def write_mslr_like(
    directory: str | os.PathLike[str], n_queries: Sequence[int] = (6000, 2000, 2000), *, seed: int = 0
) -> dict[str, Path]:
    """Write ``Fold1/{train,vali,test}.txt`` of MSLR-shaped data under ``directory`` (MSLR's layout).

    ``n_queries`` gives the queries of train, vali and test; each split has its own generator stream
    (``SeedSequence(seed).spawn(3)``). With ``directory = <root>/synthetic-mslr`` the files load as
    ``stochrank.datasets.load("synthetic-mslr", split=..., root=<root>)``.
    """
    if len(n_queries) != 3:
        raise ValueError(f"'n_queries' must give three counts (train, vali, test); got {n_queries!r}.")
    streams = np.random.SeedSequence(seed).spawn(3)
    paths = {}
    for split, count, stream in zip(("train", "vali", "test"), n_queries, streams, strict=True):
        data = mslr_like(count, seed=int(stream.generate_state(1)[0]))
        paths[split] = write_svmlight(data, Path(directory) / "Fold1" / f"{split}.txt")
    return paths
