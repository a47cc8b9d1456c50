"""The report of a benchmark run: summary statistics, significance tests, verdicts and the Markdown text."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .cache import Run
from .methods import BASELINE, METHODS
from .pairs import booster_table, resolution_table
from .protocol import Outcome
from .results import markdown_table
from .spaces import BOOSTER_SPACES, NEWTON_SPACE, SPACE_NOTES
from .stats import (
    ALPHA,
    N_RESAMPLES,
    holm,
    paired_arrays,
    paired_randomization,
    paired_t,
    randomization_is_exact,
)
from .trainers import empty_queries

__all__ = ["ALPHA", "MethodSummary", "Summary", "markdown", "summarize"]


@dataclass
class MethodSummary:
    """One method's selected fits, test metrics (mean, std, per query) and tests against the baseline."""

    name: str
    runs: list[Run]  # the selected configuration's fits, every fold and seed
    all_fits: list[Run]  # tuning included
    per_query: dict[str, np.ndarray]  # pooled over folds (fold order), averaged over seeds
    means: dict[str, float]
    stds: dict[str, float]
    diffs: dict[str, float]  # mean per-query difference from the baseline
    p_t: dict[str, float]
    p_rand: dict[str, float]
    # Holm-adjusted p_t and p_rand over the run's comparisons with the baseline, one family per metric
    # and test; the verdicts read these.
    holm_t: dict[str, float] = field(default_factory=dict)
    holm_rand: dict[str, float] = field(default_factory=dict)

    @property
    def fit_seconds(self) -> float:
        """Mean seconds per fit of the selected configuration."""
        return float(np.mean([r.seconds for r in self.runs]))

    @property
    def total_seconds(self) -> float:
        """Seconds of all the method's fits, tuning included."""
        return float(np.sum([r.seconds for r in self.all_fits]))

    @property
    def trees(self) -> float:
        """Mean trees kept by early stopping in the selected fits."""
        return float(np.mean([r.best_iteration for r in self.runs]))


@dataclass
class Summary:
    """Everything the report states about one run of the protocol."""

    outcome: Outcome
    metrics: list[str]
    methods: list[MethodSummary]
    baseline: str | None
    empty_fraction: float  # test queries without a relevant document (skipped by every metric)
    n_queries: int  # test queries pooled over folds
    n_resamples: int  # randomization-test resamples asked for
    exact_tests: int  # randomization tests that enumerated all 2^n sign patterns (2^n <= n_resamples)
    sampled_tests: int  # randomization tests that drew n_resamples random sign patterns

    @property
    def primary(self) -> str:
        """The metric the verdicts are on: the protocol's target (``--metric``), e.g. NDCG@5 or MRR."""
        return self.outcome.protocol.target.label


