"""Command line of the benchmark runner: ``python -m stochrank.bench [--preset quick|full] [options]``.

``python -m stochrank.bench`` runs the quick preset on the bundled MQ2008; ``--preset full`` is the
comparison in ``benchmarks/RESULTS.md``. Options given explicitly override the preset's. ``--metric``
(``ndcg@k``, ``mrr``, ``mrr@k``, ``err@k``; default ``ndcg@5``) sets the target every method early-stops on,
is selected on and is judged by, and the objective of the methods that can optimise it. Finished fits are
cached in ``<out>/runs``: rerunning a command (or adding a method, a seed, a fold) trains only what is new.
"""

from __future__ import annotations

import os

# XGBoost's bundled OpenMP runtime spins between iterations and slows Numba's threads; this must be set
# before any OpenMP runtime is loaded (see README, Threading).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import logging
import re
import shutil
import sys
import textwrap
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .methods import BASELINE, METHODS
from .outputs import write_outputs
from .protocol import Protocol, run_protocol
from .report import markdown, summarize
from .results import section_header, section_markers, write_section
from .stats import N_RESAMPLES
from .target import Target

QUICK_METHODS = ("lgb-lambdarank", "lgb-xendcg", "xgb-ndcg", "sr-lgb", "sr-lgb-sglb", "sr-xgb", "sr-cb-sglb")
PRESETS: dict[str, dict[str, Any]] = {
    # A few minutes on 2 cores: every fold, one seed, a small random search, at most 300 trees.
    "quick": {"dataset": "mq2008", "methods": QUICK_METHODS, "folds": None, "seeds": 1, "budget": 3,
              "max_rounds": 300, "patience": 50, "jobs": 2},
    # The RESULTS.md comparison: every method, every fold, 3 seeds, 30 configurations, the paper's 1000 trees.
    "full": {"dataset": "mq2008", "methods": None, "folds": None, "seeds": 3, "budget": 30,
             "max_rounds": 1000, "patience": 100, "jobs": 2},
}  # fmt: skip


def versions() -> str:
    """Return stochrank's version and those of Python, its core dependencies and the boosters it drives."""
    from importlib.metadata import PackageNotFoundError, version

    import stochrank

    def installed(package: str) -> str:
        try:
            return f"{package} {version(package)}"
        except PackageNotFoundError:
            return f"{package} not installed"

    core = ", ".join(installed(p) for p in ("numpy", "numba", "scipy", "scikit-learn"))
    boosters = ", ".join(installed(p) for p in ("lightgbm", "xgboost", "catboost"))
    return f"stochrank {stochrank.__version__} (Python {sys.version.split()[0]}; {core})\n{boosters}"


