"""Tuning, selection, early stopping, seeds and folds; the resumable run cache.

Protocol (identical for every method):

1. **Configurations.** For each method, ``budget`` configurations are drawn at random: the booster's
   parameters from :data:`~stochrank.bench.methods.BOOSTER_SPACES` with a random stream that depends only
   on (booster, configuration index), so every method on one booster sees *the same* trees, learning rates
   and regularisation; the method's own parameters from a stream of (method, configuration index). The
   same configurations are used on every fold.
2. **Early stopping.** Every fit trains at most ``max_rounds`` trees and stops after ``patience`` rounds
   without improving validation NDCG@k, keeping the best iteration. LightGBM and XGBoost early-stop on
   :func:`stochrank.metrics.feval` (the report's NDCG@k convention); CatBoost on its own
   ``NDCG:top=k;type=Exp`` (exp gain, worst-case ties, an empty query counts 1), which is an increasing
   affine function of the report's NDCG@k on a fixed validation set and so stops at the same iteration;
   its curve is converted to the report's convention (checked on every fit against
   :func:`stochrank.metrics.ndcg` of the kept model's validation scores).
3. **Selection.** On each fold, the configuration with the best validation NDCG@k at the first seed is
   selected (ties: the earlier configuration).
4. **Seeds.** The selected configuration is trained again with every further seed (the booster's seed and
   the stochastic objective's seed); test metrics are reported for every (fold, seed).
5. **Datasets without a validation split** (Istella) hold out 20% of the training queries
   (:func:`stochrank.datasets.split_queries`, seed 0) as validation.

Every finished fit — (dataset, method, fold, configuration, seed) plus the protocol settings that change a
fit and, for a dataset read from a data root, the resolved root and a fingerprint of the fold's labels and
queries — is stored under ``<out>/runs`` as JSON (validation curve, best iteration, seconds and the
threads/jobs it ran with, per-query test metrics) and ``.npz`` (test scores); a rerun loads it instead of
training, unless its per-query metrics do not match the test split (then it is trained again).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import time
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_choice, check_int, check_optional_int
from ..conventions import offsets_from_sizes
from .methods import BOOSTER_SPACES, METHODS, Method

__all__ = [
    "EVAL_METRICS",
    "NDCG_CUTOFFS",
    "FoldData",
    "Protocol",
    "Run",
    "RunCache",
    "data_fingerprint",
    "empty_queries",
    "evaluate",
    "fit_run",
    "load_fold",
    "metric_names",
    "run_protocol",
    "sample_configs",
]

CACHE_VERSION = 1  # bump when a change makes cached fits incomparable
VALI_FRACTION = 0.2


@dataclass(frozen=True)
class Protocol:
    """Everything that defines a comparison (see the module docstring).

    ``threads`` and ``jobs`` only change speed and are not part of a fit's identity. Every field is
    validated on construction (``ValueError`` naming the field): folds of the dataset and seeds >= 0, each
    once; budget, k, max_rounds, patience, threads (0 would mean "all cores" to LightGBM) and jobs >= 1;
    max_queries >= 1 or None.
    """

    dataset: str = "mq2008"
    folds: tuple[int, ...] = (1, 2, 3, 4, 5)
    seeds: tuple[int, ...] = (0, 1, 2)
    budget: int = 8
    k: int = 5
    max_rounds: int = 1000
    patience: int = 100
    normalize: str | None = None
    max_queries: int | None = None  # keep the first N queries of every split (smoke runs)
    root: str | None = None
    threads: int = 1
    jobs: int = 1

    def __post_init__(self) -> None:
        from stochrank.datasets import DATASETS

        owner = "Protocol"
        check_choice(self.dataset, "dataset", owner, tuple(DATASETS))
        spec = DATASETS[self.dataset]
        for name, low, allowed in (("folds", 1, spec.folds), ("seeds", 0, None)):
            values = tuple(getattr(self, name))
            if not values:
                raise ValueError(
                    f"The '{name}' parameter of {owner} needs at least one value; got {values!r}."
                )
            for value in values:
                check_int(value, name, owner, low=low)
            if allowed is not None and not set(values) <= set(allowed):
                raise ValueError(
                    f"The '{name}' parameter of {owner} must hold folds of {self.dataset} "
                    f"({', '.join(map(str, allowed))}); got {values!r}."
                )
            if len(set(values)) != len(values):
                raise ValueError(
                    f"The '{name}' parameter of {owner} lists a value twice ({values!r}); give each once."
                )
            object.__setattr__(self, name, tuple(int(v) for v in values))
        for name in ("budget", "k", "max_rounds", "patience", "threads", "jobs"):
            check_int(getattr(self, name), name, owner, low=1)
        check_optional_int(self.max_queries, "max_queries", owner, low=1, none_means="every query")
        if self.normalize is not None:
            check_choice(self.normalize, "normalize", owner, ("query",))

    def identity(self, fold: int) -> dict[str, Any]:
        """The settings a cached fit on ``fold`` must share to be reused.

        For a dataset read from a data root, also the resolved root and :func:`data_fingerprint` of the
        fold, so that fits on other data are never reused. The bundled MQ2008 needs neither: its files
        change only with stochrank's code.
        """
        from stochrank.datasets import DATASETS, data_root

        settings = {
            "version": CACHE_VERSION, "dataset": self.dataset, "k": self.k, "max_rounds": self.max_rounds,
            "patience": self.patience, "normalize": self.normalize, "max_queries": self.max_queries,
        }  # fmt: skip
        if DATASETS[self.dataset].bundled is None:
            settings["data_root"] = str(data_root(self.root).resolve())
            settings["data"] = data_fingerprint(
                self.dataset, fold, self.root, self.normalize, self.max_queries
            )
        return settings


# -------------------------------------------------------------------------------------------- data
@dataclass(frozen=True)
class FoldData:
    """Train, validation and test splits of one fold, and the label ceiling for ERR."""

    train: Any
    vali: Any
    test: Any
    max_grade: float


def _first_queries(split: Any, n: int | None) -> Any:
    if n is None or n >= split.n_queries:
        return split
    from stochrank.datasets import RankingSplit

    rows = int(split.group[:n].sum())
    return RankingSplit(split.X[:rows], split.y[:rows], split.qid[:rows], split.group[:n])


def empty_queries(split: Any) -> np.ndarray:
    """Per query of ``split``: True when it has no relevant document (label > 0)."""
    offsets = offsets_from_sizes(split.group, split.y.size)
    return np.add.reduceat(split.y > 0, offsets[:-1]) == 0


@functools.cache
def load_fold(
    dataset: str, fold: int, root: str | None, normalize: str | None, max_queries: int | None
) -> FoldData:
    """Load (train, vali, test) of one fold once per process (validation held out if not published)."""
    from stochrank.datasets import DATASETS, load, split_queries

    spec = DATASETS[dataset]

    def get(split: str) -> Any:
        return load(dataset, fold, split, root=root, normalize=normalize)

    train, test = get("train"), get("test")
    if "vali" in spec.splits:
        vali = get("vali")
    else:
        train, vali = split_queries(train, VALI_FRACTION, seed=0)
    train, vali, test = (_first_queries(s, max_queries) for s in (train, vali, test))
    return FoldData(train, vali, test, float(spec.labels[1]))


@functools.cache
def data_fingerprint(
    dataset: str, fold: int, root: str | None, normalize: str | None, max_queries: int | None
) -> str:
    """SHA-256 of the labels, query sizes and feature-matrix shape of a fold's train, validation and test
    splits (as :func:`load_fold` returns them): cheap, and different for another copy of the data."""
    data = load_fold(dataset, fold, root, normalize, max_queries)
    digest = hashlib.sha256()
    for split in (data.train, data.vali, data.test):
        digest.update(repr(split.X.shape).encode())
        digest.update(np.ascontiguousarray(split.y, dtype=np.float64).tobytes())
        digest.update(np.ascontiguousarray(split.group, dtype=np.int64).tobytes())
    return digest.hexdigest()


# ------------------------------------------------------------------------------------ metrics
NDCG_CUTOFFS: tuple[int, ...] = (1, 3, 5, 10)
EVAL_METRICS: tuple[str, ...] = (*(f"NDCG@{c}" for c in NDCG_CUTOFFS), "ERR@10", "MRR")


def _cutoffs(k: int) -> list[int]:
    return sorted({*NDCG_CUTOFFS, k})


def metric_names(k: int) -> tuple[str, ...]:
    """The test metrics of a protocol optimising NDCG@k: :data:`EVAL_METRICS`, plus NDCG@k (in cutoff
    order) when k is not one of :data:`NDCG_CUTOFFS`."""
    return (*(f"NDCG@{c}" for c in _cutoffs(k)), "ERR@10", "MRR")


def evaluate(
    y: np.ndarray, scores: np.ndarray, group: np.ndarray, max_grade: float, k: int = 5
) -> dict[str, np.ndarray]:
    """Per-query test metrics :func:`metric_names` ``(k)`` in the report's conventions (NaN for a query
    that is skipped).

    Exp gain 2^r - 1, discount 1/log2(p + 2), worst-case ties (a tied relevant document is ranked below
    the tied irrelevant ones), queries without a relevant document skipped; ERR@10 with stop probability
    (2^r - 1) / 2^max_grade; MRR with relevance = label > 0.
    """
    from stochrank import metrics

    conv = {"ties": "worst", "empty": "skip", "per_query": True}
    out = {
        f"NDCG@{c}": metrics.ndcg(y, scores, group, k=c, gain="exp", discount="log", **conv)
        for c in _cutoffs(k)
    }
    out["ERR@10"] = metrics.err(y, scores, group, k=10, max_grade=max_grade, **conv)
    out["MRR"] = metrics.mrr(y, scores, group, threshold=0.0, **conv)
    return {name: np.asarray(values, dtype=np.float64) for name, values in out.items()}


def vali_ndcg(split: Any, scores: np.ndarray, k: int) -> float:
    """Validation NDCG@k in the report's convention (the selection criterion)."""
    from stochrank import metrics

    return float(metrics.ndcg(split.y, scores, split.group, k=k, gain="exp", ties="worst", empty="skip"))


