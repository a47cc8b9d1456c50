"""Tests for stochrank.metrics: naive twins, peer parity (CatBoost, LightGBM, XGBoost, sklearn), errors,
feval."""

from __future__ import annotations

import copy
import itertools
import math
import pickle

import numba
import numpy as np
import numpy.testing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stochrank import metrics as M

# NAIVE TWINS ==================================================================================
# Plain Python/NumPy references: a loop over queries, a full Python sort with the tie rule
# spelled out as a key, and brute-force enumeration of tied orders for ties="average".

NAIVE_EMPTY = {"one": 1.0, "zero": 0.0, "skip": math.nan}


def naive_order(labels, scores, ties, tiebreak=None):
    """Displayed order of one query: descending score; ties by label ascending (worst), by the key
    (key_ascending / key_descending: Python's own comparison of the keys) or by row."""
    rows = range(len(scores))
    if ties == "worst":
        return sorted(rows, key=lambda i: (-scores[i], labels[i], i))
    if ties in ("key_ascending", "key_descending"):
        # Python's sort is stable, also with reverse=True: equal keys keep row order.
        by_key = sorted(rows, key=lambda i: tiebreak[i], reverse=ties == "key_descending")
        return sorted(by_key, key=lambda i: -scores[i])
    return sorted(rows, key=lambda i: (-scores[i], i))


def naive_tied_orders(scores):
    """Every permutation that lists the documents by non-increasing score."""
    n = len(scores)
    return [
        perm
        for perm in itertools.permutations(range(n))
        if all(scores[perm[i]] >= scores[perm[i + 1]] for i in range(n - 1))
    ]


def naive_cutoff(k, n):
    return n if k is None else min(k, n)


def naive_gain(label, gain):
    return 2.0**label - 1.0 if gain == "exp" else float(label)


def naive_discount(p, discount):
    return 1.0 / math.log2(p + 2) if discount == "log" else 1.0 / (p + 1)


def naive_dcg_query(labels, scores, k=None, gain="exp", discount="log", ties="worst", tiebreak=None):
    n_top = naive_cutoff(k, len(labels))

    def value(order):
        return sum(naive_gain(labels[order[p]], gain) * naive_discount(p, discount) for p in range(n_top))

    if ties == "average":
        return float(np.mean([value(order) for order in naive_tied_orders(scores)]))
    return value(naive_order(labels, scores, ties, tiebreak))


def naive_ndcg_query(
    labels, scores, k=None, gain="exp", discount="log", ties="worst", empty="one", tiebreak=None
):
    n_top = naive_cutoff(k, len(labels))
    ideal = sorted(labels, reverse=True)
    idcg = sum(naive_gain(ideal[p], gain) * naive_discount(p, discount) for p in range(n_top))
    if idcg == 0:
        return NAIVE_EMPTY[empty]
    return naive_dcg_query(labels, scores, k, gain, discount, ties, tiebreak) / idcg


def naive_stop(labels, max_grade):
    return list(labels) if max_grade is None else [(2.0**r - 1.0) / 2.0**max_grade for r in labels]


def naive_err_query(labels, scores, k=None, max_grade=None, ties="worst", empty="zero", tiebreak=None):
    stop = naive_stop(labels, max_grade)
    if max(stop) == 0:
        return NAIVE_EMPTY[empty]
    order = naive_order(labels, scores, ties, tiebreak)
    total = 0.0
    for p in range(naive_cutoff(k, len(labels))):
        not_stopped = np.prod([1.0 - stop[order[q]] for q in range(p)])
        total += stop[order[p]] / (p + 1) * not_stopped
    return total


def naive_pfound_query(
    labels, scores, k=None, decay=0.85, max_grade=None, ties="worst", empty="zero", tiebreak=None
):
    stop = naive_stop(labels, max_grade)
    if max(stop) == 0:
        return NAIVE_EMPTY[empty]
    order = naive_order(labels, scores, ties, tiebreak)
    total, p_look = 0.0, 1.0
    for p in range(naive_cutoff(k, len(labels))):
        if p > 0:
            p_look = p_look * decay * (1.0 - stop[order[p - 1]])
        total += stop[order[p]] * p_look
    return total


def naive_mrr_query(labels, scores, k=None, threshold=0.0, ties="worst", empty="zero", tiebreak=None):
    if not any(label > threshold for label in labels):
        return NAIVE_EMPTY[empty]
    ranked = [labels[i] for i in naive_order(labels, scores, ties, tiebreak)]
    first = next(p for p, label in enumerate(ranked) if label > threshold)
    return 1.0 / (first + 1) if first < naive_cutoff(k, len(labels)) else 0.0


def naive_map_query(
    labels, scores, k=None, threshold=0.0, ties="worst", empty="one", denominator="min", tiebreak=None
):
    n_relevant = sum(label > threshold for label in labels)
    if n_relevant == 0:
        return NAIVE_EMPTY[empty]
    relevant = [labels[i] > threshold for i in naive_order(labels, scores, ties, tiebreak)]
    n_top = naive_cutoff(k, len(labels))
    precisions_at_hits = [sum(relevant[: p + 1]) / (p + 1) for p in range(n_top) if relevant[p]]
    return sum(precisions_at_hits) / (n_relevant if denominator == "relevant" else min(n_relevant, n_top))


def naive_precision_query(
    labels, scores, k, threshold=0.0, ties="worst", empty="zero", denominator="min", tiebreak=None
):
    if not any(label > threshold for label in labels):
        return NAIVE_EMPTY[empty]
    n_top = naive_cutoff(k, len(labels))

    def value(order):
        return sum(labels[order[p]] > threshold for p in range(n_top)) / (k if denominator == "k" else n_top)

    if ties == "average":
        return float(np.mean([value(order) for order in naive_tied_orders(scores)]))
    return value(naive_order(labels, scores, ties, tiebreak))


