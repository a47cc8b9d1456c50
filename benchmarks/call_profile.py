"""Where the time of one stochrank objective call goes inside training, and what each OpenMP choice costs.

``training_time.py`` times the objective call as a whole; this script splits it into its phases (the
booster's arguments unpacked, each kernel on its own, the pause of the booster's OpenMP pool before a
parallel launch, the release of Numba's pool after the call) while the three boosters of
``training_time.py`` (stochrank.ndcg(k=10), the built-in ranking objective, plain L2) train side by side,
iterations interleaved. Each variant runs in a fresh worker process without the caller's OpenMP wait
settings: ``default`` (as shipped), ``kernels on half the threads``, and for XGBoost (whose OpenMP runtime
is a second one in the process) ``no release`` (Numba's pool left spinning after the call) and
``no pause`` (XGBoost's pool left spinning during our kernels). Every phase is summed within each objective
call; the table gives medians over the calls after the warm-up.

    python benchmarks/call_profile.py --quick     # smoke run; RESULTS.md is not touched
    # on a 16-core machine (RESULTS.md sections call_profile_xgboost, call_profile_lightgbm[_2m]):
    python benchmarks/call_profile.py --library xgboost --threads 16 --section call_profile_xgboost
    python benchmarks/call_profile.py --library lightgbm --threads 16 --section call_profile_lightgbm
    python benchmarks/call_profile.py --library lightgbm --threads 16 --rows 2000000 --iterations 15 \\
        --warmup 3 --section call_profile_lightgbm_2m
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from _common import median, run_json_worker, write_results_section
from training_time import BUILTIN_NAMES, Config, train_timed, worker_env

from stochrank.bench.results import fmt, markdown_table, section_header

VARIANTS = {
    "lightgbm": ("default", "kernels on half the threads"),
    "xgboost": ("default", "no release", "no pause", "kernels on half the threads"),
}
SWITCHED_OFF = {"no release": "release Numba's pool", "no pause": "pause booster's pool"}


def _instrument(phases: dict[str, dict[int, float]], call_index: Callable[[], int], variant: str) -> None:
    """Time the objective call's phases into ``phases[name][call]`` and switch off what ``variant`` does.

    Kernels are timed at ``stochrank._parallel._launch`` (after the pause that ``run_parallel`` makes), so a
    kernel's time excludes the pause; a phase that runs several times in one call is summed for that call.
    """
    import numba

    import stochrank._parallel as parallel
    import stochrank.objectives._base as base
    from stochrank.protocol.call import DatasetCache

    def timed(name: str | Callable[..., str], function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                label = name if isinstance(name, str) else name(*args)
                call = phases[label]
                call[call_index()] = call.get(call_index(), 0.0) + time.perf_counter() - t0

        return wrapper

    DatasetCache.unpack = timed("unpack", DatasetCache.unpack)
    if variant != "no pause":
        parallel.quiet_foreign_openmp = timed("pause booster's pool", parallel.quiet_foreign_openmp)
    else:
        parallel.quiet_foreign_openmp = lambda: None
    if variant != "no release":
        base.release_kernel_threads = timed("release Numba's pool", base.release_kernel_threads)
    else:
        base.release_kernel_threads = lambda n_rows: None
    parallel._launch = timed(lambda kernel, *_: f"kernel {kernel.__name__}", parallel._launch)
    if variant == "kernels on half the threads":
        run_parallel = parallel.run_parallel

        def on_half(kernel: Any, n_rows: int, *args: Any, **kwargs: Any) -> Any:
            previous = numba.get_num_threads()  # thread-local in Numba
            numba.set_num_threads(max(1, previous // 2))
            try:
                return run_parallel(kernel, n_rows, *args, **kwargs)
            finally:
                numba.set_num_threads(previous)

        # every module that imported run_parallel holds its own reference
        for module in [m for name, m in sys.modules.items() if name.startswith("stochrank")]:
            if getattr(module, "run_parallel", None) is run_parallel:
                module.run_parallel = on_half


def run_worker(library: str, threads: int, variant: str, rows: int, iterations: int) -> dict:
    """Train the three boosters under ``variant``; return iteration times and per-call phase times."""
    from stochrank._parallel import threading_layer

    cfg = Config(library, threads, None, rows, 136, iterations, 31, 0)
    phases: dict[str, dict[int, float]] = defaultdict(dict)
    # Phases are filed under the call in progress, whose index is the number of calls completed so far.
    times, timed, _, _ = train_timed(
        cfg, lambda timed: _instrument(phases, lambda: len(timed.times), variant)
    )
    return {
        "times": times,
        "call": timed.times,
        "phases": {
            name: [calls.get(i, 0.0) for i in range(len(timed.times))] for name, calls in phases.items()
        },
        "counted": {name: len(calls) for name, calls in phases.items()},
        "layer": threading_layer(),
    }


def table(results: dict[str, dict], library: str, warmup: int) -> str:
    """Milliseconds per iteration and per call phase (median over calls), one column per variant."""

    def ms(values: list[float]) -> str:
        return fmt(median(values[warmup:]) * 1e3)

    rows = [
        ["stochrank iteration", *(ms(r["times"]["stochrank"]) for r in results.values())],
        [
            f"{BUILTIN_NAMES[library]['ranking']} iteration",
            *(ms(r["times"]["ranking"]) for r in results.values()),
        ],
        ["L2 iteration", *(ms(r["times"]["l2"]) for r in results.values())],
        [
            "stochrank ÷ L2",
            *(
                fmt(median(r["times"]["stochrank"][warmup:]) / median(r["times"]["l2"][warmup:]))
                for r in results.values()
            ),
        ],
        ["objective call", *(ms(r["call"]) for r in results.values())],
    ]
    calls = {v: len(r["call"]) for v, r in results.items()}
    # phases of every call (a set-up phase such as the first call's query keys is left out)
    names = sorted({p for v, r in results.items() for p, n in r["counted"].items() if n >= calls[v]})
    for name in names:
        cells = []
        for variant, r in results.items():
            if SWITCHED_OFF.get(variant) == name:
                cells.append("off")
            else:
                cells.append(ms(r["phases"][name]) if r["counted"].get(name, 0) >= calls[variant] else "–")
        rows.append([f"of which {name}", *cells])
    return markdown_table(["ms (median)", *results], rows, "l" + "r" * len(results))


def main() -> None:
    """Parent: one worker per variant, then the table (printed, and written to RESULTS.md unless --quick)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", choices=tuple(VARIANTS), default="xgboost")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--section", help="RESULTS.md section to write (required unless --quick)")
    parser.add_argument("--raw", help="also write every worker's times to this JSON file")
    parser.add_argument("--quick", action="store_true", help="tiny smoke run; RESULTS.md is not touched")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_worker(args.library, args.threads, args.worker, args.rows, args.iterations)))
        return
    if args.quick:  # just above PARALLEL_MIN_ROWS, so that the pause and the release run
        args.threads, args.rows, args.iterations, args.warmup = 2, 25_000, 10, 3
    elif args.section is None:  # each machine, booster and workload has its own (see the commands above)
        parser.error(
            "name the RESULTS.md --section to write, e.g. call_profile_xgboost on a 16-core machine."
        )
    results = {}
    for variant in VARIANTS[args.library]:
        argv = [__file__, "--worker", variant, "--library", args.library, "--threads", str(args.threads)]
        argv += ["--rows", str(args.rows), "--iterations", str(args.iterations)]
        results[variant] = run_json_worker(argv, f"worker {variant}", worker_env(None))
        print(f"{variant}: done", flush=True)
    if args.raw:
        with open(args.raw, "w") as raw:
            json.dump(results, raw)
    layers = sorted({str(r["layer"]) for r in results.values()})
    body = "\n".join(
        [
            section_header(
                f"2. One stochrank objective call inside {args.library} training, phase by phase "
                f"(~{args.rows:,} rows, {args.threads} threads, {os.cpu_count()}-CPU machine)"
            ),
            (
                f"~{args.rows:,} rows × 136 features, the workload of section 2; its three boosters "
                f"(stochrank.ndcg(k=10), {BUILTIN_NAMES[args.library]['ranking']}, L2) trained side by side, "
                f"{args.iterations} iterations interleaved; one worker process per variant (Numba threading "
                f"layer in the workers: {', '.join(layers)}). Each phase is summed within an objective call "
                f"(a kernel's time excludes the pause before its launch); medians over the calls after "
                f"{args.warmup} warm-up iterations; 'off': the variant switches that phase off."
            ),
            "",
            table(results, args.library, args.warmup),
        ]
    )
    print("\n" + body)
    if not args.quick:
        write_results_section(args.section, body)


if __name__ == "__main__":
    main()