# -------------------------------------------------------------------------------- configurations
def _stream(*parts: object) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(str(p).encode()) for p in parts])


def sample_configs(method: Method, budget: int) -> list[dict[str, dict[str, Any]]]:
    """``budget`` configurations ``{"booster": {...}, "own": {...}}`` (see the module docstring)."""
    configs = []
    for i in range(budget):
        booster_rng, own_rng = _stream("booster", method.booster, i), _stream("method", method.name, i)
        booster = {name: dist.sample(booster_rng) for name, dist in BOOSTER_SPACES[method.booster].items()}
        own = {name: dist.sample(own_rng) for name, dist in method.space.items()}
        configs.append({"booster": booster, "own": own})
    return configs


# ------------------------------------------------------------------------------------ trainers
@dataclass
class Fit:
    """What a trainer returns: the validation curve (report convention), trees kept, test scores."""

    curve: np.ndarray
    best_iteration: int  # number of trees kept (1-based)
    vali_scores: np.ndarray
    test_scores: np.ndarray


def _set_numba_threads(threads: int) -> None:
    import numba

    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


def _train_lightgbm(recipe: Any, booster: dict[str, Any], data: FoldData, seed: int, p: Protocol) -> Fit:
    import lightgbm as lgb

    from stochrank.metrics import feval

    params = {
        **booster,
        **recipe.params,
        "metric": "None",
        "verbose": -1,
        "num_threads": p.threads,
        "seed": seed,
    }
    if recipe.objective is not None:
        params["objective"] = recipe.objective
    train = lgb.Dataset(data.train.X, data.train.y, group=data.train.group)
    vali = lgb.Dataset(data.vali.X, data.vali.y, group=data.vali.group, reference=train)
    history: dict[str, Any] = {}
    model = lgb.train(
        params, train, p.max_rounds, valid_sets=[vali], valid_names=["vali"],
        feval=feval("ndcg", k=p.k, gain="exp", ties="worst", empty="skip"),
        callbacks=[lgb.early_stopping(p.patience, verbose=False), lgb.record_evaluation(history)],
    )  # fmt: skip
    best = model.best_iteration
    return Fit(
        np.asarray(history["vali"][f"ndcg@{p.k}"], dtype=np.float64), best,
        model.predict(data.vali.X, num_iteration=best), model.predict(data.test.X, num_iteration=best),
    )  # fmt: skip


