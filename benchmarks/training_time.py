"""Per-iteration training time of stochrank.ndcg(k=10) against the boosters' own objectives.

LightGBM: stochrank vs ``lambdarank`` vs ``regression`` (L2); XGBoost (hist, depth 6): stochrank vs
``rank:ndcg`` vs ``reg:squarederror``; the same synthetic ~200k × 136 ranking data and tree parameters
for all three, at each thread count of ``--threads`` (booster threads = Numba threads). Goals: stochrank
≤ 0.8× the built-in ranking objective and ≤ 1.15× plain regression.

Each configuration (library, threads, environment) runs in a fresh worker subprocess so that
environment variables such as ``OMP_WAIT_POLICY=PASSIVE`` apply before any OpenMP pool starts; with
more than one thread both libraries run with and without it, unless ``--default-env-only`` (XGBoost's bundled
libgomp busy-waits and competes with Numba's threads; on a shared machine any spinning team competes with
other tenants). stochrank quiets the other OpenMP runtime around its kernels (``stochrank._openmp``); with
XGBoost at more than one thread a third worker runs with that switched off, to measure what it buys. The
parent runs the workers round-robin (``--runs`` rounds × every configuration). Inside a worker the
three boosters train side by side, iterations interleaved round-robin (``Booster.update`` called in
turn, as ``lgb.train`` / ``xgb.train`` call it, each call timed), so load bursts on a shared machine hit
all three alike. A run's figure is the median iteration after ``--warmup`` iterations; times are
medians over runs and ratios medians of per-run ratios (objectives within one worker, wait policies
between the workers of one round). The stochrank objective call is timed alone inside training too.

    python benchmarks/training_time.py            # RESULTS.md tables (shared 2-vCPU machine)
    python benchmarks/training_time.py --quick    # smoke run
    # on a 16-core machine (RESULTS.md sections training_time_16_cores, training_time_2m_rows):
    python benchmarks/training_time.py --threads 2 16 --iterations 30 --section training_time_16_cores
    python benchmarks/training_time.py --rows 2000000 --libraries lightgbm --threads 2 16 --iterations 15 \
        --warmup 3 --runs 2 --default-env-only --section training_time_2m_rows
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
from _common import MSLR_MEAN_DOCS, median, ranking_data, run_json_worker, warm_up, write_results_section

from stochrank.bench.results import fmt, markdown_table, section_header
from stochrank.datasets.synthetic import grade_features

GOAL_VS_RANKING = 0.8
GOAL_VS_L2 = 1.15
OMP_ENV_KEYS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
OBJECTIVES = ("stochrank", "ranking", "l2")
BUILTIN_NAMES = {
    "lightgbm": {"ranking": "lambdarank", "l2": "regression"},
    "xgboost": {"ranking": "rank:ndcg", "l2": "reg:squarederror"},
}


@dataclass(frozen=True)
class Config:
    """One worker: library, thread count, OpenMP wait policy (None: unset) and the workload."""

    library: str
    threads: int
    wait_policy: str | None
    rows: int
    features: int
    iterations: int
    num_leaves: int
    seed: int
    quiet: bool = True  # stochrank's OpenMP quieting (stochrank._openmp) on

    @property
    def env(self) -> str:
        """The environment column: wait policy, and whether the quieting was switched off."""
        policy = f"OMP_WAIT_POLICY={self.wait_policy}" if self.wait_policy else "default"
        return policy if self.quiet else f"{policy}, quieting off"

    @property
    def label(self) -> str:
        """Human-readable name for progress lines."""
        return f"{self.library}, {self.threads} thread(s), {self.env}"


class TimedObjective:
    """Wraps a booster objective and records the wall time of every call (seconds)."""

    def __init__(self, objective) -> None:
        self.objective = objective
        self.times: list[float] = []

    def __call__(self, preds, data):
        """Call the wrapped objective as the booster does, timing it."""
        t0 = time.perf_counter()
        out = self.objective(preds, data)
        self.times.append(time.perf_counter() - t0)
        return out


# ----------------------------------------------------------------------------------- worker
def timing_data(cfg: Config):
    """``(X, labels, sizes)``: about ``cfg.rows`` MSLR-shaped rows with ``cfg.features`` features."""
    n_queries = max(2, cfg.rows // MSLR_MEAN_DOCS)
    sizes, _, labels = ranking_data(n_queries, cfg.seed)
    X = grade_features(labels, cfg.features, np.random.default_rng(cfg.seed + 1))
    return X, labels, sizes


def interleave(steps: dict, iterations: int) -> dict[str, list[float]]:
    """Seconds of each boosting iteration of every booster, iterations interleaved round-robin:
    iteration i of each objective runs before iteration i+1 of any (the order rotating with i), so
    load changes on a shared machine hit all objectives alike."""
    names = list(steps)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(iterations):
        for j in range(len(names)):
            name = names[(i + j) % len(names)]
            t0 = time.perf_counter()
            steps[name](i)
            times[name].append(time.perf_counter() - t0)
    return times


def train_lightgbm(cfg: Config, X, labels, sizes, timed: TimedObjective) -> dict[str, list[float]]:
    """Iteration times of stochrank, lambdarank and regression boosters sharing one Dataset."""
    import lightgbm as lgb

    ds = lgb.Dataset(
        X, labels, group=sizes, free_raw_data=False, params={"verbose": -1, "num_threads": cfg.threads}
    ).construct()
    base = {
        "num_leaves": cfg.num_leaves,
        "learning_rate": 0.1,
        "force_col_wise": True,
        "num_threads": cfg.threads,
        "verbose": -1,
        "seed": cfg.seed,
    }
    # What lgb.train does with a callable objective: objective "none" plus update(fobj=...).
    boosters = {
        name: lgb.Booster({**base, "objective": BUILTIN_NAMES["lightgbm"].get(name, "none")}, ds)
        for name in OBJECTIVES
    }
    steps = {
        name: (lambda i, b=b, f=(timed if name == "stochrank" else None): b.update(fobj=f))
        for name, b in boosters.items()
    }
    return interleave(steps, cfg.iterations)


def train_xgboost(cfg: Config, X, labels, sizes, timed: TimedObjective) -> dict[str, list[float]]:
    """Iteration times of stochrank, rank:ndcg and reg:squarederror boosters sharing one QuantileDMatrix."""
    import xgboost as xgb

    qid = np.repeat(np.arange(sizes.size), sizes)
    dtrain = xgb.QuantileDMatrix(X, labels, qid=qid, nthread=cfg.threads)
    base = {"tree_method": "hist", "max_depth": 6, "eta": 0.1, "nthread": cfg.threads, "seed": cfg.seed}
    params = {name: {**base, "objective": BUILTIN_NAMES["xgboost"][name]} for name in ("ranking", "l2")}
    params["stochrank"] = {**base, "base_score": 0.0}
    # What xgb.train does: Booster(params, [dtrain]) then update(dtrain, i, fobj=...).
    boosters = {name: xgb.Booster(params[name], [dtrain]) for name in OBJECTIVES}
    steps = {
        name: (lambda i, b=b, f=(timed if name == "stochrank" else None): b.update(dtrain, i, fobj=f))
        for name, b in boosters.items()
    }
    return interleave(steps, cfg.iterations)


def run_worker(cfg: Config) -> dict:
    """Train the three objectives under ``cfg`` (in this process, interleaved) and return the raw
    iteration times and stochrank's objective-call times (seconds)."""
    import stochrank
    import stochrank.objectives._base

    if not cfg.quiet:
        stochrank._parallel.quiet_foreign_openmp = lambda: None
        stochrank.objectives._base.release_kernel_threads = lambda n_rows: None
    times, timed, rows, queries = train_timed(cfg)
    return {"config": asdict(cfg), "rows": rows, "queries": queries, "times": times, "objective": timed.times}


