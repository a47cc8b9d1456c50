"""Benchmark runner: stochrank against LambdaMART and other rankers, one command, fair and resumable.

``python -m stochrank.bench`` (quick preset, bundled MQ2008, a few minutes on 2 cores) or
``python -m stochrank.bench --preset full`` (every method, 5 folds, 3 seeds). Every method gets the same
random-search budget over the same booster space, is early-stopped and selected on validation NDCG@k,
and is rerun with several seeds on every fold; the report gives test NDCG@1/3/5/10, ERR@10 and MRR
(mean ± std), paired t-test and randomization-test p-values against LightGBM's lambdarank, learning curves
and training times, with the metric conventions printed under the tables. See
:mod:`stochrank.bench.protocol` for the protocol and :mod:`stochrank.bench.methods` for the methods and
their search spaces.
"""

from .methods import BASELINE, BOOSTER_SPACES, METHODS, Method, Recipe
from .protocol import Outcome, Protocol, Run, run_protocol
from .report import Summary, summarize, write_outputs

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
