"""Tuning, selection, early stopping, seeds and folds: the comparison every method goes through.

Protocol (identical for every method):

1. **Configurations.** For each method, ``budget`` configurations are drawn at random: the booster's
   parameters from :data:`~stochrank.bench.methods.BOOSTER_SPACES` with a random stream that depends only
   on (booster, configuration index), so every method on one booster sees *the same* trees, learning rates
   and regularisation; the method's own parameters from a stream of (method, configuration index). The
   same configurations are used on every fold.
2. **Early stopping.** Every fit trains at most ``max_rounds`` trees and stops after ``patience`` rounds
   without improving the validation target metric (``metric``: NDCG@k, MRR, MRR@k or ERR@k,
   :class:`~stochrank.bench.target.Target`) in the report's convention (worst-case ties, queries without a
   relevant document skipped), keeping the best iteration (:mod:`stochrank.bench.trainers`; checked on
   every fit against :mod:`stochrank.metrics` of the kept model's validation scores).
3. **Finalists.** On each fold, the ``finalists`` configurations with the best validation target metric at
   the first seed (ties: the earlier configuration) are trained again with every further seed (the
   booster's seed and the stochastic objective's seed).
4. **Selection.** The finalist with the best validation target metric averaged over the seeds is selected
   (ties: the earlier configuration); test metrics are reported for its every (fold, seed). Selecting on one
   seed would pick a lucky draw: on MQ2008, CatBoost's query-wise data and LightGBM's example, the
   configurations ``sr-lgb`` selected at the first seed scored 0.014, 0.074 and 0.027 lower on validation with
   the other two seeds (``sr-xgb``: 0.014, 0.065, 0.024, at XGBoost's default leaf weight), while LightGBM's
   and XGBoost's LambdaMART (no bagging in their space) score the same with every seed there (not on the
   350,000-row synthetic set, where LightGBM samples 200,000 rows to place its bins). Averaging over the
   finalists' seeds selects configurations, not draws (the first seed, which chose the finalists, keeps its
   share of the mean); a deterministic method's choice is unchanged, and ``finalists=1`` is selection at the
   first seed. On test the two rules moved stochrank by -0.0023 ... +0.0082 on the real sets
   (``benchmarks/selection_rule.py``, with XGBoost's leaf size searched; the largest, ``sr-xgb`` on LightGBM's
   example, at an uncorrected p = 0.041, the others p >= 0.078); on the synthetic set at 30 configurations
   this rule moved ``sr-xgb`` by -0.0003 (-0.0016 at XGBoost's default leaf weight) and LightGBM's
   LambdaMART by +0.0014. It stays for what it selects, not for a measured gain.
5. **Datasets without a validation split** (Istella) hold out 20% of the training queries
   (:func:`stochrank.datasets.split_queries`, seed 0) as validation.

Every finished fit is stored in a :class:`~stochrank.bench.cache.RunCache` under ``<out>/runs``; a rerun
loads it instead of training it again.
"""

from __future__ import annotations

import functools
import math
import os
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_choice, check_int, check_optional_int
from .cache import CACHE_VERSION, Run, RunCache, data_fingerprint
from .methods import BOOSTER_SPACES, METHODS, Method
from .selection import ranked_by_validation, select_finalists
from .target import EVAL_METRICS, NDCG_CUTOFFS, Target, evaluate, metric_names
from .trainers import TRAINERS, FitSettings, FoldData, empty_queries, set_numba_threads

__all__ = [
    "EVAL_METRICS",
    "NDCG_CUTOFFS",
    "Outcome",
    "Protocol",
    "Task",
    "evaluate",
    "fit_run",
    "load_fold",
    "metric_names",
    "run_protocol",
    "run_tasks",
    "sample_configs",
]

VALI_FRACTION = 0.2


