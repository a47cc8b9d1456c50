"""Shared pieces of the stochrank benchmark scripts: data, the argsort floor, timing, RESULTS.md.

Synthetic MSLR-shaped data, the argsort floor, interleaved timing and where the scripts' RESULTS.md
sections go; their headers, tables and number formatting come from :mod:`stochrank.bench.results`, shared
with ``python -m stochrank.bench``.

Every benchmark script imports this module first: it puts the repository root on ``sys.path`` so that
``python benchmarks/<script>.py`` runs against the working tree without installing stochrank.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numba
import numpy as np
import numpy.typing as npt
from numba import njit, prange

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "RESULTS.md"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from stochrank.bench.results import write_section  # noqa: E402 (the path above first)
from stochrank.bench.spaces import L2_DOCUMENTS  # noqa: E402
from stochrank.datasets.synthetic import MSLR_MEAN_DOCS, mslr_grades, mslr_query_sizes  # noqa: E402

if TYPE_CHECKING:
    from stochrank.bench.cache import Run
    from stochrank.bench.protocol import Outcome, Protocol

RESULTS_PREAMBLE = """# stochrank benchmarks

Each section below is written by the script named in its command line (run from the repository
root); re-running a script refreshes only its own section. The machine is a shared 2-vCPU VM, so
absolute times drift between runs: compare the ratios measured side by side within one table
(repetitions interleaved round-robin, medians reported). Sections whose title names a 16-CPU machine, or
whose hand note says so, ran (some of their fits) on quiet 16-core machines lent to some sessions (no GPU
used).
"""


# ---------------------------------------------------------------------------------------- data
def mid_training_scores(labels: npt.NDArray[np.float64], rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """Return scores a half-trained model might give: 0.5 * label plus unit Gaussian noise."""
    return 0.5 * labels + rng.standard_normal(labels.size)


def ranking_data(
    n_queries: int, seed: int = 0, mean_docs: int = MSLR_MEAN_DOCS
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Return ``(sizes, offsets, labels)`` for ``n_queries`` MSLR-shaped queries."""
    rng = np.random.default_rng(seed)
    sizes = mslr_query_sizes(n_queries, rng, mean_docs)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    return sizes, offsets, mslr_grades(int(offsets[-1]), rng)


def fixed_length_data(
    n_docs_total: int, length: int, seed: int = 0
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Return ``(sizes, labels)``: about ``n_docs_total`` documents in queries of exactly ``length`` docs."""
    rng = np.random.default_rng(seed)
    n_queries = max(1, round(n_docs_total / length))
    sizes = np.full(n_queries, length, dtype=np.int64)
    return sizes, mslr_grades(n_queries * length, rng)


def lgb_ranking_dataset(labels: npt.NDArray[np.float64], sizes: npt.NDArray[np.int64]) -> Any:
    """Return a constructed one-feature ``lightgbm.Dataset`` carrying labels and groups.

    Enough for ``objective(preds, dataset)`` calls outside training (the objective reads only those).
    """
    import lightgbm as lgb

    ds = lgb.Dataset(
        np.zeros((labels.size, 1), np.float32), label=labels, group=sizes, params={"verbose": -1}
    )
    return ds.construct()


def warm_up(objective: Any, labels: npt.NDArray[np.float64], sizes: npt.NDArray[np.int64]) -> None:
    """Load (or compile) every kernel of a booster call on the first three queries, untimed and untraced."""
    n = int(sizes[:3].sum())
    objective(np.zeros(n), lgb_ranking_dataset(labels[:n], sizes[:3]))


# ----------------------------------------------------------------------------- argsort floor
@njit(cache=True, parallel=True)
def segmented_argsort(
    scores: npt.NDArray[np.float64], offsets: npt.NDArray[np.int64], out: npt.NDArray[np.int64]
) -> None:
    """Argsort every query's scores (``prange`` over queries) into ``out`` (query-local indices).

    One full sort of each query is the floor for a CCS sample: a sample must at least order the
    noisy scores of the query (the top k exactly, the rest against them).
    """
    for q in prange(offsets.size - 1):
        s = offsets[q]
        e = offsets[q + 1]
        out[s:e] = np.argsort(scores[s:e])


# ------------------------------------------------------------------------------------ timing
@contextlib.contextmanager
def numba_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` Numba threads (the setting is thread-local), then restore it."""
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)