def train_timed(
    cfg: Config, prepare: Callable[[TimedObjective], None] = lambda timed: None
) -> tuple[dict, TimedObjective, int, int]:
    """Train the three objectives under ``cfg`` after warming stochrank up and calling ``prepare`` on it.

    Returns the iteration times, the timed stochrank objective (its call times), and the rows and queries.
    """
    import numba

    import stochrank

    numba.set_num_threads(cfg.threads)
    X, labels, sizes = timing_data(cfg)
    timed = TimedObjective(stochrank.ndcg(k=10))
    warm_up(timed.objective, labels, sizes)
    prepare(timed)
    train = train_lightgbm if cfg.library == "lightgbm" else train_xgboost
    return train(cfg, X, labels, sizes, timed), timed, int(labels.size), int(sizes.size)


def worker_env(wait_policy: str | None) -> dict[str, str]:
    """This process's environment without the caller's OpenMP wait settings, plus ``wait_policy`` if any."""
    env = {k: v for k, v in os.environ.items() if k not in OMP_ENV_KEYS}
    if wait_policy:
        env["OMP_WAIT_POLICY"] = wait_policy
    return env


def launch(cfg: Config) -> dict:
    """Run one worker in a fresh interpreter with the configuration's OpenMP environment."""
    argv = [__file__, "--worker", json.dumps(asdict(cfg))]
    result: dict = run_json_worker(argv, f"worker {cfg.label}", worker_env(cfg.wait_policy))
    return result