@dataclass(frozen=True)
class Protocol:
    """Everything that defines a comparison (see the module docstring).

    ``metric`` is the target (``ndcg@k``, ``mrr``, ``mrr@k`` or ``err@k``, see :attr:`target`).
    ``threads`` and ``jobs`` only change speed and ``finalists`` only which fits are made, so none is part
    of a fit's identity. Every field is validated on construction (``ValueError`` naming the field): folds
    of the dataset and seeds >= 0, each once; the metric's spelling; budget, max_rounds, patience, threads
    (0 would mean "all cores" to LightGBM), jobs and finalists >= 1; max_queries >= 1 or None.
    """

    dataset: str = "mq2008"
    folds: tuple[int, ...] = (1, 2, 3, 4, 5)
    seeds: tuple[int, ...] = (0, 1, 2)
    budget: int = 30
    metric: str = "ndcg@5"
    max_rounds: int = 1000
    patience: int = 100
    normalize: str | None = None
    max_queries: int | None = None  # keep the first N queries of every split (smoke runs)
    root: str | None = None
    threads: int = 1
    jobs: int = 1
    finalists: int = 5

    def __post_init__(self) -> None:
        """Validate every field and store the folds and seeds as tuples of int."""
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
        for name in ("budget", "max_rounds", "patience", "threads", "jobs", "finalists"):
            check_int(getattr(self, name), name, owner, low=1)
        if not isinstance(self.metric, str):
            raise ValueError(
                f"The 'metric' parameter of {owner} must be a str such as 'ndcg@5'; got {self.metric!r}."
            )
        try:
            target = Target.parse(self.metric)
        except ValueError as exc:
            raise ValueError(f"The 'metric' parameter of {owner}: {exc}") from None
        object.__setattr__(self, "metric", target.spec)
        check_optional_int(self.max_queries, "max_queries", owner, low=1, none_means="every query")
        if self.normalize is not None:
            check_choice(self.normalize, "normalize", owner, ("query",))

    def identity(self, fold: int) -> dict[str, Any]:
        """Return the settings a cached fit on ``fold`` must share to be reused.

        For a dataset read from a data root, also the resolved root and
        :func:`~stochrank.bench.cache.data_fingerprint` of the fold, so that fits on other data are never
        reused; for a dataset built by code (pooled and rotated, or generated), the fingerprint only. The
        bundled MQ2008 needs neither: its files change only with stochrank's code.
        """
        from stochrank.datasets import DATASETS, data_root

        settings = {
            "version": CACHE_VERSION, "dataset": self.dataset, "metric": self.metric,
            "max_rounds": self.max_rounds, "patience": self.patience, "normalize": self.normalize,
            "max_queries": self.max_queries,
        }  # fmt: skip
        spec = DATASETS[self.dataset]
        if spec.bundled is None and spec.loader is None:
            settings["data_root"] = str(data_root(self.root).resolve())
        if spec.bundled is None or spec.loader is not None:
            settings["data"] = _fingerprint(self.dataset, fold, self.root, self.normalize, self.max_queries)
        return settings

    @property
    def target(self) -> Target:
        """The target metric with the dataset's conventions (NDCG gain, ERR's highest grade)."""
        from stochrank.datasets import DATASETS

        spec = DATASETS[self.dataset]
        return Target.parse(self.metric, gain=spec.gain, max_grade=float(spec.labels[1]))

    def data(self, fold: int) -> FoldData:
        """Return the splits of ``fold`` as this protocol uses them (:func:`load_fold`)."""
        return load_fold(self.dataset, fold, self.root, self.normalize, self.max_queries)

    def metric_names(self) -> tuple[str, ...]:
        """Return the names of the test metrics this protocol reports (:func:`metric_names` of the target)."""
        return metric_names(self.target)

    def fit_settings(self) -> FitSettings:
        """Return the trees, early stopping and threads of every fit (on the target, report convention)."""
        t = self.target
        return FitSettings(
            self.max_rounds,
            self.patience,
            t.k,
            self.threads,
            metric=t.metric,
            gain=t.gain,
            max_grade=t.max_grade,
        )


# -------------------------------------------------------------------------------------------- data
def _first_queries(split: Any, n: int | None) -> Any:
    if n is None or n >= split.n_queries:
        return split
    from stochrank.datasets import RankingSplit

    rows = int(split.group[:n].sum())
    return RankingSplit(split.X[:rows], split.y[:rows], split.qid[:rows], split.group[:n])


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
    return FoldData(train, vali, test, float(spec.labels[1]), spec.gain)