def pooled_per_query(runs: list[Run], folds: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Each test metric per query, seeds averaged, folds concatenated (NaN: a skipped query)."""
    out: dict[str, list[np.ndarray]] = {}
    for fold in folds:
        fold_runs = [r for r in runs if r.fold == fold]
        for name in fold_runs[0].test_metrics:
            stacked = np.array([r.test_metrics[name] for r in fold_runs], dtype=np.float64)
            # A skipped query is NaN for every seed (it depends on the labels only): plain mean keeps NaN.
            out.setdefault(name, []).append(stacked.mean(axis=0))
    return {name: np.concatenate(parts) for name, parts in out.items()}


def summarize(outcome: Outcome, n_resamples: int = N_RESAMPLES) -> Summary:
    """Means, standard deviations over (fold, seed), pooled per-query differences and p-values."""
    p = outcome.protocol
    baseline = BASELINE if BASELINE in outcome.methods else None
    summaries = []
    for name in outcome.methods:
        runs = [r for f in p.folds for r in outcome.selected[name, f]]
        per_run = [r.metric_means() for r in runs]
        metrics = list(per_run[0])
        means = {m: float(np.mean([x[m] for x in per_run])) for m in metrics}
        stds = {
            m: float(np.std([x[m] for x in per_run], ddof=1)) if len(runs) > 1 else float("nan")
            for m in metrics
        }
        all_fits = [r for r in outcome.runs if r.method == name]
        summaries.append(
            MethodSummary(name, runs, all_fits, pooled_per_query(runs, p.folds), means, stds, {}, {}, {})
        )
    metrics = list(summaries[0].means)
    exact = sampled = 0
    if baseline is not None:
        base = next(s for s in summaries if s.name == baseline)
        for s in summaries:
            for m in metrics:
                diff = s.per_query[m] - base.per_query[m]
                s.diffs[m] = float(np.nanmean(diff))
                s.p_t[m] = paired_t(s.per_query[m], base.per_query[m])
                s.p_rand[m] = paired_randomization(s.per_query[m], base.per_query[m], n_resamples=n_resamples)
                if randomization_is_exact(
                    paired_arrays(s.per_query[m], base.per_query[m])[0].size, n_resamples
                ):
                    exact += 1
                else:
                    sampled += 1
        _adjust(summaries, metrics, baseline)
    tests = [p.data(f).test for f in p.folds]
    n_queries = sum(t.n_queries for t in tests)
    empty = sum(int(np.sum(empty_queries(t))) for t in tests)
    return Summary(
        outcome, metrics, summaries, baseline, empty / n_queries, n_queries, n_resamples, exact, sampled
    )


def _adjust(summaries: list[MethodSummary], metrics: list[str], baseline: str) -> None:
    """Holm-adjust each test's p-values over the comparisons with the baseline, per metric."""
    others = [s for s in summaries if s.name != baseline]
    for s in summaries:
        if s.name == baseline:  # compared with itself: p = 1, not a comparison of the family
            s.holm_t, s.holm_rand = dict(s.p_t), dict(s.p_rand)
    for m in metrics:
        for raw, adjusted in (("p_t", "holm_t"), ("p_rand", "holm_rand")):
            values = holm([getattr(s, raw)[m] for s in others])
            for s, value in zip(others, values, strict=True):
                getattr(s, adjusted)[m] = float(value)


def holm_family(summary: Summary) -> str:
    """Name the Holm family of each metric: the comparisons with the baseline, or (none) each table's own."""
    if summary.baseline is None:
        return f"the comparisons each table names (on {summary.primary} only; they print Holm-adjusted p too)"
    return f"the {sum(s.name != summary.baseline for s in summary.methods)} comparisons with the baseline"


# ------------------------------------------------------------------------------------- markdown
def _fmt_p(p: float) -> str:
    return "nan" if np.isnan(p) else "<1e-4" if p < 1e-4 else f"{p:.3f}" if p < 0.995 else "1.00"


def _verdict(s: MethodSummary, metric: str) -> str:
    """One of win, loss, tie (not significant after Holm's correction) or untested (a NaN p-value or Δ)."""
    p_t, p_rand = s.holm_t[metric], s.holm_rand[metric]
    if np.isnan([p_t, p_rand, s.diffs[metric]]).any():
        return "untested"
    significant = p_t < ALPHA and p_rand < ALPHA
    if not significant:
        return "tie"
    return "win" if s.diffs[metric] > 0 else "loss"


def metrics_table(summary: Summary) -> str:
    """Mean ± std of every test metric, and timing, per method."""
    rows = []
    for s in summary.methods:
        cells = [f"{s.means[m]:.4f} ± {s.stds[m]:.4f}" if np.isfinite(s.stds[m]) else f"{s.means[m]:.4f}"
                 for m in summary.metrics]  # fmt: skip
        rows.append(
            [f"`{s.name}`", *cells, f"{s.trees:.0f}", f"{s.fit_seconds:.1f}", f"{s.total_seconds:.0f}"]
        )
    return markdown_table(["method", *summary.metrics, "trees", "fit s", "all fits s"], rows)


def pvalue_table(summary: Summary) -> str:
    """Mean per-query difference from the baseline with (paired t / randomization) p-values."""
    rows = []
    for s in summary.methods:
        if s.name == summary.baseline:
            continue
        rows.append([f"`{s.name}`"] + [
            f"{s.diffs[m]:+.4f} ({_fmt_p(s.p_t[m])} / {_fmt_p(s.p_rand[m])})" for m in summary.metrics
        ])  # fmt: skip
    return markdown_table(["method", *summary.metrics], rows)


def verdict_text(summary: Summary) -> str:
    """Plain-words wins, ties and losses against the baseline (significant: both Holm-adjusted p < ALPHA)."""
    if summary.baseline is None:
        return f"No verdicts: the baseline `{BASELINE}` was not among the methods run."
    primary = summary.primary  # evaluate() adds NDCG@k when k is not a fixed cutoff
    base = next(s for s in summary.methods if s.name == summary.baseline)
    lines = []
    for s in summary.methods:
        if s.name == summary.baseline:
            continue
        v = _verdict(s, primary)
        words = {"win": "**wins**", "loss": "**loses**", "tie": "ties (no significant difference)",
                 "untested": "is **not tested** (a p-value is NaN)"}[v]  # fmt: skip
        others = {m: _verdict(s, m) for m in summary.metrics if m != primary}
        won = [m for m, x in others.items() if x == "win"]
        lost = [m for m, x in others.items() if x == "loss"]
        extra = (f"; other metrics: significantly better on {', '.join(won) or 'none'}, "
                 f"significantly worse on {', '.join(lost) or 'none'}")  # fmt: skip
        lines.append(
            f"- `{s.name}` {words} on {primary}: {s.means[primary]:.4f} vs {base.means[primary]:.4f} "
            f"(mean per-query difference {s.diffs[primary]:+.4f}, paired t p = {_fmt_p(s.p_t[primary])} "
            f"(Holm {_fmt_p(s.holm_t[primary])}), randomization p = {_fmt_p(s.p_rand[primary])} "
            f"(Holm {_fmt_p(s.holm_rand[primary])})){extra}."
        )
    sr = [s for s in summary.methods if METHODS[s.name].stochrank and s.name != summary.baseline]
    if sr:
        counts = {v: sum(_verdict(s, primary) == v for s in sr) for v in ("win", "tie", "loss", "untested")}
        untested = f" ({counts['untested']} not tested: NaN p-value)" if counts["untested"] else ""
        lines.append(
            f"- In short, on {primary} the {len(sr)} StochasticRank variants win {counts['win']}, "
            f"tie {counts['tie']} and lose {counts['loss']} against LambdaMART "
            f"(`{summary.baseline}`){untested}."
        )
    return "\n".join(lines)


def conventions_text(summary: Summary) -> str:
    """Return the metric conventions, the statistics and the timing columns in words."""
    p = summary.outcome.protocol
    e = summary.empty_fraction
    gain = "2^r − 1" if p.target.gain == "exp" else "r (linear: this dataset's grades encode real targets)"
    return "\n".join([
        (f"- **Gain** {gain}, **discount** 1/log2(p + 2) (p = 0-based position), NDCG normalised by the "
        "ideal DCG at the same cutoff; computed by `stochrank.metrics` with explicit arguments for every "
        "method."),
        ("- **Ties** `ties='worst'`: documents with equal scores are ordered lower label first (the "
        "StochasticRank paper's and CatBoost's rule). A model that cannot separate documents gets no credit "
        "for the input order of the file."),
        (f"- **Queries with no relevant document are skipped** (`empty='skip'`) by every metric: they carry "
        "no information about the ranking, and counting them as 1 (LightGBM/XGBoost/CatBoost `eval`) adds "
        f"the same constant to every method. Here {e:.1%} of the {summary.n_queries} test queries are "
        f"skipped; NDCG in LightGBM's rule is (1 − {e:.3f}) × NDCG + {e:.3f}."),
        (f"- **ERR@10**: stop probability R = (2^r − 1) / 2^{p.target.max_grade:g} "
        "(the dataset's highest grade). **MRR**: a document is relevant when its label is > 0, full list."),
        ("- **mean ± std** over the selected configuration's (fold, seed) runs, each run the mean over its "
        "test queries. **Δ** is the mean per-query difference from the baseline, queries pooled over folds "
        "and averaged over seeds; p-values: two-sided paired t-test (`scipy.stats.ttest_rel`) / two-sided "
        f"paired randomization test (sign flips of the per-query differences, as "
        f"`scipy.stats.permutation_test(permutation_type='samples')`; {_randomization_text(summary)}). "
        f"A difference counts as significant when both p-values are below {ALPHA} after **Holm's "
        "correction** (Holm-Bonferroni step-down, `stochrank.bench.stats.holm`), applied to each test over "
        f"{holm_family(summary)}"
        + (" on each metric; the tables show the raw p-values." if summary.baseline else ".")),
        ("- **trees**: mean trees kept by early stopping; **fit s**: mean seconds per fit of the selected "
        "configuration; **all fits s**: seconds of all the method's fits, tuning included. Each time is from "
        f"the run that trained the fit, which may not be this one: {_settings_text(summary)}."),
    ])  # fmt: skip


def _randomization_text(summary: Summary) -> str:
    n = summary.n_resamples
    if summary.baseline is None:  # no baseline tests were counted; the pairs tables run the same rule
        return f"all 2^n sign patterns enumerated when 2^n <= {n:,}, else {n:,} random ones, seed 42"
    if summary.sampled_tests == 0:
        return "exact: all 2^n sign patterns enumerated for every test"
    sampled = f"{n:,} random sign patterns, seed 42"
    if summary.exact_tests == 0:
        return sampled
    tests = summary.exact_tests + summary.sampled_tests
    return (f"{sampled}, except {summary.exact_tests} of the {tests} tests with 2^n <= {n:,}, which "
            "enumerate all sign patterns exactly")  # fmt: skip


def _settings_text(summary: Summary) -> str:
    """Return the (threads per fit, fits at once) the report's fits were trained with, as recorded."""
    settings = {(r.threads, r.jobs) for s in summary.methods for r in s.all_fits}
    recorded = sorted(tj for tj in settings if tj[0] is not None)
    parts = [f"{threads} thread(s) per fit with {jobs} fit(s) at once" for threads, jobs in recorded]
    if len(recorded) < len(settings):
        parts.append("not recorded for fits cached by an earlier stochrank")
    return "; ".join(parts) + " (per fit in `runs.csv`)"


def protocol_text(summary: Summary) -> str:
    """Return the dataset, search, spaces, early stopping, selection and methods in words."""
    p = summary.outcome.protocol
    t = p.target
    boosters = {METHODS[m].booster for m in summary.outcome.methods}
    spaces = "; ".join(
        f"{booster}: " + ", ".join(f"{k} {d}" for k, d in space.items())
        for booster, space in BOOSTER_SPACES.items() if booster in boosters
    )  # fmt: skip
    own = "; ".join(
        f"`{m}`: " + ", ".join(f"{k} {d}" for k, d in METHODS[m].space.items())
        for m in summary.outcome.methods if METHODS[m].space
    )  # fmt: skip
    newton = [m for m in summary.outcome.methods if METHODS[m].space is NEWTON_SPACE]
    return "\n".join([
        (f"- **Target** `--metric {t.spec}`: {t.describe()}. Every method early-stops on it, is selected on "
        "it and is judged by it; the stochrank methods also optimise it (`sr-*-ndcg`: NDCG at its cut-off, "
        "whole list for MRR), the baselines keep their own objective (named under Methods)."),
        f"- Dataset `{p.dataset}`, folds {', '.join(map(str, p.folds))}; "
        + f"seeds {', '.join(map(str, p.seeds))}"
        + (f"; first {p.max_queries} queries of every split only" if p.max_queries else "") + ".",
        (f"- Random search, **{p.budget} configurations per method** (the same number for every method), "
        "tuned with the first seed; booster parameters are drawn from one stream per booster, so every "
        "method on a booster gets the same configurations."),
        f"- Booster spaces: {spaces}." + "".join(f" {SPACE_NOTES[b]}" for b in SPACE_NOTES if b in boosters),
        f"- Method spaces: {own or 'none'}."
        + (f" {', '.join(f'`{m}`' for m in newton)} run the objective's defaults (mu = 0, sigma = 1) "
           "except for the training cut-off, drawn as LambdaMART's truncation level is"
           + (" (no effect on a whole-list target)" if t.k is None else "") + ": with Newton leaves "
           "the trajectory from zero scores scales with sigma, so it does not change the ranking learned, "
           "and mu > 0 did not raise validation NDCG@5 (RESULTS.md, Quality levers)."
           if newton else ""),
        (f"- At most {p.max_rounds} trees, early stopping after {p.patience} rounds without a better "
        f"validation {t.label}, best iteration kept; on each fold "
        + (f"the configuration with the best validation {t.label} is selected." if len(p.seeds) == 1 else
           f"the {min(p.finalists, p.budget)} configuration(s) with the best validation {t.label} at the "
           "first seed are retrained with every seed and the best mean over the seeds is selected.")),
        "- Methods: " + "; ".join(f"`{m}` {METHODS[m].describe(t)}" for m in summary.outcome.methods) + ".",
    ])  # fmt: skip


def champion_text(summary: Summary) -> str:
    """Return the best StochasticRank variant paired against every other method on the primary metric.

    The best is the one with the best mean *validation* NDCG@k, chosen without looking at the test
    queries. Empty with fewer than two methods.
    """
    sr = [s for s in summary.methods if METHODS[s.name].stochrank]
    if not sr or len(summary.methods) < 2:
        return ""
    primary = summary.primary
    best = max(sr, key=lambda s: float(np.mean([r.vali for r in s.runs])))
    others = [s for s in summary.methods if s is not best]
    pairs = [(best.per_query[primary], s.per_query[primary]) for s in others]
    p_t = [paired_t(a, b) for a, b in pairs]
    p_rand = [paired_randomization(a, b, n_resamples=summary.n_resamples) for a, b in pairs]
    holm_t, holm_rand = holm(p_t), holm(p_rand)
    rows = [
        [f"`{s.name}`", f"{s.means[primary]:.4f}", f"{float(np.nanmean(a - b)):+.4f}",
         f"{_fmt_p(p_t[i])} / {_fmt_p(p_rand[i])}", f"{_fmt_p(holm_t[i])} / {_fmt_p(holm_rand[i])}"]
        for i, (s, (a, b)) in enumerate(zip(others, pairs, strict=True))
    ]  # fmt: skip
    return (
        f"\nThe StochasticRank variant with the best mean validation {primary}, `{best.name}` (test "
        f"{best.means[primary]:.4f}), against every other method: mean per-query Δ "
        f"(`{best.name}` − method) and p-values (paired t / randomization), raw and Holm-adjusted over these "
        f"{len(others)} comparisons:\n\n"
        + markdown_table(["method", f"test {primary}", "Δ", "p", "Holm p"], rows)
    )


def markdown(summary: Summary, curves_png: str | None = None) -> str:
    """Return the whole report body (tables, verdicts, conventions, protocol)."""
    p = summary.outcome.protocol
    n_runs = len(p.folds) * len(p.seeds)
    parts = [
        f"Test metrics, mean ± std over {len(p.folds)} fold(s) × {len(p.seeds)} seed(s) = {n_runs} run(s):\n",
        metrics_table(summary),
    ]
    if summary.baseline is not None:
        parts += [
            (
                f"\nDifference from LambdaMART (`{summary.baseline}`): mean per-query Δ "
                f"over the {round(summary.n_queries * (1 - summary.empty_fraction))} test queries with a "
                "relevant document (pooled over folds) with p-values (paired t / randomization):\n"
            ),
            pvalue_table(summary),
            (
                f"\nResolution on {summary.primary}: the minimum detectable difference (MDD) of each paired "
                "comparison with the baseline, two-sided 5 %, 80 % power, from the per-query variance of the "
                "paired differences, (t₀.₉₇₅ + t₀.₈) · sd / √n; a true difference smaller than the MDD is "
                "more likely than not to read as a tie:\n"
            ),
            resolution_table(summary),
        ]
    rule = f" (significant = both p-values < {ALPHA} after Holm's correction over {holm_family(summary)})"
    parts += [f"\n**Verdict**{rule if summary.baseline else ''}:\n", verdict_text(summary)]
    parts += [text for text in (booster_table(summary), champion_text(summary)) if text]
    if curves_png:
        parts += [
            f"\nValidation {summary.primary} of the selected configurations (first seed): "
            f"![learning curves]({curves_png})"
        ]
    parts += [
        "\n**Metric conventions**\n",
        conventions_text(summary),
        "\n**Protocol**\n",
        protocol_text(summary),
    ]
    return "\n".join(parts) + "\n"