# ---------------------------------------------------------------------------------- summary
def per_run_medians(results: list[dict], warmup: int) -> dict[tuple, dict[int, dict[str, dict[str, float]]]]:
    """``{(library, threads, policy, quiet): {round: {objective: {"iter": ms, "objective": ms}}}}``:
    each run's median iteration (and stochrank's median objective call) after ``warmup`` iterations."""
    out: dict[tuple, dict[int, dict[str, dict[str, float]]]] = {}
    for res in results:
        c = res["config"]
        key = (c["library"], c["threads"], c["wait_policy"], c["quiet"])
        per = out.setdefault(key, {}).setdefault(res["round"], {})
        for name, t in res["times"].items():
            per[name] = {"iter": median(t[warmup:]) * 1e3}
        per["stochrank"]["objective"] = median(res["objective"][warmup:]) * 1e3
    return out


def _over_runs(per_round: dict[int, dict], value) -> float:
    """Median over rounds of ``value(round_results)``."""
    return median([value(r) for r in per_round.values()])


def tables(runs, rows: int, queries: int, cfg: Config, warmup: int, title: str) -> str:
    """The RESULTS.md body: main table, verdicts, and the wait-policy and quieting comparisons (where run).

    Times are medians over runs; every ratio is the median of per-run ratios, each taken between
    runs made side by side (same worker process for objectives, same round for wait policies).
    """
    order = sorted(runs, key=lambda k: (k[0], k[1], k[2] or "", not k[3]))
    main_rows, verdicts = [], []
    for key in order:
        lib, threads, policy, quiet = key
        per = runs[key]
        ms = {name: _over_runs(per, lambda r, name=name: r[name]["iter"]) for name in OBJECTIVES}
        obj = _over_runs(per, lambda r: r["stochrank"]["objective"])
        rest = _over_runs(per, lambda r: r["stochrank"]["iter"] - r["stochrank"]["objective"])
        ratio_r = _over_runs(per, lambda r: r["stochrank"]["iter"] / r["ranking"]["iter"])
        ratio_l2 = _over_runs(per, lambda r: r["stochrank"]["iter"] / r["l2"]["iter"])
        env = f"OMP_WAIT_POLICY={policy}" if policy else "default"
        env = env if quiet else f"{env}, quieting off"
        main_rows.append(
            [
                lib,
                str(threads),
                env,
                fmt(ms["stochrank"]),
                fmt(obj),
                fmt(rest),
                fmt(ms["ranking"]),
                fmt(ms["l2"]),
                fmt(ratio_r),
                fmt(ratio_l2),
            ]
        )
        ok_r = "met" if ratio_r <= GOAL_VS_RANKING else "missed"
        ok_l2 = "met" if ratio_l2 <= GOAL_VS_L2 else "missed"
        verdicts.append(
            f"- {lib}, {threads} thread(s), {env}: {ratio_r:.2f}× {BUILTIN_NAMES[lib]['ranking']} "
            f"({ok_r}), {ratio_l2:.2f}× {BUILTIN_NAMES[lib]['l2']} ({ok_l2})."
        )
    headers = [
        "library",
        "threads",
        "OpenMP env",
        "stochrank ms/iter",
        "objective call ms",
        "rest ms",
        "built-in ranking ms/iter",
        "L2 ms/iter",
        "÷ ranking",
        "÷ L2",
    ]
    main = markdown_table(headers, main_rows, "lrl" + "r" * 7)

    wait = _paired_table(runs, order, ("default", "PASSIVE"), lambda k: (k[0], k[1], "PASSIVE", True))
    quieting = _paired_table(runs, order, ("quieting on", "off"), lambda k: (k[0], k[1], None, False))
    n_runs = min(len(per) for per in runs.values())
    varied = [name for name, table in (("wait policies", wait), ("the quieting", quieting)) if table]
    compared = f", {' and '.join(varied)} within one round" if varied else ""
    return "\n".join(
        [
            section_header(title),
            (
                f"{rows:,} rows ({queries:,} queries of ~120 docs) × {cfg.features} features (float32; a "
                "quarter noisy copies of the label); threads as listed (booster threads = Numba threads). "
                f"LightGBM: num_leaves {cfg.num_leaves}, learning_rate 0.1, force_col_wise, max_bin 255, "
                "lambdarank with its defaults (truncation level 30, exp gain). XGBoost: hist, max_depth 6, "
                "eta 0.1, QuantileDMatrix(qid), rank:ndcg with its defaults (topk pairs, 32 per sample), "
                f"stochrank with base_score 0. {cfg.iterations} iterations per run, median iteration after "
                f"{warmup} warm-up iterations; median over {n_runs} runs; ratios are medians of per-run "
                f"ratios (objectives compared within one worker{compared}). Workers "
                "(one fresh process per configuration and round) run round-robin; inside a worker the three "
                "boosters train side by side, iterations interleaved round-robin (`Booster.update` timed, "
                "as `lgb.train`/`xgb.train` call it). 'objective call' is stochrank's call timed inside "
                "training; 'rest' = iteration − objective call."
            ),
            "",
            main,
            "",
            "Goals (≤ 0.8× the built-in ranking objective, ≤ 1.15× plain L2):",
            "",
            *verdicts,
            *_comparison(
                wait,
                "With and without `OMP_WAIT_POLICY=PASSIVE` (same rounds as above; at 1 thread no OpenMP "
                "team exists, so the policy is not varied there):",
            ),
            *_comparison(
                quieting,
                "With and without stochrank's OpenMP quieting (XGBoost only: LightGBM's workers are Numba's "
                "own threads; same rounds, default environment):",
            ),
        ]
    )


