"""Peer cross-checks: every convention a peer implements, reproduced to 1e-9 by stochrank.metrics.

Peers: trec_eval (through ``pytrec_eval``, the ``pytrec-eval-terrier`` wheel), ranx, scikit-learn's
``ndcg_score``, LightGBM's and XGBoost's built-in metrics (a booster of 0 trees evaluating given scores:
LightGBM ``init_score``, XGBoost ``base_margin``) and CatBoost's ``eval_metric``. Two kinds of data:

* random rankings with heavy ties (integer scores 0..3), graded labels 0..3, all-zero queries and one-document
  queries, docnos drawn at random;
* real MQ2008 Fold1 test scores: a feature column (many ties: QueryLevelNorm features are often 0 or 1) and
  the predictions of a small LightGBM lambdarank model trained on Fold1 train (float32-exact, for XGBoost).

Per-query values are compared where the peer reports them (trec_eval, ranx, scikit-learn per query), means
where it reports only the mean (LightGBM, XGBoost, CatBoost). Each test names the settings that make the two
agree; that the settings matter is shown by a rule that does not match (the checks are not vacuous).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cache

import numpy as np
import pytest

from stochrank import metrics as M

TOL = 1e-9


@dataclass(frozen=True)
class Ranking:
    """Queries in row order: labels, scores, group sizes and a document id per row."""

    name: str
    labels: np.ndarray
    scores: np.ndarray
    group: np.ndarray
    docno: np.ndarray

    @property
    def offsets(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.group)))

    def queries(self):
        bounds = self.offsets
        for q in range(self.group.size):
            yield q, slice(bounds[q], bounds[q + 1])

    def per_query(self, fn, **conventions) -> np.ndarray:
        return fn(self.labels, self.scores, self.group, per_query=True, **conventions)


def random_ranking(seed: int = 0, n_queries: int = 80) -> Ranking:
    rng = np.random.default_rng(seed)
    group = rng.integers(1, 16, n_queries)
    n = int(group.sum())
    labels = rng.choice([0.0, 0.0, 1.0, 2.0, 3.0], size=n)
    offsets = np.concatenate(([0], np.cumsum(group)))
    for q in range(0, n_queries, 9):  # all-zero queries: the empty-query rules matter
        labels[offsets[q] : offsets[q + 1]] = 0.0
    scores = rng.integers(0, 4, n).astype(np.float64)  # heavy ties: the tie rules matter
    docno = np.array([f"doc{d:07d}" for d in rng.permutation(10**6)[:n]])
    return Ranking("random, tied", labels, scores, group, docno)


@cache
def mq2008_rankings() -> tuple[Ranking, Ranking]:
    lgb = pytest.importorskip("lightgbm")
    from stochrank.datasets import load_mq2008

    train, test = load_mq2008(1, "train"), load_mq2008(1, "test")
    params = {"objective": "lambdarank", "num_leaves": 15, "learning_rate": 0.1, "verbose": -1, "seed": 0}
    booster = lgb.train({**params, "num_threads": 1}, lgb.Dataset(train.X, train.y, group=train.group), 20)
    # float32-exact scores: XGBoost stores base_margin as float32, the others read float64.
    model = booster.predict(test.X).astype(np.float32).astype(np.float64)
    docno = np.array(
        [f"GX{q:04d}-{i:03d}" for q, i in zip(test.qid, np.arange(test.y.size) % 997, strict=True)]
    )
    feature = test.X[:, 24].copy()  # a QueryLevelNorm feature column: ties within most queries
    return (
        Ranking("MQ2008 model", test.y, model, test.group, docno),
        Ranking("MQ2008 feature 25", test.y, feature, test.group, docno),
    )


def rankings() -> list[Ranking]:
    return [random_ranking(), *mq2008_rankings()]


RANKING_IDS = ["random", "mq2008-model", "mq2008-feature"]


def assert_agree(ours, theirs, what: str) -> float:
    gap = float(np.max(np.abs(np.asarray(ours, dtype=np.float64) - np.asarray(theirs, dtype=np.float64))))
    assert gap <= TOL, f"{what}: max |stochrank - peer| = {gap:.3g}"
    return gap


def has_ties(r: Ranking) -> bool:
    return any(np.unique(r.scores[s]).size < s.stop - s.start for _, s in r.queries())


# ----------------------------------------------------------------------------------------- trec_eval
TREC = {  # trec_eval measure -> (stochrank metric, conventions); relevance_level 1 = label > 0.5
    "ndcg": (M.ndcg, {"gain": "linear", "empty": "zero"}),
    "ndcg_cut_5": (M.ndcg, {"k": 5, "gain": "linear", "empty": "zero"}),
    "ndcg_cut_10": (M.ndcg, {"k": 10, "gain": "linear", "empty": "zero"}),
    "P_5": (M.precision, {"k": 5, "threshold": 0.5, "denominator": "k", "empty": "zero"}),
    "P_10": (M.precision, {"k": 10, "threshold": 0.5, "denominator": "k", "empty": "zero"}),
    "map": (M.map, {"threshold": 0.5, "denominator": "relevant", "empty": "zero"}),
    "map_cut_5": (M.map, {"k": 5, "threshold": 0.5, "denominator": "relevant", "empty": "zero"}),
    "map_cut_10": (M.map, {"k": 10, "threshold": 0.5, "denominator": "relevant", "empty": "zero"}),
    "recip_rank": (M.mrr, {"threshold": 0.5, "empty": "zero"}),
}


@pytest.mark.parametrize("index", range(3), ids=RANKING_IDS)
def test_trec_eval_semantics(index):
    """trec_eval: linear gain, P@k over k, AP over R, ties by docno descending, empty queries score 0."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    r = rankings()[index]
    qrels = {
        f"q{q}": {str(r.docno[i]): int(r.labels[i]) for i in range(s.start, s.stop)} for q, s in r.queries()
    }
    run = {
        f"q{q}": {str(r.docno[i]): float(r.scores[i]) for i in range(s.start, s.stop)} for q, s in r.queries()
    }
    result = pytrec_eval.RelevanceEvaluator(qrels, set(TREC)).evaluate(run)
    for measure, (fn, conventions) in TREC.items():
        theirs = [result[f"q{q}"][measure] for q, _ in r.queries()]
        ours = r.per_query(fn, ties="key_descending", tiebreak=r.docno, **conventions)
        assert_agree(ours, theirs, f"{r.name} trec_eval {measure}")
    if has_ties(r):  # the docno rule is what makes them agree
        ndcg_fn, ndcg_conv = TREC["ndcg"]
        asc = r.per_query(ndcg_fn, ties="key_ascending", tiebreak=r.docno, **ndcg_conv)
        assert np.max(np.abs(asc - [result[f"q{q}"]["ndcg"] for q, _ in r.queries()])) > 1e-3
        p_fn, p_conv = TREC["P_10"]
        by_min = r.per_query(
            p_fn, ties="key_descending", tiebreak=r.docno, **{**p_conv, "denominator": "min"}
        )
        assert np.max(np.abs(by_min - [result[f"q{q}"]["P_10"] for q, _ in r.queries()])) > 1e-3


