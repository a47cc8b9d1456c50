"""Benchmark runner: stochrank against LambdaMART and other rankers, one command, fair and resumable.

``python -m stochrank.bench`` (quick preset, bundled MQ2008, a few minutes on 2 cores) or ``python -m
stochrank.bench --preset full`` (every method, 5 folds, 3 seeds). Every method gets the same random-search
budget over the same booster space, is early-stopped on the validation target metric (``--metric``,
default NDCG@5) and selected on its mean over several seeds (the first seed's best configurations are rerun
with every seed) on every fold; the report gives test
NDCG@1/3/5/10, ERR@10 and MRR (mean ± std), paired t-test and randomization-test p-values against LightGBM's
lambdarank, learning curves and training times, with the metric conventions printed under the tables. See
:mod:`stochrank.bench.protocol` for the protocol and :mod:`stochrank.bench.methods` for the methods and their
search spaces.

Modules: ``target`` (``--metric``: what is optimised, early-stopped on, selected on and judged), ``methods``
(what is compared), ``spaces`` (their random-search spaces), ``trainers`` (one fit per booster), ``cache``
(finished fits on disk), ``protocol`` (configurations, seeds, folds), ``selection`` (which configuration is
kept), ``stats`` (paired tests), ``report`` (summary and Markdown text), ``pairs`` (same-booster verdicts),
``outputs`` (the files of a run) and ``results`` (RESULTS.md sections, headers and tables, shared with the
scripts in ``benchmarks/``).
"""

from .cache import Run
from .methods import BASELINE, BOOSTER_SPACES, METHODS, Method, Recipe
from .outputs import write_outputs
from .protocol import Outcome, Protocol, run_protocol
from .report import Summary, summarize

__all__ = [
    "BASELINE",
    "BOOSTER_SPACES",
    "METHODS",
    "Method",
    "Outcome",
    "Protocol",
    "Recipe",
    "Run",
    "Summary",
    "run_protocol",
    "summarize",
    "write_outputs",
]