def _comparison(table: str | None, caption: str) -> list[str]:
    """The lines of a paired comparison under its caption, or none when no worker ran its partner."""
    return ["", caption, "", table] if table else []


def _paired_table(runs, order, names: tuple[str, str], partner) -> str | None:
    """Default-environment runs (quieting on) against ``partner(key)``'s runs, round by round (None: no
    partner ran)."""
    rows = []
    for key in order:
        lib, threads, policy, quiet = key
        if policy is not None or not quiet or partner(key) not in runs:
            continue
        first, second = runs[key], runs[partner(key)]
        paired = [r for r in first if r in second]
        for name in OBJECTIVES:
            a = median([first[r][name]["iter"] for r in paired])
            b = median([second[r][name]["iter"] for r in paired])
            ratio = median([first[r][name]["iter"] / second[r][name]["iter"] for r in paired])
            label = "stochrank ndcg@10" if name == "stochrank" else BUILTIN_NAMES[lib][name]
            calls = [
                fmt(median([side[r][name]["objective"] for r in paired])) if name == "stochrank" else "–"
                for side in (first, second)
            ]
            rows.append([lib, str(threads), label, fmt(a), fmt(b), fmt(ratio), *calls])
    if not rows:
        return None
    a, b = names
    headers = ["library", "threads", "objective", f"{a} ms/iter", f"{b} ms/iter", f"{a} ÷ {b}"]
    headers += [f"{a} objective call ms", f"{b} objective call ms"]
    return markdown_table(headers, rows, "lrl" + "r" * 5)