def _train_xgboost(recipe: Any, booster: dict[str, Any], data: FoldData, seed: int, p: Protocol) -> Fit:
    import xgboost as xgb

    from stochrank.metrics import feval

    params = {**booster, **recipe.params, "tree_method": "hist", "nthread": p.threads, "seed": seed,
              "disable_default_eval_metric": 1}  # fmt: skip
    if recipe.objective is not None:
        params.update(objective="rank:ndcg", base_score=0.0)  # gradients come from obj=; no intercept fit

    def dmatrix(split: Any) -> xgb.DMatrix:
        return xgb.DMatrix(split.X, split.y, group=split.group, nthread=p.threads)

    history: dict[str, Any] = {}
    model = xgb.train(
        params, dmatrix(data.train), p.max_rounds, evals=[(dmatrix(data.vali), "vali")], obj=recipe.objective,
        custom_metric=feval("ndcg", k=p.k, gain="exp", ties="worst", empty="skip"), maximize=True,
        early_stopping_rounds=p.patience, evals_result=history, verbose_eval=False,
    )  # fmt: skip
    best = model.best_iteration + 1

    def predict(split: Any) -> np.ndarray:
        return model.predict(
            xgb.DMatrix(split.X, nthread=p.threads), iteration_range=(0, best), output_margin=True
        )

    return Fit(np.asarray(history["vali"][f"ndcg@{p.k}"], dtype=np.float64), best,
               predict(data.vali), predict(data.test))  # fmt: skip