NAIVE_QUERY = {
    "ndcg": naive_ndcg_query,
    "dcg": naive_dcg_query,
    "err": naive_err_query,
    "pfound": naive_pfound_query,
    "mrr": naive_mrr_query,
    "map": naive_map_query,
    "precision": naive_precision_query,
}


def naive_metric(name, labels, scores, sizes, *, weight=None, per_query=False, **conventions):
    """Loop over queries; weighted mean over non-NaN (non-skipped) queries."""
    values, start = [], 0
    tiebreak = conventions.pop("tiebreak", None)
    for size in sizes:
        stop = start + size
        if tiebreak is not None:
            conventions["tiebreak"] = list(tiebreak[start:stop])
        values.append(NAIVE_QUERY[name](list(labels[start:stop]), list(scores[start:stop]), **conventions))
        start = stop
    values = np.array(values, dtype=np.float64)
    if per_query:
        return values
    w = np.ones(len(sizes)) if weight is None else np.asarray(weight, dtype=np.float64)
    keep = ~np.isnan(values)
    return float(np.sum(w[keep] * values[keep]) / np.sum(w[keep])) if w[keep].sum() > 0 else math.nan


# DATA =========================================================================================


def make_ranking_data(n_queries, seed, *, min_size=1, max_size=15, n_empty=2, n_features=5):
    """Features, 0-4 labels from a noisy linear score, and query sizes; the first queries are all-zero."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(min_size, max_size + 1, size=n_queries)
    n = int(sizes.sum())
    X = rng.normal(size=(n, n_features))
    latent = X @ rng.normal(size=n_features) + rng.normal(scale=1.0, size=n)
    labels = np.digitize(latent, np.quantile(latent, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    for q in range(n_empty):
        labels[offsets[q] : offsets[q + 1]] = 0.0
    return X, labels, sizes


def peer_weighted_ndcg(per_query_skip, query_weight):
    """LightGBM's and XGBoost's weighted NDCG mean: each all-zero query adds an *unweighted* 1 to the
    sum, which is divided by the total query weight (LightGBM src/metric/rank_metric.hpp, weighted
    branch; XGBoost 3.2 measured). ``per_query_skip`` marks those queries with NaN."""
    empty = np.isnan(per_query_skip)
    kept = np.dot(query_weight[~empty], per_query_skip[~empty])
    return (kept + empty.sum()) / query_weight.sum()


@st.composite
def queries(draw, max_size=8, max_queries=5, label_values=(0.0, 1.0, 2.0, 3.0, 4.0)):
    """Random queries: sizes 1..max_size, heavy ties (small integer scores) or continuous scores,
    graded, binary or all-equal labels."""
    sizes = draw(st.lists(st.integers(1, max_size), min_size=1, max_size=max_queries))
    n = sum(sizes)
    label_kind = draw(st.sampled_from(["graded", "binary", "constant"]))
    if label_kind == "constant":
        labels = [draw(st.sampled_from(label_values))] * n
    else:
        choices = label_values if label_kind == "graded" else label_values[:2]
        labels = draw(st.lists(st.sampled_from(choices), min_size=n, max_size=n))
    if draw(st.booleans()):
        scores = draw(st.lists(st.integers(0, 2).map(float), min_size=n, max_size=n))
    else:
        scores = draw(st.lists(st.floats(-10, 10, allow_nan=False), min_size=n, max_size=n))
    return np.array(labels), np.array(scores), np.array(sizes)


CUTOFFS = st.one_of(st.none(), st.integers(1, 10))
FUZZ = settings(max_examples=150, deadline=None)


# NAIVE TWIN COMPARISONS =======================================================================


def test_fixed_cases_by_hand():
    # Constant scores, one relevant among five: worst case puts it last, input order keeps row 0 first.
    labels, scores = np.array([1.0, 0, 0, 0, 0]), np.zeros(5)
    assert M.ndcg(labels, scores, [5], k=5) == pytest.approx(1 / math.log2(6))
    assert M.ndcg(labels, scores, [5], k=5, ties="input") == pytest.approx(1.0)
    mean_discount = np.mean([1 / math.log2(p + 2) for p in range(5)])
    assert M.ndcg(labels, scores, [5], ties="average") == pytest.approx(mean_discount)
    assert M.ndcg(labels, scores, [5], k=4) == pytest.approx(0.0)
    assert M.mrr(labels, scores, [5]) == pytest.approx(1 / 5)
    assert M.mrr(labels, scores, [5], k=4) == 0.0
    # Hand-computed graded example, positions 0..2 with labels 2, 0, 1.
    assert M.dcg([2, 0, 1], [3.0, 2.0, 1.0], [3]) == pytest.approx(3 + 1 / 2)
    assert M.dcg([2, 0, 1], [3.0, 2.0, 1.0], [3], gain="linear", discount="position") == pytest.approx(
        2 + 1 / 3
    )
    assert M.ndcg([2, 0, 1], [3.0, 2.0, 1.0], [3]) == pytest.approx(3.5 / (3 + 1 / math.log2(3)))
    assert M.err([0.5, 1.0], [2.0, 1.0], [2]) == pytest.approx(0.5 + 0.5 / 2)
    assert M.err([2, 0], [2.0, 1.0], [2], max_grade=2) == pytest.approx(3 / 4)
    assert M.pfound([0.5, 1.0], [2.0, 1.0], [2], decay=0.5) == pytest.approx(0.5 + 0.5 * 0.5)
    assert M.map([0, 1, 1, 0], [4.0, 3.0, 2.0, 1.0], [4]) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert M.map([0, 1, 1, 0], [4.0, 3.0, 2.0, 1.0], [4], k=2) == pytest.approx((1 / 2) / 2)
    assert M.precision([1, 0, 1], [3.0, 2.0, 1.0], [3], k=5) == pytest.approx(2 / 3)
    assert M.precision([1, 0, 0, 1], np.zeros(4), [4], k=2, ties="average") == pytest.approx(0.5)


def test_empty_rules_and_weights():
    labels = np.array([0.0, 0.0, 1.0, 0.0])
    scores = np.array([1.0, 2.0, 1.0, 2.0])
    group = [2, 2]  # query 0 has nothing to find; query 1 scores 1/log2(3)
    q1 = 1 / math.log2(3)
    assert M.ndcg(labels, scores, group) == pytest.approx((1 + q1) / 2)
    assert M.ndcg(labels, scores, group, empty="zero") == pytest.approx(q1 / 2)
    assert M.ndcg(labels, scores, group, empty="skip") == pytest.approx(q1)
    per_query = M.ndcg(labels, scores, group, empty="skip", per_query=True)
    assert per_query.dtype == np.float64 and np.isnan(per_query[0]) and per_query[1] == pytest.approx(q1)
    assert math.isnan(M.ndcg([0.0, 0.0], [1.0, 2.0], [2], empty="skip"))
    assert M.ndcg(labels, scores, group, weight=[3.0, 1.0]) == pytest.approx((3 + q1) / 4)
    assert M.ndcg(labels, scores, group, weight=[3.0, 3.0, 1.0, 1.0]) == pytest.approx((3 + q1) / 4)
    assert M.ndcg(labels, scores, group, weight=[0.0, 1.0]) == pytest.approx(q1)
    for name in ("err", "pfound", "mrr", "precision"):
        kwargs = {"k": 2} if name == "precision" else {}
        assert getattr(M, name)(labels, scores, group, per_query=True, **kwargs)[0] == 0.0
        assert getattr(M, name)(labels, scores, group, per_query=True, empty="one", **kwargs)[0] == 1.0
    assert M.map(labels, scores, group, per_query=True)[0] == 1.0
    assert isinstance(M.ndcg(labels, scores, group), float)


@FUZZ
@given(
    data=queries(),
    k=CUTOFFS,
    gain=st.sampled_from(["exp", "linear"]),
    discount=st.sampled_from(["log", "position"]),
    ties=st.sampled_from(["worst", "input"]),
    empty=st.sampled_from(["one", "zero", "skip"]),
)
def test_ndcg_dcg_match_naive(data, k, gain, discount, ties, empty):
    labels, scores, sizes = data
    conv = {"k": k, "gain": gain, "discount": discount, "ties": ties}
    for per_query in (True, False):
        npt.assert_allclose(
            M.ndcg(labels, scores, sizes, empty=empty, per_query=per_query, **conv),
            naive_metric("ndcg", labels, scores, sizes, empty=empty, per_query=per_query, **conv),
            rtol=1e-12,
            atol=1e-12,
        )
        npt.assert_allclose(
            M.dcg(labels, scores, sizes, per_query=per_query, **conv),
            naive_metric("dcg", labels, scores, sizes, per_query=per_query, **conv),
            rtol=1e-12,
        )


@FUZZ
@given(data=queries(max_size=6, max_queries=3), k=CUTOFFS, gain=st.sampled_from(["exp", "linear"]))
def test_average_ties_match_brute_force_enumeration(data, k, gain):
    labels, scores, sizes = data
    npt.assert_allclose(
        M.ndcg(labels, scores, sizes, k=k, gain=gain, ties="average", per_query=True),
        naive_metric("ndcg", labels, scores, sizes, k=k, gain=gain, ties="average", per_query=True),
        rtol=1e-12,
    )
    npt.assert_allclose(
        M.dcg(labels, scores, sizes, k=k, gain=gain, ties="average", per_query=True),
        naive_metric("dcg", labels, scores, sizes, k=k, gain=gain, ties="average", per_query=True),
        rtol=1e-12,
    )
    k = 3 if k is None else k
    npt.assert_allclose(
        M.precision(labels, scores, sizes, k=k, ties="average", per_query=True),
        naive_metric("precision", labels, scores, sizes, k=k, ties="average", per_query=True),
        rtol=1e-12,
    )


@FUZZ
@given(
    data=queries(),
    k=CUTOFFS,
    ties=st.sampled_from(["worst", "input"]),
    empty=st.sampled_from(["one", "zero", "skip"]),
    graded=st.booleans(),
    decay=st.sampled_from([0.85, 0.5, 1.0]),
)
def test_err_pfound_match_naive(data, k, ties, empty, graded, decay):
    labels, scores, sizes = data
    # Probabilities in [0, 1] (CatBoost) or grades 0..4 mapped by (2^r - 1)/2^4 (Chapelle et al.).
    labels, max_grade = (labels, 4) if graded else (labels / 4.0, None)
    conv = {"k": k, "ties": ties, "empty": empty, "max_grade": max_grade}
    for per_query in (True, False):
        npt.assert_allclose(
            M.err(labels, scores, sizes, per_query=per_query, **conv),
            naive_metric("err", labels, scores, sizes, per_query=per_query, **conv),
            rtol=1e-12,
        )
        npt.assert_allclose(
            M.pfound(labels, scores, sizes, decay=decay, per_query=per_query, **conv),
            naive_metric("pfound", labels, scores, sizes, decay=decay, per_query=per_query, **conv),
            rtol=1e-12,
        )


@FUZZ
@given(
    data=queries(),
    k=CUTOFFS,
    ties=st.sampled_from(["worst", "input"]),
    empty=st.sampled_from(["one", "zero", "skip"]),
    threshold=st.sampled_from([0.0, 0.5, 1.0, 2.5]),
)
def test_mrr_map_precision_match_naive(data, k, ties, empty, threshold):
    labels, scores, sizes = data
    conv = {"ties": ties, "empty": empty, "threshold": threshold}
    pk = 3 if k is None else k
    for per_query in (True, False):
        for name, kk in (("mrr", k), ("map", k), ("precision", pk)):
            npt.assert_allclose(
                getattr(M, name)(labels, scores, sizes, k=kk, per_query=per_query, **conv),
                naive_metric(name, labels, scores, sizes, k=kk, per_query=per_query, **conv),
                rtol=1e-12,
                err_msg=name,
            )


@FUZZ
@given(data=queries(), weight_seed=st.integers(0, 2**31 - 1))
def test_weighted_mean_matches_naive(data, weight_seed):
    labels, scores, sizes = data
    weight = np.random.default_rng(weight_seed).uniform(0.1, 3.0, size=sizes.size)
    npt.assert_allclose(
        M.ndcg(labels, scores, sizes, weight=weight, empty="skip"),
        naive_metric("ndcg", labels, scores, sizes, weight=weight, empty="skip"),
        rtol=1e-12,
    )
    row_weight = np.repeat(weight, sizes)
    npt.assert_allclose(
        M.map(labels, scores, sizes, weight=row_weight, k=3),
        naive_metric("map", labels, scores, sizes, weight=weight, k=3),
        rtol=1e-12,
    )


TREC_CONVENTIONS = {
    "ndcg": {"gain": "linear", "empty": "zero"},
    "dcg": {"gain": "linear"},
    "err": {"max_grade": 4},
    "pfound": {"max_grade": 4},
    "mrr": {"threshold": 0.5},
    "map": {"threshold": 0.5, "empty": "zero", "denominator": "relevant"},
    "precision": {"threshold": 0.5, "empty": "zero", "denominator": "k"},
}


@FUZZ
@given(
    data=queries(),
    k=CUTOFFS,
    ties=st.sampled_from(["key_descending", "key_ascending"]),
    key_kind=st.sampled_from(["str", "int", "float"]),
    key_seed=st.integers(0, 2**31 - 1),
    name=st.sampled_from(sorted(TREC_CONVENTIONS)),
)
def test_external_tiebreak_keys_match_naive(data, k, ties, key_kind, key_seed, name):
    """trec_eval/gdeval order equal scores by docno descending, MS MARCO ascending: any key, any metric."""
    labels, scores, sizes = data
    rng = np.random.default_rng(key_seed)
    ids = rng.integers(0, 6, size=labels.size)  # repeated keys too: those keep row order
    tiebreak = {
        "str": np.array([f"doc-{i}" for i in rng.integers(0, 12, size=labels.size)]),
        "int": ids,
        "float": ids / 3.0,
    }[key_kind]
    conv = {**TREC_CONVENTIONS[name], "ties": ties, "k": 3 if name == "precision" and k is None else k}
    npt.assert_allclose(
        getattr(M, name)(labels, scores, sizes, tiebreak=tiebreak, per_query=True, **conv),
        naive_metric(name, labels, scores, sizes, tiebreak=tiebreak, per_query=True, **conv),
        rtol=1e-12,
    )


@pytest.mark.parametrize(
    "keys",
    [np.array([np.nan, 7.0]), np.array([np.nan, 7.0], dtype=object), np.array([None, 7], dtype=object)],
    ids=["float-nan", "object-nan", "object-none"],
)
def test_tiebreak_keys_refuse_nan_and_none_in_any_dtype(keys):
    """A missing key would sort as the largest and silently decide the order of tied documents."""
    with pytest.raises(ValueError, match=r"'tiebreak' of stochrank\.metrics\.ndcg contains NaN, None or inf"):
        M.ndcg([1, 0], [0.5, 0.5], [2], ties="key_descending", tiebreak=keys)


def test_tiebreak_keys_refuse_numbers_mixed_with_strings():
    """numpy would turn [10, 9, 'x'] into strings, where '10' sorts before '9'."""
    with pytest.raises(TypeError, match=r"numbers or strings \(one kind\); got \['int', 'str'\]"):
        M.ndcg([0, 1, 0], [0.5, 0.5, 0.5], [3], ties="key_ascending", tiebreak=[10, 9, "x"])
    assert M.ndcg([0, 1, 0], [0.5, 0.5, 0.5], [3], ties="key_ascending", tiebreak=[10, 9, 11]) == 1.0


@pytest.mark.parametrize("as_type", [list, np.array, lambda keys: np.array(keys, dtype=object)])
def test_tiebreak_keys_of_bytes_compare_as_bytes(as_type):
    """A list, an array and an object array of bytes keys order alike: by bytes (b'10' before b'9')."""
    value = M.ndcg([0, 1], [0.5, 0.5], [2], ties="key_ascending", tiebreak=as_type([b"10", b"9"]))
    assert value == pytest.approx(1 / np.log2(3))


@FUZZ
@given(data=queries(max_size=12), k=st.integers(1, 15), threshold=st.sampled_from([0.0, 0.5, 2.5]))
def test_trec_denominators_match_naive(data, k, threshold):
    """P@k over k (trec_eval P_k, ranx) and AP@k over R (trec_eval map_cut_k, ranx map@k)."""
    labels, scores, sizes = data
    for name, denominator in (("precision", "k"), ("precision", "min"), ("map", "relevant"), ("map", "min")):
        conv = {"k": k, "threshold": threshold, "denominator": denominator}
        npt.assert_allclose(
            getattr(M, name)(labels, scores, sizes, per_query=True, **conv),
            naive_metric(name, labels, scores, sizes, per_query=True, **conv),
            rtol=1e-12,
            err_msg=f"{name} {denominator}",
        )
    npt.assert_allclose(  # without a cut-off R is the normaliser either way
        M.map(labels, scores, sizes, denominator="relevant", per_query=True),
        M.map(labels, scores, sizes, per_query=True),
        rtol=1e-15,
    )


def test_trec_conventions_by_hand():
    # Three documents, all relevant: P@10 is 3/10 for trec_eval (over k), 1 for XGBoost/CatBoost.
    assert M.precision([1, 1, 1], [3.0, 2.0, 1.0], [3], k=10, denominator="k") == pytest.approx(0.3)
    assert M.precision([1, 1, 1], [3.0, 2.0, 1.0], [3], k=10) == 1.0
    # Relevant at ranks 1 and 3 of 4, cut at 2: AP@2 = (1/1) / R = 1/2 (trec_eval) or / min(R, 2) = 1/2;
    # with R = 3 (one more relevant document below the cut) trec_eval divides by 3, LightGBM by 2.
    labels, scores = [1, 0, 1, 1], [4.0, 3.0, 2.0, 1.0]
    assert M.map(labels, scores, [4], k=2, denominator="relevant") == pytest.approx(1 / 3)
    assert M.map(labels, scores, [4], k=2) == pytest.approx(1 / 2)
    # Three tied documents with docnos "b", "c", "a": trec_eval (descending) shows c, b, a; MS MARCO
    # (ascending) a, b, c.
    docno = np.array(["b", "c", "a"])
    assert M.mrr([1, 0, 0], np.zeros(3), [3], ties="key_descending", tiebreak=docno) == 0.5
    assert M.mrr([0, 1, 0], np.zeros(3), [3], ties="key_descending", tiebreak=docno) == 1.0
    assert M.mrr([0, 1, 0], np.zeros(3), [3], ties="key_ascending", tiebreak=docno) == pytest.approx(1 / 3)
    assert M.mrr([0, 0, 1], np.zeros(3), [3], ties="key_ascending", tiebreak=docno) == 1.0
    # The key acts only among equal scores, and within each query.
    assert M.mrr(
        [1, 0, 0, 1], [1.0, 2.0, 0.0, 0.0], [2, 2], ties="key_descending", tiebreak=[9, 0, 0, 1]
    ) == (pytest.approx((1 / 2 + 1) / 2))


def test_large_input_runs_the_parallel_path_and_matches_naive():
    from stochrank._parallel import PARALLEL_MIN_ROWS

    _, labels, sizes = make_ranking_data(2600, seed=11, max_size=16, n_empty=100)
    assert labels.size >= PARALLEL_MIN_ROWS  # otherwise the drivers run on one thread
    scores = np.round(np.random.default_rng(12).normal(size=labels.size), 1)  # ties across rows
    threads = numba.get_num_threads()
    ends = np.cumsum(sizes)
    for name, conv in (
        ("ndcg", {"k": 5, "ties": "worst"}),
        ("ndcg", {"k": 5, "ties": "average"}),
        ("err", {"k": 5, "ties": "input", "max_grade": 4}),
        ("map", {"k": 10, "ties": "worst"}),
    ):
        if conv["ties"] == "average":  # too many tied orders to enumerate: check against the small-input path
            expected = np.concatenate(
                [
                    M.ndcg(labels[a:b], scores[a:b], [b - a], **conv, per_query=True)
                    for a, b in zip(ends - sizes, ends, strict=True)
                ]
            )
        else:
            expected = naive_metric(name, labels, scores, sizes, per_query=True, **conv)
        npt.assert_allclose(
            getattr(M, name)(labels, scores, sizes, per_query=True, **conv), expected, rtol=1e-12
        )
    assert numba.get_num_threads() == threads  # the small-input path restores the thread count


def test_group_sizes():
    npt.assert_array_equal(M.group_sizes([7, 7, 3, 3, 3, 9]), [2, 3, 1])
    npt.assert_array_equal(M.group_sizes(np.array(["b", "a", "a"])), [1, 2])
    with pytest.raises(ValueError, match="not contiguous"):
        M.group_sizes([1, 2, 1])


# PEER PARITY ==================================================================================


def _catboost_cases(seed):
    """Graded labels, label/4 probabilities, heavily tied and continuous scores, empty queries."""
    _, labels, sizes = make_ranking_data(40, seed=seed, max_size=12, n_empty=3)
    rng = np.random.default_rng(seed + 1)
    tied = rng.integers(0, 3, size=labels.size).astype(np.float64)
    continuous = rng.normal(size=labels.size)
    return labels, sizes, {"tied": tied, "continuous": continuous}


CATBOOST_CASES = [
    ("NDCG:top=5;type=Base", "ndcg", "graded", {"k": 5, "gain": "linear"}),
    ("NDCG:top=5;type=Exp", "ndcg", "graded", {"k": 5, "gain": "exp"}),
    ("NDCG:type=Base;denominator=Position", "ndcg", "graded", {"gain": "linear", "discount": "position"}),
    ("NDCG:top=3;type=Exp;denominator=Position", "ndcg", "graded", {"k": 3, "discount": "position"}),
    ("DCG:top=5;type=Base", "dcg", "graded", {"k": 5, "gain": "linear"}),
    ("DCG:type=Exp", "dcg", "graded", {}),
    ("ERR:top=5", "err", "probability", {"k": 5}),
    ("ERR", "err", "probability", {}),
    ("PFound:top=5", "pfound", "probability", {"k": 5}),
    ("PFound:decay=0.5", "pfound", "probability", {"decay": 0.5}),
    ("MRR:top=5", "mrr", "probability", {"k": 5, "threshold": 0.5}),
    ("MRR", "mrr", "graded", {"threshold": 0.5}),
    ("PrecisionAt:top=5", "precision", "probability", {"k": 5, "threshold": 0.5}),
    ("PrecisionAt:top=3", "precision", "graded", {"k": 3, "threshold": 0.5}),
    ("MAP:top=5", "map", "probability", {"k": 5, "threshold": 0.5, "empty": "zero"}),
    ("MAP", "map", "graded", {"threshold": 0.5, "empty": "zero"}),
]


@pytest.mark.parametrize("score_kind", ["tied", "continuous"])
@pytest.mark.parametrize(("cb_metric", "name", "label_kind", "conv"), CATBOOST_CASES)
def test_matches_catboost_eval_metric(cb_metric, name, label_kind, conv, score_kind):
    eval_metric = pytest.importorskip("catboost.utils").eval_metric
    labels, sizes, all_scores = _catboost_cases(seed=3)
    # label/4 puts labels on both sides of CatBoost's 0.5 border (0.5 itself is not relevant).
    labels = labels / 4.0 if label_kind == "probability" else labels
    scores = all_scores[score_kind]
    group_id = np.repeat(np.arange(sizes.size), sizes)
    expected = eval_metric(labels, scores, cb_metric, group_id=group_id)[0]
    ours = getattr(M, name)(labels, scores, sizes, ties="worst", **conv)
    assert ours == pytest.approx(expected, abs=1e-6)


def _lgb_datasets(lgb, seed, *, weighted=False):
    X, y, sizes = make_ranking_data(30, seed=seed, min_size=2)
    Xv, yv, sizes_v = make_ranking_data(20, seed=seed + 100, min_size=1)
    weight_v = (
        np.repeat(np.random.default_rng(seed).uniform(0.5, 2.0, sizes_v.size), sizes_v) if weighted else None
    )
    train = lgb.Dataset(X, y, group=sizes)
    valid = lgb.Dataset(Xv, yv, group=sizes_v, weight=weight_v, reference=train)
    return train, valid, Xv, yv, sizes_v, weight_v


@pytest.mark.parametrize("weighted", [False, True])
def test_matches_lightgbm_ndcg_and_map(weighted):
    lgb = pytest.importorskip("lightgbm")
    train, valid, Xv, yv, sizes_v, weight_v = _lgb_datasets(lgb, seed=5, weighted=weighted)
    params = {
        "objective": "lambdarank",
        "metric": ["ndcg", "map"],
        "eval_at": [1, 3, 5],
        "num_leaves": 4,
        "min_data_in_leaf": 5,
        "verbose": -1,
        "num_threads": 1,
    }
    history: dict = {}
    booster = lgb.train(
        params, train, num_boost_round=3, valid_sets=[valid], callbacks=[lgb.record_evaluation(history)]
    )
    scores = booster.predict(Xv, raw_score=True)
    assert np.unique(scores).size < scores.size  # three small trees leave ties: the tie rule matters
    for k in (1, 3, 5):
        lgb_ndcg, lgb_map = history["valid_0"][f"ndcg@{k}"][-1], history["valid_0"][f"map@{k}"][-1]
        ours_map = M.map(yv, scores, sizes_v, k=k, ties="input", empty="one", weight=weight_v)
        assert ours_map == pytest.approx(lgb_map, abs=1e-6)
        ours_ndcg = M.ndcg(yv, scores, sizes_v, k=k, ties="input", gain="exp", empty="one", weight=weight_v)
        if not weighted:
            assert ours_ndcg == pytest.approx(lgb_ndcg, abs=1e-6)
            continue
        # With weights and all-zero queries LightGBM's NDCG is not the weighted mean (see
        # peer_weighted_ndcg): rebuild its rule from our per-query values, and show the gap.
        per_query = M.ndcg(yv, scores, sizes_v, k=k, ties="input", empty="skip", per_query=True)
        lightgbm_rule = peer_weighted_ndcg(per_query, weight_v[np.cumsum(sizes_v) - 1])
        assert lightgbm_rule == pytest.approx(lgb_ndcg, abs=1e-6)
        assert abs(ours_ndcg - lgb_ndcg) > 1e-3


def _xgb_data(seed, *, binary):
    X, y, sizes = make_ranking_data(30, seed=seed, min_size=2)
    Xv, yv, sizes_v = make_ranking_data(20, seed=seed + 100, min_size=1)
    if binary:  # XGBoost's map and pre accept only 0/1 labels
        y, yv = (y >= 2).astype(np.float64), (yv >= 2).astype(np.float64)
    return X, y, sizes, Xv, yv, sizes_v


@pytest.mark.parametrize("weighted", [False, True])
def test_matches_xgboost_ndcg_map_pre(weighted):
    xgb = pytest.importorskip("xgboost")
    for binary, metric_names in (
        (False, ["ndcg@1", "ndcg@3", "ndcg@5", "ndcg"]),
        (True, ["map@3", "map@5", "pre@5"]),
    ):
        X, y, sizes, Xv, yv, sizes_v = _xgb_data(seed=7, binary=binary)
        dtrain = xgb.DMatrix(X, y, group=sizes)
        dvalid = xgb.DMatrix(Xv, yv, group=sizes_v)
        weight_v = np.random.default_rng(8).uniform(0.5, 2.0, sizes_v.size) if weighted else None
        if weighted:
            dvalid.set_weight(weight_v)  # XGBoost ranking weights are per query
        history: dict = {}
        params = {"objective": "rank:ndcg", "eval_metric": metric_names, "max_depth": 2, "nthread": 1}
        bst = xgb.train(params, dtrain, 3, evals=[(dvalid, "v")], evals_result=history, verbose_eval=False)
        scores = bst.predict(dvalid, output_margin=True)
        assert np.unique(scores).size < scores.size
        for metric_name in metric_names:
            base, _, k = metric_name.partition("@")
            k = int(k) if k else None
            expected = history["v"][metric_name][-1]
            if base == "ndcg" and weighted:  # same rule as LightGBM for all-zero queries
                per_query = M.ndcg(yv, scores, sizes_v, k=k, ties="input", empty="skip", per_query=True)
                assert peer_weighted_ndcg(per_query, weight_v) == pytest.approx(expected, abs=1e-6)
                assert abs(M.ndcg(yv, scores, sizes_v, k=k, ties="input", weight=weight_v) - expected) > 1e-3
                continue
            # XGBoost scores a query without relevant documents 1 for ndcg and map, 0 for pre.
            fn, empty = {"ndcg": (M.ndcg, "one"), "map": (M.map, "one"), "pre": (M.precision, "zero")}[base]
            ours = fn(yv, scores, sizes_v, k=k, ties="input", empty=empty, weight=weight_v)
            assert ours == pytest.approx(expected, abs=1e-6), metric_name


def test_matches_sklearn_ndcg_score():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(9)
    n_queries, size = 12, 6
    y_true = rng.integers(0, 4, size=(n_queries, size)).astype(np.float64)
    y_true[0] = 0.0  # IDCG = 0: sklearn scores it 0
    tied = rng.integers(0, 3, size=(n_queries, size)).astype(np.float64)
    continuous = rng.normal(size=(n_queries, size))
    group = np.full(n_queries, size)
    conv = {"gain": "linear", "empty": "zero"}
    for k in (None, 1, 3, 10):
        expected = sklearn_metrics.ndcg_score(y_true, tied, k=k)
        assert M.ndcg(y_true.ravel(), tied.ravel(), group, k=k, ties="average", **conv) == pytest.approx(
            expected, abs=1e-9
        )
        # ignore_ties=True orders ties arbitrarily (a reversed argsort): compare on tie-free scores,
        # where every tie rule must agree.
        expected = sklearn_metrics.ndcg_score(y_true, continuous, k=k, ignore_ties=True)
        for ties in ("worst", "input", "average"):
            assert M.ndcg(y_true.ravel(), continuous.ravel(), group, k=k, ties=ties, **conv) == pytest.approx(
                expected, abs=1e-9
            )
    # The tie rule changes the value on tied scores, so the averaged match above is not vacuous.
    worst = M.ndcg(y_true.ravel(), tied.ravel(), group, ties="worst", **conv)
    assert worst < sklearn_metrics.ndcg_score(y_true, tied) - 1e-3


# ERRORS =======================================================================================

GOOD = {"labels": [1.0, 0.0, 2.0], "scores": [0.3, 0.2, 0.1], "group": [3]}


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: M.ndcg([1.0, 0.0], [0.3, 0.2, 0.1], [3]),
            ValueError,
            r"'labels' has 2 entries but 'scores' has 3",
        ),
        (lambda: M.ndcg(**{**GOOD, "group": [2]}), ValueError, r"sums to 2 documents but there are 3 rows"),
        (lambda: M.ndcg(**{**GOOD, "group": None}), ValueError, r"'group' is required"),
        (
            lambda: M.ndcg(**{**GOOD, "scores": [0.3, np.nan, 0.1]}),
            ValueError,
            r"NaN or infinite.*finite scores",
        ),
        (lambda: M.ndcg(**{**GOOD, "scores": [0.3, np.inf, 0.1]}), ValueError, r"NaN or infinite"),
        (lambda: M.ndcg(**{**GOOD, "labels": [1.0, -1.0, 0.0]}), ValueError, r"needs labels in \[0.0, "),
        (lambda: M.ndcg(**{**GOOD, "labels": [60.0, 0.0, 0.0]}), ValueError, r"gain='linear'"),
        (lambda: M.err(**GOOD), ValueError, r"probabilities in \[0, 1\].*max_grade=G"),
        (lambda: M.err(**GOOD, max_grade=1), ValueError, r"larger max_grade"),
        (lambda: M.pfound(**GOOD), ValueError, r"max_grade"),
        (lambda: M.ndcg(**GOOD, k=0), ValueError, r"'k' parameter of stochrank.metrics.ndcg must be an int"),
        (lambda: M.map(**GOOD, k=2.5), ValueError, r"'k' parameter"),
        (lambda: M.precision(**GOOD, k=None), ValueError, r"'k' parameter of stochrank.metrics.precision"),
        (lambda: M.ndcg(**GOOD, ties="random"), ValueError, r"'ties'.*'worst', 'input', 'average'"),
        (lambda: M.ndcg(**GOOD, gain="log"), ValueError, r"'gain'.*'exp', 'linear'"),
        (lambda: M.ndcg(**GOOD, discount="letor"), ValueError, r"'discount'.*'log', 'position'"),
        (lambda: M.ndcg(**GOOD, empty="drop"), ValueError, r"'empty'.*'one', 'zero', 'skip'"),
        (lambda: M.pfound(**GOOD, decay=1.5, max_grade=2), ValueError, r"'decay'"),
        (lambda: M.ndcg(**GOOD, weight=[-1.0]), ValueError, r"non-negative"),
        (
            lambda: M.ndcg(**{**GOOD, "group": [2, 1]}, weight=[1.0, 2.0, 1.0]),
            ValueError,
            r"varies within query 0",
        ),
        (lambda: M.ndcg(**GOOD, weight=[1.0, 2.0]), ValueError, r"one per row \(3\) or one per query \(1\)"),
        (
            lambda: M.err(**GOOD, max_grade=2, ties="average"),
            ValueError,
            r"ties='average' is not supported.*'worst'",
        ),
        (lambda: M.map(**GOOD, ties="average"), ValueError, r"ties='average' is not supported"),
        (lambda: M.mrr(**GOOD, ties="average"), ValueError, r"ties='average' is not supported"),
        (lambda: M.mrr(**GOOD, threshold=np.nan), ValueError, r"'threshold'"),
        (lambda: M.feval("roc"), ValueError, r"'metric' parameter of stochrank.metrics.feval"),
        (lambda: M.feval("ndcg", gains="exp"), TypeError, r"unknown convention\(s\) \['gains'\].*'gain'"),
        (lambda: M.feval("err", ties="average"), ValueError, r"ties='average' is not supported"),
        (lambda: M.feval("precision", k=None), ValueError, r"'k' parameter"),
        (lambda: M.precision(**GOOD, k=2, denominator="R"), ValueError, r"'denominator'.*'min', 'k'"),
        (lambda: M.map(**GOOD, denominator="k"), ValueError, r"'denominator'.*'min', 'relevant'"),
        (lambda: M.ndcg(**GOOD, ties="key_descending"), ValueError, r"needs tiebreak=<one key per document>"),
        (lambda: M.ndcg(**GOOD, tiebreak=[1, 2, 3]), ValueError, r"'tiebreak' key but ties='worst'"),
        (
            lambda: M.mrr(**GOOD, ties="key_ascending", tiebreak=[1, 2]),
            ValueError,
            r"'tiebreak' .* one key per document \(3\); got shape \(2,\)",
        ),
        (
            lambda: M.err(**GOOD, max_grade=2, ties="key_ascending", tiebreak=[1.0, np.nan, 0.0]),
            ValueError,
            "NaN",
        ),
        (
            lambda: M.map(**GOOD, ties="key_ascending", tiebreak=np.array(["a", 1, 2.0], dtype=object)),
            TypeError,
            r"'tiebreak' .* numbers or strings",
        ),
        (lambda: M.feval("ndcg", ties="key_descending"), ValueError, r"cannot take ties='key_descending'"),
        (lambda: M.feval("ndcg", tiebreak=[1]), TypeError, r"unknown convention\(s\) \['tiebreak'\]"),
    ],
)
def test_errors_name_the_fix(call, error, match):
    with pytest.raises(error, match=match):
        call()


# BOOSTER CALLABLES ============================================================================


def test_feval_return_forms_and_copies():
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    X, y, sizes = make_ranking_data(10, seed=13)
    # float32-exact weights: Dataset and DMatrix store weights as float32.
    weight = np.random.default_rng(14).uniform(0.5, 2.0, sizes.size).astype(np.float32).astype(np.float64)
    scores = np.random.default_rng(15).integers(0, 3, size=y.size).astype(np.float64)
    expected = M.ndcg(y, scores, sizes, k=3, ties="input", weight=weight)
    m = M.feval("ndcg", k=3, ties="input")
    assert m.name == "sr-ndcg@3" and M.feval("map", k=None).name == "sr-map"
    ds = lgb.Dataset(X, y, group=sizes, weight=np.repeat(weight, sizes)).construct()
    name, value, higher_better = m(scores, ds)
    assert (name, higher_better) == ("sr-ndcg@3", True) and value == pytest.approx(expected, rel=1e-12)
    dm = xgb.DMatrix(X, y, group=sizes, weight=weight)
    assert m(scores, dm) == ("sr-ndcg@3", pytest.approx(expected, rel=1e-12))
    for clone in (pickle.loads(pickle.dumps(m)), copy.deepcopy(m)):  # after use: the cache is not copied
        assert repr(clone) == repr(m) == "feval('ndcg', k=3, ties='input')"
        assert clone(scores, dm) == m(scores, dm)
    # The default conventions differ from ties='input' on these tied scores, so the check above bites.
    assert M.feval("ndcg", k=3)(scores, dm)[1] != pytest.approx(expected)


def test_feval_drives_lightgbm_train_early_stopping():
    lgb = pytest.importorskip("lightgbm")
    train, valid, Xv, yv, sizes_v, _ = _lgb_datasets(lgb, seed=17)
    m = M.feval("ndcg", k=5)
    history: dict = {}
    params = {
        "objective": "lambdarank",
        "metric": "None",
        "learning_rate": 0.3,
        "verbose": -1,
        "num_threads": 1,
    }
    booster = lgb.train(
        params,
        train,
        num_boost_round=200,
        valid_sets=[valid],
        feval=m,
        callbacks=[lgb.early_stopping(5, verbose=False), lgb.record_evaluation(history)],
    )
    curve = history["valid_0"]["sr-ndcg@5"]
    assert 1 <= booster.best_iteration < 200 and len(curve) == booster.best_iteration + 5
    assert curve[booster.best_iteration - 1] == max(curve)
    best_scores = booster.predict(Xv, num_iteration=booster.best_iteration, raw_score=True)
    assert curve[booster.best_iteration - 1] == pytest.approx(
        M.ndcg(yv, best_scores, sizes_v, k=5), rel=1e-12
    )


@pytest.mark.filterwarnings("ignore:The argument 'eval_set' is deprecated")  # LightGBM >= 4.7; 4.3 needs it
def test_feval_drives_lgbmranker_fit():
    lgb = pytest.importorskip("lightgbm")
    X, y, sizes = make_ranking_data(30, seed=19, min_size=2)
    Xv, yv, sizes_v = make_ranking_data(20, seed=119)
    ranker = lgb.LGBMRanker(n_estimators=200, learning_rate=0.3, metric="None", verbose=-1, n_jobs=1)
    ranker.fit(
        X,
        y,
        group=sizes,
        eval_set=[(Xv, yv)],
        eval_group=[sizes_v],
        eval_metric=M.feval("ndcg", k=5, gain="linear"),
        callbacks=[lgb.early_stopping(5, verbose=False)],
    )
    curve = ranker.evals_result_["valid_0"]["sr-ndcg@5"]
    assert 1 <= ranker.best_iteration_ < 200 and curve[ranker.best_iteration_ - 1] == max(curve)
    scores = ranker.predict(Xv, raw_score=True)  # predicts with the best iteration
    expected = M.ndcg(yv, scores, sizes_v, k=5, gain="linear")
    assert curve[ranker.best_iteration_ - 1] == pytest.approx(expected, rel=1e-12)


def test_feval_drives_xgboost_train_early_stopping():
    xgb = pytest.importorskip("xgboost")
    X, y, sizes, Xv, yv, sizes_v = _xgb_data(seed=21, binary=False)
    dtrain, dvalid = xgb.DMatrix(X, y, group=sizes), xgb.DMatrix(Xv, yv, group=sizes_v)
    history: dict = {}
    bst = xgb.train(
        {"objective": "rank:ndcg", "eta": 0.3, "nthread": 1, "disable_default_eval_metric": 1},
        dtrain,
        num_boost_round=200,
        evals=[(dvalid, "v")],
        custom_metric=M.feval("ndcg", k=5),
        maximize=True,
        early_stopping_rounds=5,
        evals_result=history,
        verbose_eval=False,
    )
    curve = history["v"]["sr-ndcg@5"]
    assert list(history["v"]) == ["sr-ndcg@5"]
    assert 0 <= bst.best_iteration < 199 and len(curve) == bst.best_iteration + 6
    assert curve[bst.best_iteration] == max(curve)
    scores = bst.predict(dvalid, output_margin=True, iteration_range=(0, bst.best_iteration + 1))
    # XGBoost logs custom metric values through a 6-decimal string.
    assert curve[bst.best_iteration] == pytest.approx(M.ndcg(yv, scores, sizes_v, k=5), abs=1e-6)
