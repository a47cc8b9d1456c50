"""Where the time of one stochrank objective call goes inside training, and what each OpenMP choice costs.

``training_time.py`` times the objective call as a whole; this script splits it into its phases (the
booster's arguments unpacked, each parallel kernel launch, the pause of the booster's OpenMP pool before a
launch, the release of Numba's pool after the call) while a stochrank booster and a plain-L2 booster
train side by side, iterations interleaved as in ``training_time.py``. Each variant runs in a fresh worker
process: ``default`` (as shipped); ``no release`` (Numba's pool left spinning after the call);
``no pause`` (the booster's pool left spinning during our kernels); ``kernels on half the threads``.
Times are medians over iterations after the warm-up.

    python benchmarks/call_profile.py --library xgboost --threads 16
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import defaultdict

import numpy as np
from _common import median, warm_up, write_results_section
from training_time import Config, TimedObjective, _data

from stochrank.bench.results import fmt, markdown_table, section_header

VARIANTS = ("default", "no release", "no pause", "kernels on half the threads")


def _timed(phases: dict[str, list[float]], name: str, function):
    """``function`` wrapped so that every call's seconds are appended to ``phases[name]``."""

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            phases[name].append(time.perf_counter() - t0)

    return wrapper


def _instrument(phases: dict[str, list[float]], variant: str, threads: int) -> None:
    """Wrap the objective call's phases in timers, and switch off what ``variant`` switches off."""
    import numba

    import stochrank._parallel as parallel
    import stochrank.objectives._base as base
    from stochrank.protocol.call import DatasetCache

    DatasetCache.unpack = _timed(phases, "unpack", DatasetCache.unpack)
    foreign = (lambda: None) if variant == "no pause" else parallel.quiet_foreign_openmp
    parallel.quiet_foreign_openmp = _timed(phases, "pause booster's pool", foreign)
    release = (lambda n_rows: None) if variant == "no release" else base.release_kernel_threads
    base.release_kernel_threads = _timed(phases, "release Numba's pool", release)
    launch = parallel.run_parallel

    def run_parallel(kernel, n_rows, *args, **kwargs):
        previous = numba.get_num_threads()
        if variant == "kernels on half the threads":
            numba.set_num_threads(max(1, threads // 2))
        try:
            return _timed(phases, f"kernel {kernel.__name__}", launch)(kernel, n_rows, *args, **kwargs)
        finally:
            numba.set_num_threads(previous)

    for module in [m for name, m in sys.modules.items() if name.startswith("stochrank")]:
        if getattr(module, "run_parallel", None) is launch:
            module.run_parallel = run_parallel


def run_worker(library: str, threads: int, variant: str, rows: int, iterations: int) -> dict:
    """Train stochrank and L2 side by side under ``variant``; return iteration times and call phases."""
    import numba
    from training_time import _train_lightgbm, _train_xgboost

    import stochrank

    numba.set_num_threads(threads)
    cfg = Config(library, threads, None, rows, 136, iterations, 31, 0)
    X, labels, sizes = _data(cfg)
    timed = TimedObjective(stochrank.ndcg(k=10))
    warm_up(timed.objective, labels, sizes)
    phases: dict[str, list[float]] = defaultdict(list)
    _instrument(phases, variant, threads)
    train = _train_lightgbm if library == "lightgbm" else _train_xgboost
    times = train(cfg, X, labels, sizes, timed)
    return {"times": times, "call": timed.times, "phases": dict(phases)}


def table(results: dict[str, dict], warmup: int) -> str:
    """Milliseconds per iteration and per call phase (median over iterations), one column per variant."""
    per_call = {v: len(r["call"]) for v, r in results.items()}
    # phases of every call (a set-up phase such as the first call's query keys is left out)
    names = sorted(
        {p for v, r in results.items() for p, calls in r["phases"].items() if len(calls) >= per_call[v]}
    )
    rows = []
    for label, pick in (
        ("stochrank iteration", lambda r: r["times"]["stochrank"]),
        ("L2 iteration", lambda r: r["times"]["l2"]),
        ("objective call", lambda r: r["call"]),
    ):
        rows.append([label, *(fmt(median(pick(r)[warmup:]) * 1e3) for r in results.values())])
    rows.append(
        [
            "stochrank ÷ L2",
            *(
                fmt(median(r["times"]["stochrank"][warmup:]) / median(r["times"]["l2"][warmup:]))
                for r in results.values()
            ),
        ]
    )
    for name in names:
        cells = []
        for variant, r in results.items():
            calls = np.array(r["phases"].get(name, []))
            if calls.size < per_call[variant]:  # not run in every call (switched off, or set-up only)
                cells.append("–")
                continue
            # a phase may run several times per objective call: report its total per call
            repeat = max(1, calls.size // per_call[variant])
            per = calls[: calls.size - calls.size % repeat].reshape(-1, repeat).sum(axis=1)
            cells.append(fmt(median(list(per[warmup:])) * 1e3))
        rows.append([f"of which {name}", *cells])
    return markdown_table(["ms (median)", *results], rows, "l" + "r" * len(results))


def main() -> None:
    """Parent: one worker per variant, then the table (printed and written to RESULTS.md)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", choices=("lightgbm", "xgboost"), default="xgboost")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--section", default="call_profile")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_worker(args.library, args.threads, args.worker, args.rows, args.iterations)))
        return
    results = {}
    for variant in args.variants:
        command = [sys.executable, __file__, "--worker", variant, "--library", args.library]
        command += [
            "--threads",
            str(args.threads),
            "--rows",
            str(args.rows),
            "--iterations",
            str(args.iterations),
        ]
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"worker {variant} failed:\n{proc.stderr}")
        results[variant] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{variant}: done", flush=True)
    body = "\n".join(
        [
            section_header(
                f"2. One stochrank objective call inside {args.library} training, phase by phase "
                f"(~{args.rows:,} rows, {args.threads} threads)"
            ),
            (
                f"~{args.rows:,} rows × 136 features, the workload of section 2; stochrank.ndcg(k=10) and "
                f"plain L2 boosters trained side by side, {args.iterations} iterations interleaved, medians "
                f"after {args.warmup} warm-up iterations; one worker process per variant. A phase that runs "
                "more than once per call is summed per call; 'pause booster's pool' runs inside the kernel "
                "launches."
            ),
            "",
            table(results, args.warmup),
        ]
    )
    print("\n" + body)
    write_results_section(args.section, body)


if __name__ == "__main__":
    main()