def _train_catboost(recipe: Any, booster: dict[str, Any], data: FoldData, seed: int, p: Protocol) -> Fit:
    import catboost as cb

    metric = f"NDCG:top={p.k};type=Exp"
    common = {**booster, **recipe.params, "iterations": p.max_rounds, "eval_metric": metric, "random_seed": seed,
              "thread_count": p.threads, "verbose": False, "allow_writing_files": False}  # fmt: skip
    if recipe.estimator is None:  # CatBoost's own ranker with a built-in loss
        model = cb.CatBoostRanker(**common, od_type="Iter", od_wait=p.patience, use_best_model=True)

        def pool(split: Any) -> cb.Pool:
            return cb.Pool(split.X, split.y, group_id=split.query_index)

        model.fit(pool(data.train), eval_set=pool(data.vali))
        history, best = model.get_evals_result()["validation"][metric], model.get_best_iteration() + 1
    else:  # stochrank.catboost.CatBoostRanker (native StochasticRank or stochrank gradients)
        from stochrank.catboost import CatBoostDeviationWarning

        model = recipe.estimator(**common)
        with warnings.catch_warnings():
            # The native engine is CatBoost's reference implementation, documented deviations included.
            warnings.simplefilter("ignore", CatBoostDeviationWarning)
            model.fit(data.train.X, data.train.y, group=data.train.group, eval_set=(data.vali.X, data.vali.y),
                      eval_group=data.vali.group, early_stopping_rounds=p.patience)  # fmt: skip
        history, best = model.evals_result_["validation"][metric], model.best_iteration_ + 1
    # CatBoost counts a query without relevant documents as NDCG 1; the report skips it.
    e = float(np.mean(empty_queries(data.vali)))
    curve = (np.asarray(history, dtype=np.float64) - e) / (1.0 - e)
    return Fit(curve, best, np.asarray(model.predict(data.vali.X)), np.asarray(model.predict(data.test.X)))


TRAINERS: dict[str, Callable[..., Fit]] = {
    "lightgbm": _train_lightgbm,
    "xgboost": _train_xgboost,
    "catboost": _train_catboost,
}


# ------------------------------------------------------------------------------------------ runs
@dataclass
class Run:
    """One finished fit: (method, fold, configuration, seed) and what it produced."""

    method: str
    fold: int
    seed: int
    config_index: int
    config: dict[str, dict[str, Any]]
    vali: float  # validation NDCG@k of the kept model (report convention)
    best_iteration: int
    rounds: int  # trees trained before stopping
    seconds: float  # wall time of the fit in the run that trained it, with ``threads`` and ``jobs`` below
    curve: list[float]
    test_metrics: dict[str, list[float]]  # per query, NaN for skipped queries
    test_scores: np.ndarray | None = field(default=None, repr=False)
    threads: int | None = None  # threads per fit and fits at once when it was trained (None: not recorded)
    jobs: int | None = None

    def metric_means(self) -> dict[str, float]:
        """Test metrics averaged over the queries that count."""
        return {name: float(np.nanmean(values)) for name, values in self.test_metrics.items()}


