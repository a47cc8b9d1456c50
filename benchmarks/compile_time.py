"""The first call's cost: Numba compilation with an empty cache (cold) and loading the cache (warm).

stochrank's kernels are compiled by Numba on first use and cached on disk. Each measurement runs in a fresh
interpreter with ``NUMBA_CACHE_DIR`` pointing at its own directory:

- **cold**: a new, empty directory, so every kernel the call needs is compiled (a fresh installation);
- **warm**: the directory a cold run just filled, so every kernel is loaded from disk (every later process).

Measured calls, on the bundled MQ2008 (fold 1, train: 9,630 documents in 471 queries), the objective in
LGBMRanker's call form ``objective(y, scores, None, group)``:

- ``stochrank.ndcg(k=5)`` objective, first call (the gradient and Newton Hessian), then a second call;
- ``stochrank.metrics.ndcg(..., k=5)``, first call in its own process (evaluation without training);
- ``import stochrank``.

    python benchmarks/compile_time.py              # 2 cold and 3 warm runs of each; writes RESULTS.md
    python benchmarks/compile_time.py --quick      # 1 of each; RESULTS.md is not touched
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from _common import REPO, median, write_results_section

from stochrank.bench.results import fmt, markdown_table, section_header

CHILD = """
import json, time
t0 = time.perf_counter()
import numpy as np
import stochrank
t_import = time.perf_counter() - t0
from stochrank.datasets import load_mq2008
train = load_mq2008(1, "train")
y, group = train.y, train.group
scores = np.random.default_rng(0).standard_normal(y.size)
out = {"import": t_import}
if WHAT == "objective":
    objective = stochrank.ndcg(k=5)
    t0, c0 = time.perf_counter(), time.process_time()
    objective(y, scores, None, group)
    out["first"], out["first_cpu"] = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    objective(y, scores, None, group)
    out["second"] = time.perf_counter() - t0
else:
    t0, c0 = time.perf_counter(), time.process_time()
    stochrank.metrics.ndcg(y, scores, group, k=5)
    out["first"], out["first_cpu"] = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    stochrank.metrics.ndcg(y, scores, group, k=5)
    out["second"] = time.perf_counter() - t0
print(json.dumps(out))
"""


def measure(what: str, cache_dir: str) -> dict[str, float]:
    """Time ``what`` ('objective' or 'metric') in a fresh interpreter whose Numba cache is ``cache_dir``."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "PYTHONPATH": str(REPO)}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", f"WHAT = {what!r}\n{CHILD}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    result["process"] = time.perf_counter() - t0
    return result


def main() -> None:
    """Measure cold and warm first calls, print the table, write the RESULTS.md section."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=2, help="cold runs per call (each compiles everything)")
    parser.add_argument("--warm", type=int, default=3, help="warm runs per call")
    parser.add_argument("--quick", action="store_true", help="one run of each; RESULTS.md is not touched")
    args = parser.parse_args()
    n_cold, n_warm = (1, 1) if args.quick else (args.cold, args.warm)

    rows = []
    for what in ("objective", "metric"):
        cold, warm = [], []
        for _ in range(n_cold):
            with tempfile.TemporaryDirectory(prefix="stochrank-numba-") as cache_dir:
                cold.append(measure(what, cache_dir))
                print(f"{what} cold: {cold[-1]}", flush=True)
                if len(warm) < n_warm:
                    for _ in range(n_warm - len(warm)):
                        warm.append(measure(what, cache_dir))
                        print(f"{what} warm: {warm[-1]}", flush=True)
        label = "stochrank.ndcg(k=5) objective" if what == "objective" else "stochrank.metrics.ndcg(k=5)"
        for state, runs in (("cold (empty cache)", cold), ("warm (cache on disk)", warm)):
            rows.append(
                [
                    label,
                    state,
                    len(runs),
                    fmt(median([r["first"] for r in runs]), 3),
                    fmt(median([r["first_cpu"] for r in runs]), 3),
                    fmt(median([r["second"] for r in runs]) * 1e3, 3),
                    fmt(median([r["import"] for r in runs]), 2),
                    fmt(median([r["process"] for r in runs]), 3),
                ]
            )
    headers = ["call", "Numba cache", "runs", "first call s", "its CPU s", "second call ms", "import s"]
    table = markdown_table([*headers, "whole process s"], rows)
    print(table)
    if args.quick:
        return
    body = (
        section_header("13. First-call compile time (cold and warm Numba cache)")
        + "\nEach run is a fresh interpreter with `NUMBA_CACHE_DIR` set to its own directory: empty for a "
        "cold run (every kernel the call needs is compiled, as after installation), the one a cold run just "
        "filled for a warm run (kernels loaded from disk, as in every later process). Bundled MQ2008 fold 1 "
        "train (9,630 documents, 471 queries); the objective in LGBMRanker's call form, gradient and Newton "
        "Hessian; the metric in a process of its own. Medians. CPU s: the first call's process CPU time "
        "(compilation is single-threaded, so it shows the work whatever the machine's load; the wall time "
        "adds the waits for a core). Whole process: interpreter start to exit, data loading included."
        "\n\n" + table + "\n"
    )
    write_results_section("compile-time", body)


if __name__ == "__main__":
    main()