def interleaved_times(
    cases: dict[str, Callable[[], object]], reps: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Return the seconds per call of each case.

    ``warmup`` untimed rounds, then ``reps`` timed rounds, each round calling every case once (round-robin,
    starting one case later each round).
    """
    names = list(cases)
    for _ in range(warmup):
        for name in names:
            cases[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(reps):
        for i in range(len(names)):
            name = names[(r + i) % len(names)]
            t0 = time.perf_counter()
            cases[name]()
            times[name].append(time.perf_counter() - t0)
    return times


def run_json_worker(argv: Sequence[str], label: str, env: dict[str, str] | None = None) -> Any:
    """Run ``python <argv>`` in a fresh interpreter and return the JSON of its last line of output.

    Measurements that must not share a process (OpenMP pools, peak memory) run this way; a failed worker
    raises with its stderr, named by ``label``.
    """
    proc = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{label} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median(xs: Sequence[float]) -> float:
    """Return the median of ``xs``."""
    return float(np.median(np.asarray(xs, dtype=np.float64)))


# ----------------------------------------------------------------------------------- fit cache
def cached_record(folder: Path, key: Sequence[Any], compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Return the JSON record of ``key`` from ``folder``, computing and storing it the first time.

    The file is named by the SHA-1 of ``key`` as JSON, so ``key`` must hold everything the record depends on
    (the scripts put a hand-bumped cache version in it for what the key cannot see, such as stochrank's code).
    """
    path = folder / f"{hashlib.sha1(json.dumps(list(key)).encode()).hexdigest()}.json"
    if path.exists():
        cached: dict[str, Any] = json.loads(path.read_text())
        return cached
    record = compute()
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record))
    return record


# --------------------------------------------------------------------------------- reporting
# The bench's current L2 space, as section titles and names say it: the scripts that re-read the tuned
# comparisons write sections of their own for it, beside the raw-unit ones the text cites (RESULTS.md ¹²).
L2_SPACE = f"`l2_documents` on [{L2_DOCUMENTS.low:g}, {L2_DOCUMENTS.high:g}]"
L2_SPACE_SECTION = f"_l2_documents_{L2_DOCUMENTS.high:g}"


def write_results_section(name: str, body: str) -> None:
    """Replace (or append) the ``name`` section of benchmarks/RESULTS.md and say so."""
    write_section(RESULTS, name, body, preamble=RESULTS_PREAMBLE)
    print(f"\n[{name}] section written to {RESULTS.relative_to(REPO)}")


def cached_comparison(
    argv: Sequence[str], finalists: int | None = None
) -> tuple[Protocol, list[str], Path, Outcome]:
    """Load a tuned comparison of RESULTS.md from its cached fits: its protocol, methods, run folder, outcome.

    ``argv`` are its bench arguments after ``--preset full`` (``finalists`` overrides the protocol's). Trains
    nothing: a missing fit stops the script with an error naming the bench command to run first. The run
    folder is resolved against the repository root, so a script finds the cache from any directory.
    """
    from stochrank.bench.__main__ import parse_args
    from stochrank.bench.protocol import run_protocol

    protocol, methods, out, _ = parse_args(["--preset", "full", "--jobs", "1", *argv])
    if finalists is not None:
        protocol = dataclasses.replace(protocol, finalists=finalists)
    out = out if out.is_absolute() else REPO / out
    command = f"python -m stochrank.bench --preset full {' '.join(argv)}"

    def refuse_to_train(items: Any, total: int, label: str) -> Any:
        # run_protocol calls its progress hook only when fits are missing from the cache.
        raise RuntimeError(
            f"{total} {label} fit(s) of `{command}` are not in its cache ({out / 'runs'}); run that command "
            "first (benchmarks/RESULTS.md): this script only reads its fits."
        )

    return protocol, methods, out, run_protocol(protocol, methods, out / "runs", refuse_to_train)


def run_mean(runs: Sequence[Run], label: str) -> float:
    """The report's mean: each run's mean over its queries that count, averaged over (fold, seed)."""
    return float(np.mean([r.metric_means()[label] for r in runs]))