@functools.cache
def _fingerprint(
    dataset: str, fold: int, root: str | None, normalize: str | None, max_queries: int | None
) -> str:
    return data_fingerprint(load_fold(dataset, fold, root, normalize, max_queries))


# -------------------------------------------------------------------------------- configurations
def _stream(*parts: object) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(str(p).encode()) for p in parts])


def sample_configs(method: Method, budget: int) -> list[dict[str, dict[str, Any]]]:
    """Draw ``budget`` configurations ``{"booster": {...}, "own": {...}}`` (see the module docstring)."""
    configs = []
    for i in range(budget):
        booster_rng, own_rng = _stream("booster", method.booster, i), _stream("method", method.name, i)
        booster = {name: dist.sample(booster_rng) for name, dist in BOOSTER_SPACES[method.booster].items()}
        own = {name: dist.sample(own_rng) for name, dist in method.space.items()}
        configs.append({"booster": booster, "own": own})
    return configs


# ------------------------------------------------------------------------------------------ fits
def fit_run(
    method: Method, config_index: int, config: dict[str, Any], fold: int, seed: int, p: Protocol
) -> Run:
    """Train one configuration with one seed on one fold and score it (no cache)."""
    data = p.data(fold)
    if empty_queries(data.vali).all():
        raise ValueError(
            f"No validation query of {p.dataset} fold {fold} has a relevant document, so validation NDCG "
            "(which skips such queries) is undefined and can neither early-stop nor select. Use more queries "
            "(a larger --max-queries, or none)."
        )
    target = p.target
    reason = method.unsupported(target)
    if reason is not None:
        raise ValueError(f"{method.name} does not run --metric {target.spec}: {reason}.")
    set_numba_threads(p.threads)
    recipe = method.build(config["own"], config["booster"], target, seed)
    start = time.perf_counter()
    fit = TRAINERS[method.booster](recipe, config["booster"], data, seed, p.fit_settings())
    seconds = time.perf_counter() - start
    vali = target.mean(data.vali, fit.vali_scores)
    reported = float(fit.curve[fit.best_iteration - 1])
    # XGBoost logs its metrics with 6 decimals.
    if not math.isclose(vali, reported, rel_tol=0.0, abs_tol=1e-6):
        raise RuntimeError(
            f"{method.name}: the booster's validation {target.label} at its best iteration ({reported!r}) "
            f"differs from stochrank.metrics of the kept model ({vali!r}); the early-stopping metric is "
            "not the report's."
        )
    metrics = evaluate(data.test.y, fit.test_scores, data.test.group, target)
    return Run(
        method.name, fold, seed, config_index, config, vali, fit.best_iteration, int(fit.curve.size), seconds,
        fit.curve.tolist(), {name: values.tolist() for name, values in metrics.items()},
        np.asarray(fit.test_scores, dtype=np.float64), p.threads, p.jobs,
    )  # fmt: skip


# ------------------------------------------------------------------------------------- execution
@dataclass(frozen=True)
class Task:
    """One fit to load or train: (method, fold, configuration, seed)."""

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


def run_tasks(
    tasks: Sequence[Task],
    protocol: Protocol,
    cache: RunCache,
    progress: Callable[[Iterable[Any], int, str], Any] | None = None,
    label: str = "fits",
) -> tuple[list[Run], int]:
    """Load each task's fit from ``cache`` or train and store it, ``protocol.jobs`` fits at once.

    Returns the runs (loaded first, then trained, in completion order) and how many were trained;
    ``progress(iterable, total, label)`` wraps the loop over the fits to train.
    """
    progress = progress or _no_progress
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
    """Tune every method on every fold, rerun the finalists with every seed, select (see module docstring).

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
    runs, trained = run_tasks(tuning, protocol, cache, progress, "tuning")

    finalists = {key: ranked[: protocol.finalists] for key, ranked in ranked_by_validation(runs).items()}
    reseeds = [Task(m, f, run.config_index, run.config, s)
               for (m, f), best in finalists.items() for run in best for s in protocol.seeds[1:]]  # fmt: skip
    more, trained_more = run_tasks(reseeds, protocol, cache, progress, "seeds")
    selected = select_finalists(finalists, more)
    return Outcome(protocol, list(methods), runs + more, selected, trained + trained_more)
