"""Does optimising ERR@10 directly pay on ERR@10? The same configurations trained for NDCG@5 and for ERR@10.

The tuned synthetic ERR@10 comparison of benchmarks/RESULTS.md (``--metric err@10``, LightGBM pair) reads a
loss for ``stochrank.err(k=10)`` against ``lambdarank``. This script asks where it comes from, from the
cached first-seed fits of that comparison and of the synthetic NDCG@5 comparison (trains nothing; a missing
fit stops it with the bench command to run). Both comparisons draw the same booster configurations from one
stream per booster (configurations 0-29 of the NDCG@5 run are those of the ERR@10 run), and stochrank's
training cut-off is drawn as k, 2k or 4k in both, so configuration by configuration:

* **ERR@10 run against NDCG@5 run, same method**: the change of test ERR@10 when the target goes from
  NDCG@5 to ERR@10. For ``sr-lgb`` that changes the objective (``stochrank.ndcg(k=5)`` at cut-off 5/10/20
  becomes ``stochrank.err(k=10)`` at 10/20/40) and the early stopping; for ``lgb-lambdarank`` only the early
  stopping (it optimises NDCG either way). A sign test (:func:`scipy.stats.binomtest`) over the
  configurations.
* **stochrank against lambdarank, same run**: how often ``sr-lgb`` is ahead at a configuration both drew, on
  validation and on test ERR@10.

It describes the searches configuration by configuration; the tuned verdicts are the comparisons' own.

    python benchmarks/direct_objective.py    # ~1 min; after the two bench commands it reads (RESULTS.md)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from _common import cached_comparison, write_results_section
from scipy import stats

from stochrank.bench.cache import Run
from stochrank.bench.results import markdown_table, section_header

CONFIGS = 30
METHODS = "lgb-lambdarank,sr-lgb"
COMMON = ["--dataset", "synthetic-nonlinear", "--methods", METHODS, "--budget", str(CONFIGS), "--seeds", "1"]
LABEL = "ERR@10"


def first_seed(argv: Sequence[str]) -> dict[tuple[str, int], Run]:
    """The first-seed fits of a cached comparison by (method, configuration)."""
    protocol, _, _, outcome = cached_comparison(argv)
    return {(r.method, r.config_index): r for r in outcome.runs if r.seed == protocol.seeds[0]}


def test_err(runs: dict[tuple[str, int], Run], method: str, config: int) -> float:
    """Test ERR@10 of one first-seed fit, over the queries that count."""
    return runs[method, config].metric_means()[LABEL]


def sign_test(d: np.ndarray) -> str:
    """``ahead / behind`` and the two-sided sign-test p-value (equal figures dropped)."""
    ahead, behind = int(np.sum(d > 0)), int(np.sum(d < 0))
    p = stats.binomtest(ahead, ahead + behind).pvalue if ahead + behind else 1.0
    return f"{ahead} / {behind} (p = {p:.1g})"


def main() -> None:
    """Print (and write to RESULTS.md) the configuration-by-configuration tables."""
    ndcg = first_seed(COMMON)
    err = first_seed([*COMMON, "--metric", "err@10"])
    configs = range(CONFIGS)
    across = []
    for method in METHODS.split(","):
        d = np.array([test_err(err, method, c) - test_err(ndcg, method, c) for c in configs])
        across.append([f"`{method}`", sign_test(d), f"{np.median(d):+.4f}", f"{np.mean(d):+.4f}"])
    vali = np.array([err["sr-lgb", c].vali - err["lgb-lambdarank", c].vali for c in configs])
    test = np.array([test_err(err, "sr-lgb", c) - test_err(err, "lgb-lambdarank", c) for c in configs])
    within = [
        ["validation ERR@10", sign_test(vali), f"{np.median(vali):+.4f}", f"{np.mean(vali):+.4f}"],
        ["test ERR@10", sign_test(test), f"{np.median(test):+.4f}", f"{np.mean(test):+.4f}"],
    ]
    body = "\n\n".join(
        [
            section_header("Optimising ERR@10 directly, configuration by configuration (issue 9)"),
            "First-seed fits of the synthetic ERR@10 comparison (`python -m stochrank.bench --preset full "
            f"--dataset synthetic-nonlinear --metric err@10 --methods {METHODS} --budget 30 --seeds 3 "
            "--threads 1`) and of configurations 0-29 of the synthetic NDCG@5 comparison (the same booster "
            "draws; stochrank's cut-off drawn as k, 2k or 4k in both). Test ERR@10 over the 9,000 test "
            "queries of the one data fold; ahead / behind: configurations (of 30) where the first figure is "
            "the higher / the lower, with the two-sided sign test over the configurations whose figures "
            "differ.",
            "**Target ERR@10 against target NDCG@5, same method and configuration** (Δ test ERR@10 = ERR@10 "
            "run − NDCG@5 run; `sr-lgb` changes its objective and early stopping, `lgb-lambdarank` only its "
            "early stopping):",
            markdown_table(["method", "ERR@10 run ahead / behind", "median Δ", "mean Δ"], across, "lrrr"),
            "**`sr-lgb` (`stochrank.err(k=10)`) against `lgb-lambdarank`, same configuration, ERR@10 run**:",
            markdown_table(["figure", "`sr-lgb` ahead / behind", "median Δ", "mean Δ"], within, "lrrr"),
        ]
    )
    print(body)
    write_results_section("direct_objective", body)


if __name__ == "__main__":
    main()