def _key(protocol: Protocol, method: str, fold: int, config: dict[str, Any], seed: int) -> str:
    text = json.dumps(
        {**protocol.identity(fold), "method": method, "fold": fold, "seed": seed, "config": config},
        sort_keys=True, default=float,
    )  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class RunCache:
    """Finished fits on disk: ``<root>/<method>/fold<f>/seed<s>-c<i>-<key>.json`` (+ ``.npz`` scores)."""

    def __init__(self, root: str | os.PathLike[str], protocol: Protocol) -> None:
        self.root = Path(root)
        self.protocol = protocol

    def path(self, method: str, fold: int, config_index: int, config: dict[str, Any], seed: int) -> Path:
        key = _key(self.protocol, method, fold, config, seed)
        return self.root / method / f"fold{fold}" / f"seed{seed}-c{config_index}-{key}.json"

    def load(self, path: Path, fold: int) -> Run | None:
        """The fit stored at ``path`` (on ``fold``), or None if there is none or it does not fit the fold's
        test split: other metrics, or per-query metrics / scores of another length (warned, retrained)."""
        if not path.is_file() or not path.with_suffix(".npz").is_file():
            return None
        record = json.loads(path.read_text())
        p = self.protocol
        test = load_fold(p.dataset, fold, p.root, p.normalize, p.max_queries).test
        with np.load(path.with_suffix(".npz")) as npz:
            record["test_scores"] = npz["test_scores"]
        names = tuple(record["test_metrics"])
        lengths = {len(values) for values in record["test_metrics"].values()}
        problem = (
            f"its metrics {names} are not {metric_names(p.k)}" if names != metric_names(p.k)
            else f"it has per-query metrics of {sorted(lengths)} queries, the test split {test.n_queries}"
            if lengths != {test.n_queries}
            else f"it has {record['test_scores'].size} test scores, the test split {test.y.size} documents"
            if record["test_scores"].shape != test.y.shape
            else None
        )  # fmt: skip
        if problem is not None:
            warnings.warn(f"Ignoring the cached fit {path}: {problem}; it is trained again.", RuntimeWarning,
                          stacklevel=2)  # fmt: skip
            return None
        record["test_metrics"] = {
            name: [math.nan if v is None else v for v in values]
            for name, values in record["test_metrics"].items()
        }
        return Run(**record)

    def store(self, path: Path, run: Run) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        record = asdict(run)
        scores = record.pop("test_scores")
        record["test_metrics"] = {
            name: [None if math.isnan(v) else v for v in values]
            for name, values in record["test_metrics"].items()
        }
        # Scores first, then the JSON (atomically): a JSON file on disk means the fit is complete.
        np.savez_compressed(path.with_suffix(".npz"), test_scores=scores)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, default=float))
        tmp.replace(path)


def fit_run(
    method: Method, config_index: int, config: dict[str, Any], fold: int, seed: int, p: Protocol
) -> Run:
    """Train one configuration with one seed on one fold and score it (no cache)."""
    data = load_fold(p.dataset, fold, p.root, p.normalize, p.max_queries)
    if empty_queries(data.vali).all():
        raise ValueError(
            f"No validation query of {p.dataset} fold {fold} has a relevant document, so validation NDCG (which "
            "skips such queries) is undefined and can neither early-stop nor select. Use more queries (a "
            "larger --max-queries, or none)."
        )
    _set_numba_threads(p.threads)
    recipe = method.build(config["own"], config["booster"], p.k, seed)
    start = time.perf_counter()
    fit = TRAINERS[method.booster](recipe, config["booster"], data, seed, p)
    seconds = time.perf_counter() - start
    vali = vali_ndcg(data.vali, fit.vali_scores, p.k)
    reported = float(fit.curve[fit.best_iteration - 1])
    # XGBoost logs its metrics with 6 decimals.
    if not math.isclose(vali, reported, rel_tol=0.0, abs_tol=1e-6):
        raise RuntimeError(
            f"{method.name}: the booster's validation NDCG@{p.k} at its best iteration ({reported!r}) differs from "
            f"stochrank.metrics.ndcg of the kept model ({vali!r}); the early-stopping metric is not the report's."
        )
    metrics = evaluate(data.test.y, fit.test_scores, data.test.group, data.max_grade, p.k)
    return Run(
        method.name, fold, seed, config_index, config, vali, fit.best_iteration, int(fit.curve.size), seconds,
        fit.curve.tolist(), {name: values.tolist() for name, values in metrics.items()},
        np.asarray(fit.test_scores, dtype=np.float64), p.threads, p.jobs,
    )  # fmt: skip