def configurations(args) -> list[Config]:
    """Every library of ``args.libraries`` at every thread count with the default environment, plus
    (unless ``args.default_env_only``) ``OMP_WAIT_POLICY=PASSIVE`` wherever an OpenMP team exists (more
    than one thread), plus XGBoost with stochrank's OpenMP quieting switched off there."""
    out = []
    workload = (args.rows, args.features, args.iterations, args.num_leaves, args.seed)
    for library in args.libraries:
        for threads in args.threads:
            variants = [(None, True)]
            if threads > 1 and not args.default_env_only:
                variants.append(("PASSIVE", True))
                if library == "xgboost":
                    variants.append((None, False))
            out += [Config(library, threads, policy, *workload, quiet=quiet) for policy, quiet in variants]
    return out


def main() -> None:
    """Parent: run the workers round-robin, print the tables, refresh RESULTS.md. Worker: one config."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--features", type=int, default=136)
    parser.add_argument("--iterations", type=int, default=40, help="boosting iterations per run")
    parser.add_argument("--runs", type=int, default=3, help="rounds over all configurations")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--libraries", nargs="+", choices=tuple(BUILTIN_NAMES), default=list(BUILTIN_NAMES))
    parser.add_argument(
        "--default-env-only",
        action="store_true",
        help="only the default environment (no OMP_WAIT_POLICY=PASSIVE or quieting-off workers)",
    )
    parser.add_argument(
        "--section",
        default="training_time",
        help="RESULTS.md section to write (one per machine or workload, e.g. training_time_16_cores)",
    )
    parser.add_argument("--raw", help="also write every worker's iteration times to this JSON file")
    parser.add_argument("--warmup", type=int, default=5, help="iterations left out of each run's median")
    parser.add_argument("--num-leaves", type=int, default=31, help="LightGBM num_leaves")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="tiny smoke run; RESULTS.md is not touched")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_worker(Config(**json.loads(args.worker)))))
        return
    if args.quick:
        args.rows, args.features, args.iterations, args.runs, args.warmup = 6_000, 20, 10, 1, 3

    configs = configurations(args)
    results = []
    for r in range(args.runs):
        for i in range(len(configs)):
            cfg = configs[(r + i) % len(configs)]
            t0 = time.perf_counter()
            results.append({**launch(cfg), "round": r})
            print(f"round {r + 1}/{args.runs}: {cfg.label}: {time.perf_counter() - t0:.1f} s", flush=True)
    if args.raw:
        with open(args.raw, "w") as raw:
            json.dump(results, raw)
    rows = results[0]["rows"]
    title = (
        "2. Per-iteration training time, stochrank.ndcg(k=10) vs built-in objectives "
        f"({rows:,} rows, {os.cpu_count()}-CPU machine)"
    )
    body = tables(
        per_run_medians(results, args.warmup), rows, results[0]["queries"], configs[0], args.warmup, title
    )
    print("\n" + body)
    if not args.quick:
        write_results_section(args.section, body)


if __name__ == "__main__":
    main()
