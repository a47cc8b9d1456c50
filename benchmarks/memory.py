"""Peak memory at MSLR-WEB30K scale: the loader, the objective's per-dataset state, one training iteration.

Each measurement runs in a fresh interpreter, so one phase's peak cannot hide another's:

- **load**: ``stochrank.datasets.load_svmlight_ranking(path, dtype=np.float32)`` on a synthetic file in
  MSLR's layout (``<grade> qid:<id> 1:<v> ... 136:<v>``, MSLR-shaped query sizes and grades); peak
  resident memory above the interpreter's before the call (``ru_maxrss``), against the final float32
  matrix. Goal: ≤ 2 × the matrix.
- **state**: what ``stochrank.ndcg(k=10)`` keeps per training set after its first call on a LightGBM
  Dataset (``tracemalloc``: memory still held after the call, less the returned gradient and Hessian),
  in bytes per document. Goal: ≤ 16 bytes per document beyond the booster's arrays.
- **call**: the objective call's transient peak (``tracemalloc``) above what it returns and keeps.
- **iteration**: peak resident memory of one ``lgb.train`` iteration above the constructed Dataset,
  stochrank against lambdarank on the same data.

    python benchmarks/memory.py --rows 3700000     # MSLR-WEB30K's size (writes a ~5 GB file)
    python benchmarks/memory.py --quick            # smoke run; RESULTS.md is not touched
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from _common import (
    MSLR_MEAN_DOCS,
    lgb_ranking_dataset,
    ranking_data,
    run_json_worker,
    warm_up,
    write_results_section,
)

from stochrank.bench.results import fmt, markdown_table, section_header

FEATURES = 136
MIB = 2**20


def _rss() -> int:
    """Current resident set size in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def _peak_rss() -> int:
    """Peak resident set size of this process so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def write_file(path: Path, rows: int, seed: int) -> dict[str, int]:
    """Write ``rows`` MSLR-layout lines (6 significant digits, as MSLR's files) in blocks of queries."""
    sizes, _, labels = ranking_data(max(1, rows // MSLR_MEAN_DOCS), seed)
    rng = np.random.default_rng(seed + 1)
    qid = np.repeat(np.arange(sizes.size), sizes)
    fmt_line = "%d qid:%d " + " ".join(f"{j + 1}:%.6g" for j in range(FEATURES))
    with path.open("w") as f:
        for start in range(0, labels.size, 50_000):
            stop = min(start + 50_000, labels.size)
            block = np.column_stack(
                (labels[start:stop], qid[start:stop], rng.normal(size=(stop - start, FEATURES)))
            )
            np.savetxt(f, block, fmt=fmt_line)
    return {"rows": int(labels.size), "queries": int(sizes.size), "bytes": path.stat().st_size}


def measure_load(path: str) -> dict[str, float]:
    """Peak memory of loading ``path`` as float32, in this (fresh) process."""

    import sklearn.datasets  # noqa: F401 (the loader imports it on first use: not part of the data's peak)

    import stochrank.datasets

    base = _rss()
    t0 = time.perf_counter()
    split = stochrank.datasets.load_svmlight_ranking(path, dtype=np.float32)
    seconds = time.perf_counter() - t0
    return {"peak": _peak_rss() - base, "matrix": split.X.nbytes, "seconds": seconds}


def measure_objective(rows: int, seed: int) -> dict[str, float]:
    """The objective's retained state and transient peak of one call on a LightGBM Dataset."""
    import stochrank

    sizes, _, labels = ranking_data(max(1, rows // MSLR_MEAN_DOCS), seed)
    dataset = lgb_ranking_dataset(labels, sizes)
    objective = stochrank.ndcg(k=10)
    warm_up(objective, labels, sizes)  # the kernels and the package's lazy state stay out of the trace
    preds = np.zeros(labels.size)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    grad, hess = objective(preds, dataset)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    returned = grad.nbytes + hess.nbytes
    state = held - before - returned
    return {"docs": labels.size, "state": state, "transient": peak - held, "returned": returned}


def measure_iteration(rows: int, seed: int, objective_name: str) -> dict[str, float]:
    """Peak resident memory of one ``lgb.train`` iteration above the constructed Dataset."""
    import lightgbm as lgb

    import stochrank

    sizes, _, labels = ranking_data(max(1, rows // MSLR_MEAN_DOCS), seed)
    X = np.random.default_rng(seed + 2).normal(size=(labels.size, FEATURES)).astype(np.float32)
    objective = stochrank.ndcg(k=10) if objective_name == "stochrank" else "lambdarank"
    if objective_name == "stochrank":  # compile/load the kernels before the baseline
        warm_up(objective, labels, sizes)
    dataset = lgb.Dataset(X, labels, group=sizes, params={"verbose": -1}, free_raw_data=True).construct()
    del X
    base = _rss()
    lgb.train({"objective": objective, "verbose": -1, "num_threads": 2}, dataset, 1)
    return {"peak": _peak_rss() - base}


def _child(phase: str, **kwargs: object) -> dict[str, float]:
    """Run one measurement in a fresh interpreter and return its result."""
    result: dict[str, float] = run_json_worker(
        [__file__, "--child", json.dumps({"phase": phase, **kwargs})], phase
    )
    return result


def run_child(spec: dict) -> dict[str, float]:
    """Dispatch a child process's measurement."""
    phase = spec.pop("phase")
    if phase == "load":
        return measure_load(**spec)
    if phase == "objective":
        return measure_objective(**spec)
    return measure_iteration(**spec)


def main() -> None:
    """Write the file, run each phase in a fresh interpreter, print the table, refresh RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[3_700_000], help="documents per measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run; RESULTS.md is not touched")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(json.loads(args.child))))
        return
    if args.quick:
        args.rows = [20_000]

    rows_out = []
    for rows in args.rows:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "mslr_layout.txt"
            written = write_file(path, rows, args.seed)
            load = _child("load", path=str(path))
        state = _child("objective", rows=rows, seed=args.seed)
        it_sr = _child("iteration", rows=rows, seed=args.seed, objective_name="stochrank")
        it_lr = _child("iteration", rows=rows, seed=args.seed, objective_name="lambdarank")
        docs = written["rows"]
        rows_out.append(
            [
                f"{docs:,}",
                fmt(written["bytes"] / MIB),
                fmt(load["matrix"] / MIB),
                fmt(load["peak"] / MIB),
                fmt(load["peak"] / load["matrix"]),
                fmt(load["seconds"]),
                fmt(state["state"] / docs),
                fmt(state["transient"] / docs),
                fmt(it_sr["peak"] / MIB),
                fmt(it_lr["peak"] / MIB),
            ]
        )
        print(f"{docs:,} rows measured", flush=True)
    headers = [
        "documents",
        "file MiB",
        "float32 X MiB",
        "load peak MiB",
        "peak ÷ X",
        "load s",
        "objective state B/doc",
        "call transient B/doc",
        "iteration peak MiB, stochrank",
        "iteration peak MiB, lambdarank",
    ]
    body = "\n".join(
        [
            section_header("10. Memory at MSLR-WEB30K scale: loader, objective state, one iteration"),
            (
                f"Synthetic files in MSLR's layout ({FEATURES} features, 6 significant digits, MSLR-shaped "
                "query sizes and grades), written to a temporary directory. Each figure comes from a fresh "
                "interpreter: load = peak RSS above the interpreter before `load_svmlight_ranking(path, "
                "dtype=np.float32)`; objective state = memory `stochrank.ndcg(k=10)` still holds after its "
                "first call on a constructed LightGBM Dataset, less the returned gradient and Hessian "
                "(tracemalloc); call transient = the call's peak above that; iteration = peak RSS of one "
                "`lgb.train` iteration (2 threads) above the constructed Dataset. Goals: load peak ≤ 2 × "
                "the float32 matrix, objective state ≤ 16 bytes per document."
            ),
            "",
            markdown_table(headers, rows_out, "r" * len(headers)),
        ]
    )
    print("\n" + body)
    if not args.quick:
        write_results_section("memory", body)


if __name__ == "__main__":
    main()