# ------------------------------------------------------------------------------------- execution
@dataclass(frozen=True)
class Task:
    method: str
    fold: int
    config_index: int
    config: dict[str, Any] = field(hash=False)
    seed: int


def _execute(task: Task, protocol: Protocol, cache_root: str) -> Run:
    """Train one task and store it (runs in a worker process when ``jobs > 1``)."""
    cache = RunCache(cache_root, protocol)
    run = fit_run(METHODS[task.method], task.config_index, task.config, task.fold, task.seed, protocol)
    cache.store(cache.path(task.method, task.fold, task.config_index, task.config, task.seed), run)
    return run


@dataclass
class Outcome:
    """All runs of a protocol: every fit, and the selected configuration's fits per (method, fold)."""

    protocol: Protocol
    methods: list[str]
    runs: list[Run]
    selected: dict[tuple[str, int], list[Run]]  # (method, fold) -> one run per seed
    trained: int  # fits trained in this call (0 when everything came from the cache)


def _run_tasks(
    tasks: Sequence[Task],
    protocol: Protocol,
    cache: RunCache,
    progress: Callable[[Iterable[Any], int, str], Any],
    label: str,
) -> tuple[list[Run], int]:
    done: list[Run] = []
    todo: list[Task] = []
    for task in tasks:
        run = cache.load(
            cache.path(task.method, task.fold, task.config_index, task.config, task.seed), task.fold
        )
        if run is None:
            todo.append(task)
        else:
            done.append(run)
    if not todo:
        return done, 0
    if protocol.jobs <= 1:
        for task in progress(todo, len(todo), label):
            done.append(_execute(task, protocol, str(cache.root)))
        return done, len(todo)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn, not fork: the boosters' OpenMP runtimes and Numba's threads do not survive a fork.
    with ProcessPoolExecutor(protocol.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_execute, task, protocol, str(cache.root)) for task in todo]
        for future in progress(as_completed(futures), len(futures), label):
            done.append(future.result())
    return done, len(todo)


def _no_progress(items: Iterable[Any], total: int, label: str) -> Iterable[Any]:
    return items


def run_protocol(
    protocol: Protocol,
    methods: Sequence[str],
    cache_root: str | os.PathLike[str],
    progress: Callable[[Iterable[Any], int, str], Any] | None = None,
) -> Outcome:
    """Tune every method on every fold, select on validation, rerun with every seed (see module docstring).

    ``progress(iterable, total, label)`` wraps the loops over fits to train (e.g. tqdm); fits found in
    ``cache_root`` are loaded, not trained.
    """
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"Unknown method(s) {unknown}; available: {', '.join(METHODS)}.")
    progress = progress or _no_progress
    cache = RunCache(cache_root, protocol)
    configs = {m: sample_configs(METHODS[m], protocol.budget) for m in methods}
    tuning_seed = protocol.seeds[0]
    tuning = [
        Task(m, f, i, c, tuning_seed)
        for m in methods
        for f in protocol.folds
        for i, c in enumerate(configs[m])
    ]
    runs, trained = _run_tasks(tuning, protocol, cache, progress, "tuning")

    best: dict[tuple[str, int], Run] = {}
    for run in sorted(runs, key=lambda r: (r.method, r.fold, r.config_index)):
        key = (run.method, run.fold)
        score = -math.inf if math.isnan(run.vali) else run.vali
        if key not in best or score > (-math.inf if math.isnan(best[key].vali) else best[key].vali):
            best[key] = run
    reseeds = [Task(m, f, best[m, f].config_index, best[m, f].config, s)
               for m in methods for f in protocol.folds for s in protocol.seeds[1:]]  # fmt: skip
    more, trained_more = _run_tasks(reseeds, protocol, cache, progress, "seeds")
    selected = {key: [run] for key, run in best.items()}
    for run in sorted(more, key=lambda r: r.seed):
        selected[run.method, run.fold].append(run)
    return Outcome(protocol, list(methods), runs + more, selected, trained + trained_more)