# ---------------------------------------------------------------------------------------------- ranx
RANX = {
    "ndcg": (M.ndcg, {"gain": "linear", "empty": "zero"}),
    "ndcg@5": (M.ndcg, {"k": 5, "gain": "linear", "empty": "zero"}),
    "ndcg_burges@5": (M.ndcg, {"k": 5, "gain": "exp", "empty": "zero"}),
    "dcg@5": (M.dcg, {"k": 5, "gain": "linear"}),
    "precision@10": (M.precision, {"k": 10, "denominator": "k", "empty": "zero"}),
    "map": (M.map, {"denominator": "relevant", "empty": "zero"}),
    "map@5": (M.map, {"k": 5, "denominator": "relevant", "empty": "zero"}),
    "mrr": (M.mrr, {"empty": "zero"}),
    "mrr@3": (M.mrr, {"k": 3, "empty": "zero"}),
}


def without_ties(r: Ranking) -> Ranking:
    """The same ranking with every tie broken by a distinct shift far below the scores' gaps."""
    shift = np.random.default_rng(1).permutation(r.scores.size) * (1e-9 / r.scores.size)
    return Ranking(f"{r.name}, ties broken", r.labels, r.scores + shift, r.group, r.docno)


@pytest.mark.slow  # ranx compiles its Numba kernels on import (~15 s)
@pytest.mark.parametrize("index", range(3), ids=RANKING_IDS)
def test_ranx(index):
    """ranx 0.3: linear gain (ndcg) or exponential (ndcg_burges), P@k over k, AP@k over R, 0 for empty
    queries. Its order among equal scores is that of an unstable sort (no documented rule), so the
    rankings are compared with their ties broken."""
    ranx = pytest.importorskip("ranx")
    r = without_ties(rankings()[index])
    assert not has_ties(r)
    qrels = ranx.Qrels(
        {f"q{q}": {str(r.docno[i]): int(r.labels[i]) for i in range(s.start, s.stop)} for q, s in r.queries()}
    )
    run = ranx.Run(
        {
            f"q{q}": {str(r.docno[i]): float(r.scores[i]) for i in range(s.start, s.stop)}
            for q, s in r.queries()
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ranx's Numba kernels warn about reflected lists
        ranx.evaluate(qrels, run, list(RANX), return_mean=False)
    for measure, (fn, conventions) in RANX.items():
        theirs = [run.scores[measure][f"q{q}"] for q, _ in r.queries()]
        assert_agree(r.per_query(fn, **conventions), theirs, f"{r.name} ranx {measure}")
    minimum = r.per_query(M.precision, k=10, empty="zero")
    assert np.max(np.abs(minimum - [run.scores["precision@10"][f"q{q}"] for q, _ in r.queries()])) > 1e-3


# -------------------------------------------------------------------------------------- scikit-learn
@pytest.mark.parametrize("index", range(3), ids=RANKING_IDS)
def test_sklearn_ndcg_score(index):
    """sklearn.metrics.ndcg_score: linear gain, tied documents averaged, an all-zero query scores 0."""
    ndcg_score = pytest.importorskip("sklearn.metrics").ndcg_score
    r = rankings()[index]
    keep = r.group > 1  # ndcg_score refuses one-document queries
    for k in (None, 1, 5, 10):
        theirs = [ndcg_score([r.labels[s]], [r.scores[s]], k=k) for q, s in r.queries() if keep[q]]
        ours = r.per_query(M.ndcg, k=k, ties="average", gain="linear", empty="zero")[keep]
        assert_agree(ours, theirs, f"{r.name} sklearn ndcg_score k={k}")


# ------------------------------------------------------------------------------------------ LightGBM
@pytest.mark.parametrize("index", range(3), ids=RANKING_IDS)
def test_lightgbm_builtin_ndcg_and_map(index):
    """LightGBM ndcg@k / map@k: exponential gain, row order among ties, an all-zero query scores 1."""
    lgb = pytest.importorskip("lightgbm")
    r = rankings()[index]
    cutoffs = [1, 3, 5, 10, 1000]
    dataset = lgb.Dataset(np.zeros((r.labels.size, 1)), r.labels, group=r.group, init_score=r.scores)
    booster = lgb.Booster(
        {"objective": "lambdarank", "metric": ["ndcg", "map"], "eval_at": cutoffs, "verbose": -1}, dataset
    )
    logged = {result[1]: result[2] for result in booster.eval_train()}  # 0 trees: the init scores
    for k in cutoffs:
        assert_agree(M.ndcg(r.labels, r.scores, r.group, k=k, ties="input"), logged[f"ndcg@{k}"], f"ndcg@{k}")
        assert_agree(M.map(r.labels, r.scores, r.group, k=k, ties="input"), logged[f"map@{k}"], f"map@{k}")
    if has_ties(r):
        assert abs(M.ndcg(r.labels, r.scores, r.group, k=5) - logged["ndcg@5"]) > 1e-4


# ------------------------------------------------------------------------------------------- XGBoost
@pytest.mark.parametrize("index", range(3), ids=RANKING_IDS)
def test_xgboost_builtin_ndcg_map_pre(index):
    """XGBoost ndcg@k, ndcg@k- (empty 0), map@k, pre@k (min(k, n)); bare ndcg is ndcg@32."""
    xgb = pytest.importorskip("xgboost")
    r = rankings()[index]
    binary = (r.labels > 0).astype(np.float64)  # XGBoost's map and pre take 0/1 labels only

    def evaluate(labels, metrics):
        dm = xgb.DMatrix(np.zeros((labels.size, 1)), labels, group=r.group, base_margin=r.scores)
        text = xgb.train({"objective": "rank:ndcg", "eval_metric": metrics}, dm, 0).eval(dm)
        return {
            item.split(":")[0].removeprefix("eval-"): float(item.split(":")[1]) for item in text.split()[1:]
        }

    graded = evaluate(r.labels, ["ndcg@1", "ndcg@5", "ndcg@10", "ndcg@5-", "ndcg"])
    for k in (1, 5, 10):
        assert_agree(M.ndcg(r.labels, r.scores, r.group, k=k, ties="input"), graded[f"ndcg@{k}"], f"ndcg@{k}")
    assert_agree(
        M.ndcg(r.labels, r.scores, r.group, k=5, ties="input", empty="zero"), graded["ndcg@5-"], "ndcg@5-"
    )
    assert_agree(
        M.ndcg(r.labels, r.scores, r.group, k=32, ties="input"), graded["ndcg"], "bare ndcg = ndcg@32"
    )
    logged = evaluate(binary, ["map@5", "map@10", "pre@5", "pre@10"])
    for k in (5, 10):
        assert_agree(M.map(binary, r.scores, r.group, k=k, ties="input"), logged[f"map@{k}"], f"map@{k}")
        assert_agree(
            M.precision(binary, r.scores, r.group, k=k, ties="input"), logged[f"pre@{k}"], f"pre@{k}"
        )


# ------------------------------------------------------------------------------------------ CatBoost
CATBOOST = [  # CatBoost eval metric -> (stochrank metric, conventions, labels as probabilities)
    ("NDCG:top=5;type=Base", M.ndcg, {"k": 5, "gain": "linear"}, False),
    ("NDCG:type=Exp", M.ndcg, {"gain": "exp"}, False),
    (
        "NDCG:top=10;type=Base;denominator=Position",
        M.ndcg,
        {"k": 10, "gain": "linear", "discount": "position"},
        False,
    ),
    ("DCG:top=5;type=Exp", M.dcg, {"k": 5}, False),
    ("ERR:top=10", M.err, {"k": 10}, True),
    ("PFound:top=10", M.pfound, {"k": 10}, True),
    ("MRR", M.mrr, {"threshold": 0.5}, False),
    ("MAP:top=5", M.map, {"k": 5, "threshold": 0.5, "empty": "zero"}, False),
    ("PrecisionAt:top=5", M.precision, {"k": 5, "threshold": 0.5}, False),
]


@pytest.mark.parametrize("index", range(3), ids=RANKING_IDS)
def test_catboost_eval_metric(index):
    """CatBoost eval metrics: pessimistic ties (lower label first), NDCG of an all-zero query 1."""
    eval_metric = pytest.importorskip("catboost.utils").eval_metric
    r = rankings()[index]
    group_id = np.repeat(np.arange(r.group.size), r.group)
    for name, fn, conventions, probabilities in CATBOOST:
        labels = r.labels / 4.0 if probabilities else r.labels  # float32-exact: CatBoost stores float32
        theirs = eval_metric(labels, r.scores, name, group_id=group_id)[0]
        assert_agree(
            fn(labels, r.scores, r.group, ties="worst", **conventions), theirs, f"{r.name} CatBoost {name}"
        )


@pytest.mark.parametrize("index", range(3), ids=RANKING_IDS)
def test_catboost_query_auc(index):
    """CatBoost's ``QueryAUC:type=Classic`` is ``auc(ties='average', empty='zero')``, not the defaults."""
    eval_metric = pytest.importorskip("catboost.utils").eval_metric
    r = rankings()[index]
    group_id = np.repeat(np.arange(r.group.size), r.group)
    binary = (r.labels > 0.5).astype(np.float64)
    theirs = eval_metric(binary, r.scores, "QueryAUC:type=Classic", group_id=group_id)[0]
    ours = M.auc(binary, r.scores, r.group, ties="average", empty="zero")
    assert_agree(ours, theirs, f"{r.name} CatBoost QueryAUC:type=Classic")
    if has_ties(r):  # the default tie rule is not CatBoost's
        assert abs(M.auc(binary, r.scores, r.group, empty="zero") - theirs) > 1e-6
