"""Shared pieces of the stochrank benchmarks: synthetic MSLR-shaped data, the argsort floor,
interleaved timing, machine description and the RESULTS.md section writer.

Every benchmark script imports this module first: it puts the repository root on ``sys.path`` so
that ``python benchmarks/<script>.py`` runs against the working tree without installing stochrank.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "RESULTS.md"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import stochrank.bench.report
from stochrank.bench.report import package_version
from stochrank.datasets.synthetic import MSLR_MEAN_DOCS, mslr_grades, mslr_query_sizes

_RESULTS_HEADER = """# stochrank benchmarks

Each section below is written by the script named in its command line (run from the repository
root); re-running a script refreshes only its own section. The machine is a shared 2-vCPU VM, so
absolute times drift between runs: compare the ratios measured side by side within one table
(repetitions interleaved round-robin, medians reported).
"""


# ---------------------------------------------------------------------------------------- data
def mid_training_scores(labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Scores a half-trained model might give: 0.5 * label plus unit Gaussian noise."""
    return 0.5 * labels + rng.standard_normal(labels.size)


def ranking_data(n_queries: int, seed: int = 0, mean_docs: int = MSLR_MEAN_DOCS):
    """``(sizes, offsets, labels)`` for ``n_queries`` MSLR-shaped queries."""
    rng = np.random.default_rng(seed)
    sizes = mslr_query_sizes(n_queries, rng, mean_docs)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    return sizes, offsets, mslr_grades(int(offsets[-1]), rng)


def fixed_length_data(n_docs_total: int, length: int, seed: int = 0):
    """``(sizes, labels)``: about ``n_docs_total`` documents in queries of exactly ``length`` docs."""
    rng = np.random.default_rng(seed)
    n_queries = max(1, round(n_docs_total / length))
    sizes = np.full(n_queries, length, dtype=np.int64)
    return sizes, mslr_grades(n_queries * length, rng)


def lgb_ranking_dataset(labels: np.ndarray, sizes: np.ndarray):
    """A constructed one-feature ``lightgbm.Dataset`` carrying labels and groups: enough for
    ``objective(preds, dataset)`` calls outside training (the objective reads only those)."""
    import lightgbm as lgb

    ds = lgb.Dataset(
        np.zeros((labels.size, 1), np.float32), label=labels, group=sizes, params={"verbose": -1}
    )
    return ds.construct()


# ----------------------------------------------------------------------------- argsort floor
@njit(cache=True, parallel=True)
def segmented_argsort(scores, offsets, out):
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
    """Seconds per call of each case: ``warmup`` untimed rounds, then ``reps`` timed rounds, each
    round calling every case once (round-robin, starting one case later each round)."""
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


def median(xs: Sequence[float]) -> float:
    return float(np.median(np.asarray(xs, dtype=np.float64)))


# --------------------------------------------------------------------------------- reporting
def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str | None = None) -> str:
    """A GitHub Markdown table; ``align`` is one character per column, 'l' or 'r' (default: the
    first column left, the others right)."""
    align = align or "l" + "r" * (len(headers) - 1)
    rule = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fmt(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits, no exponent for ordinary magnitudes."""
    if x == 0 or not np.isfinite(x):
        return str(x)
    if 1e-3 <= abs(x) < 1e7:
        decimals = max(0, digits - 1 - int(np.floor(np.log10(abs(x)))))
        return f"{x:,.{decimals}f}"
    return f"{x:.{digits - 1}e}"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_line() -> str:
    """One Markdown line: cores, CPU, load, Python and library versions, Numba threading layer."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    versions = ", ".join(f"{p} {package_version(p)}" for p in ("numpy", "numba", "lightgbm", "xgboost"))
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "not started"
    return (
        f"Machine: {os.cpu_count()} vCPU ({cpu_model()}), load average {load} at the end; "
        f"Python {platform.python_version()}, {versions}; Numba threading layer `{layer}`."
    )


def command_line() -> str:
    """The command that is running, as typed from the repository root."""
    script = Path(sys.argv[0]).resolve()
    try:
        script_text = str(script.relative_to(REPO))
    except ValueError:
        script_text = str(script)
    return "python " + " ".join(shlex.quote(a) for a in [script_text, *sys.argv[1:]])


def source_digest() -> str:
    """First 12 hex digits of a SHA-256 over stochrank's Python sources: which code was measured."""
    h = hashlib.sha256()
    for path in sorted((REPO / "stochrank").rglob("*.py")):
        h.update(str(path.relative_to(REPO)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def section_header(title: str) -> str:
    """Title, command, date, code digest and machine lines that start every RESULTS.md section."""
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return (
        f"## {title}\n\nCommand: `{command_line()}` ({date}; stochrank sources sha256 `{source_digest()}`)\n\n"
        f"{machine_line()}\n"
    )


def write_section(name: str, body: str, path: Path = RESULTS) -> None:
    """Replace (or append) the ``name`` block of RESULTS.md (the same markers as ``python -m stochrank.bench``)."""
    if not path.exists():
        path.write_text(_RESULTS_HEADER)
    stochrank.bench.report.write_section(path, name, body)
    print(f"\n[{name}] section written to {path.relative_to(REPO)}")