def _presets_text() -> str:
    """Describe every preset's values, for the end of ``--help``."""
    lines = ["presets (options given explicitly override the preset's values):"]
    for name, preset in PRESETS.items():
        methods = preset["methods"] or tuple(METHODS)
        folds = "all" if preset["folds"] is None else ",".join(map(str, preset["folds"]))
        lines += [
            f"  {name}: dataset {preset['dataset']}, folds {folds}, seeds {preset['seeds']}, "
            f"budget {preset['budget']} configurations per method and fold,",
            f"    max rounds {preset['max_rounds']}, patience {preset['patience']}, jobs {preset['jobs']};",
            textwrap.fill(
                f"methods ({len(methods)}): {', '.join(methods)}"
                + ("; each runs the targets it supports" if preset["methods"] is None else ""),
                width=100,
                initial_indent="    ",
                subsequent_indent="      ",
                break_on_hyphens=False,
            ),
        ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    from stochrank.datasets import DATASETS

    parser = argparse.ArgumentParser(
        prog="python -m stochrank.bench",
        description="Compare stochrank objectives with LambdaMART and other rankers on LightGBM, XGBoost and "
        "CatBoost: equal random-search budget, selection on validation, early stopping, several seeds, all "
        "folds.",
        epilog=_presets_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add(
        "--version",
        action="version",
        version=versions(),
        help="print the versions of stochrank and the boosters",
    )
    add(
        "--preset",
        choices=tuple(PRESETS),
        default="quick",
        help="defaults for the options below (default: quick)",
    )
    add("--dataset", choices=tuple(DATASETS), help="dataset name (default: mq2008, bundled)")
    add("--data-root", help="folder holding the dataset in its official layout (default: $STOCHRANK_DATA)")
    add("--methods", help=f"comma-separated method names or 'all'; available: {', '.join(METHODS)}")
    add("--budget", type=int, help="random-search configurations per method and fold")
    add("--seeds", type=int, help="number of seeds (0, 1, ...); the first one tunes")
    add(
        "--finalists",
        type=int,
        default=Protocol.finalists,
        help="configurations per method and fold retrained with every seed; the best mean validation "
        f"over the seeds is selected (default: {Protocol.finalists})",
    )
    add("--folds", help="comma-separated fold numbers or 'all'")
    add("--threads", type=int, default=1, help="threads per fit, for every booster and Numba (default: 1)")
    add("--jobs", type=int, help="fits run at once in separate processes")
    add(
        "--metric",
        help="target metric: ndcg@K, mrr, mrr@K or err@K (default: ndcg@5). Every method early-stops on it, "
        "is selected on it and is judged by it; the stochrank methods optimise it (sr-lgb-ndcg and "
        "sr-xgb-ndcg optimise NDCG at its cut-off, the whole list for MRR), the baselines keep their own "
        "objective. The test table also reports NDCG@1/3/5/10, ERR@10 and MRR.",
    )
    add("--k", type=int, help="shorthand for --metric ndcg@K")
    add("--max-rounds", type=int, help="most trees per fit")
    add("--patience", type=int, help="early-stopping rounds")
    add("--max-queries", type=int, help="use only the first N queries of every split (smoke tests)")
    add("--normalize", choices=("query",), help="query-level min-max feature normalisation")
    add(
        "--n-resamples",
        type=int,
        default=N_RESAMPLES,
        help=f"randomization-test resamples; exact enumeration when 2^n <= this (default: {N_RESAMPLES})",
    )
    add("--out", help="output folder (default: bench_runs/<dataset>)")
    add("--results", help="also write the report into this Markdown file's <dataset>_comparison section")
    add(
        "--section",
        help="name of that section instead (letters, digits, '_', '-'; not 'runs', not ending in "
        "'_comparison'), for a run that must not replace the comparison of record of its dataset and metric, "
        "e.g. one with another method list or budget; its tables go to <out>/<NAME>/, beside the shared fit "
        "cache <out>/runs/",
    )
    add("--no-progress", action="store_true", help="no progress bars")
    return parser


def _positive(parser: argparse.ArgumentParser, name: str, value: int | None) -> None:
    if value is not None and value < 1:
        parser.error(f"--{name.replace('_', '-')} must be a positive integer; got {value}.")


def parse_args(argv: Sequence[str] | None = None) -> tuple[Protocol, list[str], Path, argparse.Namespace]:
    """Validate the command line and build the protocol, the method list and the output folder."""
    from stochrank.datasets import DATASETS

    parser = _parser()
    args = parser.parse_args(argv)
    preset = PRESETS[args.preset]
    for name in (
        "budget",
        "seeds",
        "finalists",
        "threads",
        "jobs",
        "k",
        "max_rounds",
        "patience",
        "max_queries",
        "n_resamples",
    ):
        _positive(parser, name, getattr(args, name))
    dataset = args.dataset or preset["dataset"]
    spec = DATASETS[dataset]
    if args.k is not None and args.metric is not None:
        parser.error(f"--k {args.k} and --metric {args.metric}: give one (--k K means --metric ndcg@K).")
    metric = args.metric or (f"ndcg@{args.k}" if args.k is not None else "ndcg@5")
    try:
        target = Target.parse(metric)
    except ValueError as exc:
        parser.error(str(exc))

    methods_arg = args.methods or (",".join(preset["methods"]) if preset["methods"] else "all")
    methods = (
        list(METHODS) if methods_arg == "all" else [m.strip() for m in methods_arg.split(",") if m.strip()]
    )
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        parser.error(f"--methods: unknown method(s) {unknown}; choose from {', '.join(METHODS)} or 'all'.")
    if len(set(methods)) != len(methods):
        parser.error(f"--methods lists a method twice: {methods_arg}.")
    reasons = {m: METHODS[m].unsupported(target) for m in methods}
    skipped = {m: why for m, why in reasons.items() if why is not None}
    if skipped and args.methods and args.methods != "all":  # asked for by name: an error, not a silent skip
        parser.error(
            "; ".join(f"{m} does not run --metric {target.spec}: {why}" for m, why in skipped.items())
        )
    methods = [m for m in methods if m not in skipped]
    if not methods:
        parser.error(f"no method of the selection runs --metric {target.spec}.")
    args.skipped = skipped
    if args.section is not None:
        _check_section(parser, args.section, args.results, f"## {dataset} comparison, {target.label} (")
    if BASELINE in methods:  # the baseline first: every p-value is against it
        methods.remove(BASELINE)
        methods.insert(0, BASELINE)

    folds_arg = args.folds or "all"
    if folds_arg == "all":
        folds = tuple(spec.folds)
    else:
        try:
            folds = tuple(int(f) for f in folds_arg.split(","))
        except ValueError:
            parser.error(f"--folds must be 'all' or comma-separated integers; got {folds_arg!r}.")
        bad = [f for f in folds if f not in spec.folds]
        if bad or len(set(folds)) != len(folds):
            parser.error(
                f"--folds {folds_arg!r}: {dataset} has folds {', '.join(map(str, spec.folds))} (each once)."
            )

    try:
        protocol = _protocol(args, preset, dataset, folds, target.spec)
    except ValueError as exc:
        parser.error(str(exc))
    out = Path(args.out) if args.out else Path("bench_runs") / (dataset + _suffix(target))
    return protocol, methods, out, args


def _check_section(parser: argparse.ArgumentParser, section: str, results: str | None, heading: str) -> None:
    """Refuse a ``--section`` that is no section name, or that would replace what the bench must keep.

    Names ending in ``_comparison`` are the comparisons of record; ``runs`` is the fit cache's folder; an
    existing section is replaced only when its title starts with ``heading`` (this dataset and metric).
    """
    if not re.fullmatch(r"[A-Za-z0-9_-]+", section):
        parser.error(f"--section {section!r}: use letters, digits, '_' and '-' only (it names a section).")
    if not results:
        parser.error("--section names a section of the --results file: give --results too.")
    if section.endswith("_comparison") or section.lower() == "runs":
        parser.error(
            f"--section {section!r}: names ending in '_comparison' are the comparisons of record, and 'runs' "
            "is the fit cache's folder."
        )
    path = Path(results)
    text = path.read_text() if path.exists() else ""
    start, _ = section_markers(section)
    if start in text and not text.split(start, 1)[1].lstrip().startswith(heading):
        parser.error(
            f"--section {section!r}: {results} has that section from another script or for another dataset "
            "or metric; name a new one."
        )


def _suffix(target: Target) -> str:
    """Return what names a non-default target's files and RESULTS.md section (``-mrr``, ``-err10``)."""
    return "" if target.spec == "ndcg@5" else "-" + target.spec.replace("@", "")


def _protocol(
    args: argparse.Namespace, preset: dict[str, Any], dataset: str, folds: tuple[int, ...], metric: str
) -> Protocol:
    return Protocol(
        dataset=dataset,
        folds=folds,
        seeds=tuple(range(args.seeds or preset["seeds"])),
        budget=args.budget or preset["budget"],
        metric=metric,
        max_rounds=args.max_rounds or preset["max_rounds"],
        patience=args.patience or preset["patience"],
        normalize=args.normalize,
        max_queries=args.max_queries,
        root=args.data_root,
        threads=args.threads,
        jobs=args.jobs or preset["jobs"],
        finalists=args.finalists,
    )


def _tqdm_progress(items: Iterable[Any], total: int, label: str) -> Iterable[Any]:
    from tqdm import tqdm

    bar: Iterable[Any] = tqdm(items, total=total, desc=label, unit="fit", dynamic_ncols=True)
    return bar


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    protocol, methods, out, args = parse_args(argv)
    from stochrank.datasets import load

    logging.basicConfig(format="%(message)s")  # shows the one-time "compiling Numba kernels" notice
    logging.getLogger("stochrank").setLevel(logging.INFO)

    for method, why in args.skipped.items():
        print(f"Not run: {method} ({why}).")
    start = time.perf_counter()
    try:  # a missing dataset is a usage error: the loader's message says where to get it, no traceback
        load(protocol.dataset, protocol.folds[0], "test", root=protocol.root)
        outcome = run_protocol(protocol, methods, out / "runs", None if args.no_progress else _tqdm_progress)
    except FileNotFoundError as exc:
        print(f"python -m stochrank.bench: error: {exc}", file=sys.stderr)
        return 2
    summary = summarize(outcome, n_resamples=args.n_resamples)
    # A run with its own section keeps its tables apart from the record run's (the fit cache is shared).
    paths = write_outputs(summary, out / args.section if args.section else out)
    seconds = time.perf_counter() - start
    print("\n" + markdown(summary, None))
    loaded = len(outcome.runs) - outcome.trained
    print(f"Trained {outcome.trained} fit(s), {loaded} loaded from {out / 'runs'}; {seconds:.0f} s. "
          f"Wrote {', '.join(str(p) for p in paths.values())}.")  # fmt: skip
    if args.results:
        suffix = _suffix(protocol.target)
        name = args.section or f"{(protocol.dataset + suffix).replace('-', '_')}_comparison"
        # The run folder is not version-controlled: the figure goes next to the results file.
        stem = (
            f"section_{args.section}" if args.section else f"{protocol.dataset}{suffix}"
        )  # never a record's
        figure = Path(args.results).resolve().parent / f"{stem}_learning_curves.png"
        shutil.copyfile(paths["learning_curves.png"], figure)
        settings = f"{args.preset} preset"
        if args.section:
            settings += (
                f"; {protocol.budget} configuration{'s' if protocol.budget > 1 else ''} per method × "
                f"{len(protocol.seeds)} "
                f"seed{'s' if len(protocol.seeds) > 1 else ''}; methods "
                f"{', '.join(methods)}"
            )
        title = f"{protocol.dataset} comparison, {protocol.target.label} ({settings})"
        body = section_header(title, runner=True) + "\n" + markdown(summary, figure.name)
        body += f"\nWall time {seconds:.0f} s for {outcome.trained} fit(s) trained in this call.\n"
        write_section(args.results, name, body)
        print(f"[{name}] section written to {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
