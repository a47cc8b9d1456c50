"""The benchmark runner: a tiny end-to-end run re-checked from its saved scores, the cache, the statistics,
the fairness of the search and the command-line errors."""

from __future__ import annotations

import csv
import dataclasses
import itertools
import json
import math
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

import stochrank
from stochrank import metrics
from stochrank.bench import METHODS, Protocol, results, run_protocol
from stochrank.bench.__main__ import main, parse_args
from stochrank.bench.cache import Run, RunCache
from stochrank.bench.methods import (
    BOOSTER_SPACES,
    Choice,
    LogUniform,
    LogUniformInt,
    Recipe,
    Uniform,
    available_methods,
    training_cutoff,
)
from stochrank.bench.pairs import booster_pairs
from stochrank.bench.protocol import fit_run, load_fold, metric_names, sample_configs
from stochrank.bench.report import MethodSummary, Summary, _adjust, _fmt_p, _verdict, verdict_text
from stochrank.bench.selection import ranked_by_validation, select_finalists
from stochrank.bench.stats import holm, paired_randomization, paired_t
from stochrank.bench.target import Target
from stochrank.bench.trainers import (
    TRAINERS,
    FitSettings,
    empty_queries,
    lightgbm_hessian_per_document,
    xgboost_hessian_per_document,
)
from stochrank.datasets import load, synthetic

from .naive import naive_holm_rejections

TINY = ["--methods", "sr-lgb,lgb-lambdarank", "--budget", "2", "--folds", "1", "--seeds", "2",
        "--max-queries", "40", "--max-rounds", "20", "--patience", "5", "--jobs", "1",
        "--n-resamples", "4000", "--no-progress"]  # fmt: skip
METRIC_NAMES = ("NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10", "ERR@10", "MRR")


def _reevaluate(y: np.ndarray, scores: np.ndarray, group: np.ndarray) -> dict[str, np.ndarray]:
    conv = {"ties": "worst", "empty": "skip", "per_query": True}
    out = {f"NDCG@{k}": metrics.ndcg(y, scores, group, k=k, gain="exp", **conv) for k in (1, 3, 5, 10)}
    out["ERR@10"] = metrics.err(y, scores, group, k=10, max_grade=2, **conv)
    out["MRR"] = metrics.mrr(y, scores, group, threshold=0.0, **conv)
    return out


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def test_tiny_run_tables_match_saved_scores_and_rerun_trains_nothing(tmp_path: Path, capsys) -> None:
    results_md = tmp_path / "RESULTS.md"
    results_md.write_text(
        "# results\n\n<!-- mq2008_comparison:start -->\nPLACEHOLDER-TEXT\n<!-- mq2008_comparison:end -->\n"
    )
    argv = [*TINY, "--out", str(tmp_path / "out"), "--results", str(results_md)]
    assert main(argv) == 0
    # 2 methods x 2 configurations x 2 seeds: both configurations are finalists (budget 2 < 5 finalists).
    assert "Trained 8 fit(s), 0 loaded" in capsys.readouterr().out
    out = tmp_path / "out"

    # Re-evaluate every selected run from its saved test scores with stochrank.metrics.
    sel = load("mq2008", 1, "test")
    rows = int(sel.group[:40].sum())
    y, group = sel.y[:rows], sel.group[:40]
    runs = _csv(out / "runs.csv")
    selected = [r for r in runs if r["selected"] == "True"]
    assert len(runs) == 8 and len(selected) == 4 and {r["seed"] for r in selected} == {"0", "1"}
    per_method: dict[str, list[dict[str, np.ndarray]]] = {}
    for r in selected:
        (npz,) = (out / "runs" / r["method"] / "fold1").glob(f"seed{r['seed']}-c{r['config']}-*.npz")
        scores = np.load(npz)["test_scores"]
        per_method.setdefault(r["method"], []).append(_reevaluate(y, scores, group))

    table = {row["method"]: row for row in _csv(out / "results.csv")}
    assert list(table) == ["lgb-lambdarank", "sr-lgb"]  # the baseline first
    for method, evals in per_method.items():
        for name in METRIC_NAMES:
            run_means = [float(np.nanmean(e[name])) for e in evals]
            assert float(table[method][f"{name} mean"]) == pytest.approx(np.mean(run_means), abs=1e-12)
            assert float(table[method][f"{name} std"]) == pytest.approx(np.std(run_means, ddof=1), abs=1e-12)

    # Per-query file and p-values from the re-evaluated per-query metrics (seeds averaged).
    per_query = _csv(out / "per_query.csv")
    assert len(per_query) == 4 * 40
    first = next(r for r in per_query if r["method"] == "sr-lgb" and r["seed"] == "1" and r["query"] == "3")
    assert float(first["NDCG@5"]) == pytest.approx(per_method["sr-lgb"][1]["NDCG@5"][3], abs=1e-15)
    for name in METRIC_NAMES:
        a = np.mean([e[name] for e in per_method["sr-lgb"]], axis=0)
        b = np.mean([e[name] for e in per_method["lgb-lambdarank"]], axis=0)
        keep = ~np.isnan(a)
        assert np.array_equal(keep, ~np.isnan(b)) and 0 < keep.sum() < 40  # empty queries skipped
        assert float(table["sr-lgb"][f"{name} diff"]) == pytest.approx(np.mean(a[keep] - b[keep]), abs=1e-12)
        expected_t = 1.0 if np.all(a[keep] == b[keep]) else stats.ttest_rel(a[keep], b[keep]).pvalue
        assert float(table["sr-lgb"][f"{name} p_t"]) == pytest.approx(expected_t, rel=1e-9)
        assert 0.0 < float(table["sr-lgb"][f"{name} p_rand"]) <= 1.0

    # The RESULTS.md section is replaced in place, with the figure next to it.
    text = results_md.read_text()
    assert "PLACEHOLDER-TEXT" not in text and text.count("<!-- mq2008_comparison:start -->") == 1
    assert "| `sr-lgb` |" in text and "Metric conventions" in text and "randomization" in text
    assert " `sr-lgb` run the objective's defaults" in text and "`lgb-lambdarank` run the" not in text
    # The StochasticRank variant with the best validation score (the only one here) against every other
    # method: the same paired difference and t-test p-value, recomputed from the saved scores.
    a = np.mean([e["NDCG@5"] for e in per_method["sr-lgb"]], axis=0)
    b = np.mean([e["NDCG@5"] for e in per_method["lgb-lambdarank"]], axis=0)
    keep = ~np.isnan(a)
    p_t = stats.ttest_rel(a[keep], b[keep]).pvalue
    row = (f"| `lgb-lambdarank` | {float(table['lgb-lambdarank']['NDCG@5 mean']):.4f} | "
           f"{np.mean(a[keep] - b[keep]):+.4f} | {_fmt_p(p_t)} / ")  # fmt: skip
    assert "best mean validation NDCG@5, `sr-lgb`" in text and row in text
    assert (tmp_path / "mq2008_learning_curves.png").stat().st_size > 1000

    # Resumable: the same protocol again trains nothing and returns the same selection.
    protocol, methods, _, _ = parse_args(argv)
    outcome = run_protocol(protocol, methods, out / "runs")
    assert outcome.trained == 0 and len(outcome.runs) == 8
    assert {(r.method, r.config_index) for runs in outcome.selected.values() for r in runs} == {
        (r["method"], int(r["config"])) for r in selected
    }
    # Wiring (the rule itself is tested on constructed runs below): the best validation NDCG@5 averaged over
    # the seeds; with one finalist, the first seed's best (the same cached fits, nothing trained).
    vali = {(r["method"], int(r["config"]), int(r["seed"])): float(r["vali"]) for r in runs}
    first_seed = run_protocol(Protocol(**{**protocol.__dict__, "finalists": 1}), methods, out / "runs")
    assert first_seed.trained == 0
    for method in methods:
        by_mean = max((0, 1), key=lambda c: (vali[method, c, 0] + vali[method, c, 1], -c))
        by_first = max((0, 1), key=lambda c: (vali[method, c, 0], -c))
        assert {r.config_index for r in outcome.selected[method, 1]} == {by_mean}
        chosen = [(r.config_index, r.seed) for r in first_seed.selected[method, 1]]
        assert chosen == [(by_first, 0), (by_first, 1)]
    # A changed setting that alters fits (more rounds) is a different cache entry.
    bigger = Protocol(**{**protocol.__dict__, "max_rounds": 21, "folds": (1,), "seeds": (0,), "budget": 1})
    assert run_protocol(bigger, ["sr-lgb"], out / "runs").trained == 1


def test_selection_takes_the_best_mean_over_seeds_among_the_finalists() -> None:
    """The first seed's best configuration is not selected when its other seeds are worse; ties go to the
    earlier configuration; a NaN validation score (no finite metric) ranks last."""

    def run(config: int, seed: int, vali: float) -> Run:
        return Run("sr-lgb", 1, seed, config, {}, vali, 1, 1, 0.0, [vali], {})

    lucky, steady, tied, broken = (
        [run(0, 0, 0.70), run(0, 1, 0.60), run(0, 2, 0.62)],  # best first seed, mean 0.64
        [run(1, 0, 0.66), run(1, 1, 0.67), run(1, 2, 0.65)],  # mean 0.66
        [run(2, 0, 0.65), run(2, 1, 0.67), run(2, 2, 0.66)],  # mean 0.66, later than config 1
        [run(3, 0, 0.69), run(3, 1, math.nan), run(3, 2, 0.69)],
    )
    reseeded = [r for runs in (lucky, steady, tied, broken) for r in runs[1:]]
    finalists = {("sr-lgb", 1): [lucky[0], broken[0], steady[0], tied[0]]}
    assert select_finalists(finalists, reseeded)[("sr-lgb", 1)] == steady
    assert select_finalists({("sr-lgb", 1): [broken[0], lucky[0]]}, reseeded)[("sr-lgb", 1)] == lucky
    assert select_finalists({("sr-lgb", 1): [tied[0], steady[0]]}, reseeded)[("sr-lgb", 1)] == steady
    assert select_finalists({("sr-lgb", 1): [lucky[0]]}, reseeded)[("sr-lgb", 1)] == lucky  # one finalist
    assert select_finalists({("sr-lgb", 1): [lucky[0]]}, [])[("sr-lgb", 1)] == lucky[:1]  # one seed


def test_finalists_are_the_first_seeds_best_per_method_and_fold() -> None:
    def run(method: str, fold: int, config: int, vali: float) -> Run:
        return Run(method, fold, 0, config, {}, vali, 1, 1, 0.0, [vali], {})

    runs = [run("a", 1, 0, 0.5), run("a", 1, 1, math.nan), run("a", 1, 2, 0.7), run("a", 1, 3, 0.5),
            run("a", 2, 0, 0.1), run("b", 1, 0, 0.9)]  # fmt: skip
    ranked = ranked_by_validation(runs)
    assert {key: [r.config_index for r in rs] for key, rs in ranked.items()} == {
        ("a", 1): [2, 0, 3, 1],
        ("a", 2): [0],
        ("b", 1): [0],  # NaN last, ties: the earlier configuration
    }


@pytest.mark.parametrize("method", ["xgb-ndcg", "cb-lambdamart", "cb-stochasticrank"])
def test_booster_early_stopping_curve_is_the_report_metric(method: str) -> None:
    """fit_run raises unless the booster's logged validation NDCG@k at its kept iteration equals
    stochrank.metrics.ndcg (worst ties, empty queries skipped) of the kept model: for CatBoost this checks
    the conversion from its own convention (empty query = 1)."""
    p = Protocol(folds=(2,), seeds=(0,), budget=1, max_rounds=15, patience=4, max_queries=60)
    config = sample_configs(METHODS[method], 1)[0]
    run = fit_run(METHODS[method], 0, config, 2, 0, p)
    vali = load_fold("mq2008", 2, None, None, 60).vali
    assert np.mean(empty_queries(vali)) > 0.1  # the conversion matters on this split
    assert 1 <= run.best_iteration <= run.rounds <= 15
    assert run.curve[run.best_iteration - 1] == pytest.approx(run.vali, abs=1e-6)
    assert run.vali == max(run.curve) or math.isclose(run.vali, max(run.curve), abs_tol=1e-6)


def test_configurations_share_the_booster_space_and_respect_ranges() -> None:
    budget = 6
    lam, sr = (
        sample_configs(METHODS["lgb-lambdarank"], budget),
        sample_configs(METHODS["sr-lgb-sglb"], budget),
    )
    xgb = sample_configs(METHODS["xgb-ndcg"], budget)
    assert [c["booster"] for c in lam] == [c["booster"] for c in sr]  # same trees for every LightGBM method
    assert len({json.dumps(c["booster"], sort_keys=True) for c in lam}) == budget
    assert lam == sample_configs(METHODS["lgb-lambdarank"], budget)  # deterministic
    assert xgb[0]["booster"]["learning_rate"] != lam[0]["booster"]["learning_rate"]
    for booster, configs in (("lightgbm", lam + sr), ("xgboost", xgb)):
        for c in configs:
            for name, dist in BOOSTER_SPACES[booster].items():
                _check_in(dist, c["booster"][name])
    for c in sr:
        assert set(c["own"]) == {"sigma", "mu", "temperature", "shrink_rate"}
        for name, dist in METHODS["sr-lgb-sglb"].space.items():
            _check_in(dist, c["own"][name])


def test_newton_leaf_methods_run_the_objective_defaults_at_a_tuned_training_cutoff() -> None:
    """Newton-leaf methods tune only the booster and the cut-off: stochrank.ndcg(k'), k' in {k, 2k, 4k}."""
    target = Target.parse("ndcg@5", max_grade=2.0)
    baselines = {"sr-lgb": "lgb-lambdarank", "sr-xgb": "xgb-ndcg", "sr-cb": "cb-yetirank"}
    for name, baseline in baselines.items():
        configs = sample_configs(METHODS[name], 12)
        assert {c["own"]["training_cutoff"] for c in configs} == {"k", "2k", "4k"}, name
        assert all(set(c["own"]) == {"training_cutoff"} for c in configs)
        baseline_configs = sample_configs(METHODS[baseline], 12)
        assert [c["booster"] for c in configs] == [c["booster"] for c in baseline_configs]
        for option, k in (("k", 5), ("2k", 10), ("4k", 20)):
            recipe = METHODS[name].build({"training_cutoff": option}, configs[0]["booster"], target, 7)
            assert recipe.objective == stochrank.ndcg(k=k, seed=7), (name, option)
    whole_list = Target.parse("mrr", max_grade=2.0)
    booster = sample_configs(METHODS["sr-lgb"], 1)[0]["booster"]
    recipe = METHODS["sr-lgb"].build({"training_cutoff": "4k"}, booster, whole_list, 7)
    assert recipe.objective == stochrank.mrr(seed=7)


NDCG_AIMED = {"sr-lgb-ndcg": "sr-lgb", "sr-xgb-ndcg": "sr-xgb"}  # NDCG-aimed method: its direct twin


@pytest.mark.parametrize(("name", "twin"), NDCG_AIMED.items())
def test_ndcg_aimed_methods_train_stochrank_ndcg_on_the_direct_methods_trees(name: str, twin: str) -> None:
    """sr-lgb-ndcg / sr-xgb-ndcg: stochrank.ndcg at the target's (tuned) cut-off, the whole list for MRR,
    on the booster configurations of the direct method; NDCG targets are refused (that is the direct one)."""
    configs, twin_configs = sample_configs(METHODS[name], 12), sample_configs(METHODS[twin], 12)
    assert [c["booster"] for c in configs] == [c["booster"] for c in twin_configs]
    assert {c["own"]["training_cutoff"] for c in configs} == {"k", "2k", "4k"}
    err10 = Target.parse("err@10", gain="linear", max_grade=4.0)
    for option, k in (("k", 10), ("2k", 20), ("4k", 40)):
        recipe = METHODS[name].build({"training_cutoff": option}, configs[0]["booster"], err10, 7)
        assert recipe.objective == stochrank.ndcg(k=k, gain="linear", seed=7), option
        direct = METHODS[twin].build({"training_cutoff": option}, configs[0]["booster"], err10, 7)
        assert direct.objective == stochrank.err(k=k, max_grade=4, seed=7)
    recipe = METHODS[name].build({"training_cutoff": "2k"}, configs[0]["booster"], Target.parse("mrr"), 7)
    assert recipe.objective == stochrank.ndcg(k=None, seed=7)
    assert "stochrank.ndcg(k=10, gain='linear')" in METHODS[name].describe(err10)
    assert "direct method" in str(METHODS[name].unsupported(Target.parse("ndcg@5")))


def _check_in(dist, value) -> None:
    if isinstance(dist, Choice):
        assert value in dist.options
    elif isinstance(dist, LogUniformInt):
        assert isinstance(value, int) and dist.low <= value <= dist.high
    else:
        assert isinstance(dist, LogUniform | Uniform) and dist.low <= value <= dist.high


def test_randomization_test_matches_exact_enumeration_and_t_test_matches_formula() -> None:
    rng = np.random.default_rng(3)
    n = 11
    a = rng.normal(0.6, 0.2, n)
    b = a - rng.normal(0.08, 0.15, n)
    b[4] = a[4]  # a zero difference
    d = a - b
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    null = (flips * d).mean(axis=1)
    exact = float(np.mean(np.abs(null) >= abs(d.mean()) - 1e-12))
    assert paired_randomization(a, b, n_resamples=2**n) == pytest.approx(exact, rel=1e-12)
    assert paired_randomization(a, b) == pytest.approx(exact, rel=1e-12)  # 2^11 < default: also exact
    scipy_exact = stats.permutation_test(
        (a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples", vectorized=True,
        n_resamples=2**n,
    ).pvalue  # fmt: skip
    assert scipy_exact == pytest.approx(exact, rel=1e-9)
    sampled = paired_randomization(np.r_[a, a], np.r_[b, b], n_resamples=20_000)  # 2^22 > 20k: Monte Carlo
    flips2 = rng.choice([-1.0, 1.0], size=(200_000, 2 * n))
    reference = np.mean(np.abs((flips2 * np.r_[d, d]).mean(axis=1)) >= abs(d.mean()) - 1e-12)
    assert sampled == pytest.approx(reference, abs=4 * math.sqrt(reference * (1 - reference) / 20_000) + 1e-4)

    t = d.mean() / (d.std(ddof=1) / math.sqrt(n))
    assert paired_t(a, b) == pytest.approx(2 * stats.t.sf(abs(t), n - 1), rel=1e-10)
    assert paired_t(a, b) == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-12)
    # NaN marks a skipped query: the pair is dropped from both tests.
    a_nan, b_nan = np.r_[a, np.nan], np.r_[b, np.nan]
    assert paired_t(a_nan, b_nan) == paired_t(a, b)
    assert paired_randomization(a_nan, b_nan) == paired_randomization(a, b)
    assert paired_t(a, a) == 1.0 and paired_randomization(a, a) == 1.0
    with pytest.raises(ValueError, match="equal length"):
        paired_t(a, b[:-1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--methods", "sr-lgb,nope"], "--methods: unknown method"),
        (["--methods", "sr-lgb,sr-lgb"], "lists a method twice"),
        (["--folds", "1,7"], "--folds '1,7': mq2008 has folds 1, 2, 3, 4, 5"),
        (["--folds", "one"], "--folds must be 'all' or comma-separated integers"),
        (["--seeds", "0"], "--seeds must be a positive integer"),
        (["--budget", "-2"], "--budget must be a positive integer"),
        (["--finalists", "0"], "--finalists must be a positive integer"),
        (["--threads", "0"], "--threads must be a positive integer"),
        (["--dataset", "mslr"], "invalid choice: 'mslr'"),
        (["--preset", "huge"], "invalid choice: 'huge'"),
    ],
)
def test_cli_errors_name_the_argument(args: list[str], message: str, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(args)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_presets_and_overrides() -> None:
    protocol, methods, out, _ = parse_args(["--preset", "full", "--seeds", "2", "--folds", "3,1"])
    # xgb-map and the NDCG-aimed methods do not run NDCG targets
    assert methods[0] == "lgb-lambdarank" and set(methods) == set(METHODS) - {"xgb-map", *NDCG_AIMED}
    assert protocol.seeds == (0, 1) and protocol.folds == (3, 1) and protocol.max_rounds == 1000
    assert protocol.budget >= 30 and protocol.metric == "ndcg@5" and protocol.finalists == 5
    assert out == Path("bench_runs") / "mq2008"
    assert parse_args(["--finalists", "2"])[0].finalists == 2
    protocol, methods, _, _ = parse_args(["--methods", "sr-xgb,lgb-lambdarank", "--threads", "2"])
    assert methods == ["lgb-lambdarank", "sr-xgb"] and protocol.threads == 2 and protocol.budget == 3


# ------------------------------------------------------------------------------- cache identity
FULL_PRESET = ["--preset", "full", "--no-progress"]


def test_bundled_mq2008_cache_keys_are_unchanged() -> None:
    """The identity of a bundled-MQ2008 fit is what it was when bench_runs/mq2008 (the full preset of
    benchmarks/RESULTS.md, CACHE_VERSION 2: Newton-leaf defaults, --metric, 30 configurations) was trained:
    this key was written by that run. A change here silently invalidates the whole cache."""
    protocol, _, _, _ = parse_args(FULL_PRESET)
    config = sample_configs(METHODS["cb-lambdamart"], protocol.budget)[0]
    path = RunCache("runs", protocol).path("cb-lambdamart", 1, 0, config, 0)
    assert path.name == "seed0-c0-97f2620313927b4e.json"


def _synthetic_root(root: Path, seed: int) -> str:
    synthetic.write_mslr_like(root / "synthetic-mslr", (6, 3, 3), seed=seed)
    return str(root)


def test_cache_is_keyed_by_data_root_and_contents_and_rejects_mismatched_records(tmp_path: Path) -> None:
    """Fits on other data are never reused: another root (even with equal files) or other files (other
    labels and query counts) trains again; a record whose per-query metrics do not match is not loaded."""
    root_a = _synthetic_root(tmp_path / "a", seed=1)
    root_copy = _synthetic_root(tmp_path / "copy", seed=1)  # the same files under another root
    root_b = _synthetic_root(tmp_path / "b", seed=2)  # other labels, other query sizes
    assert load("synthetic-mslr", 1, "test", root=root_a).n_queries == 3
    kwargs = {"dataset": "synthetic-mslr", "folds": (1,), "seeds": (0,), "budget": 1, "max_rounds": 4,
              "patience": 2}  # fmt: skip
    runs = tmp_path / "runs"
    first = run_protocol(Protocol(root=root_a, **kwargs), ["lgb-lambdarank"], runs)
    assert first.trained == 1
    assert run_protocol(Protocol(root=root_a, **kwargs), ["lgb-lambdarank"], runs).trained == 0
    assert run_protocol(Protocol(root=root_copy, **kwargs), ["lgb-lambdarank"], runs).trained == 1
    on_b = run_protocol(Protocol(root=root_b, **kwargs), ["lgb-lambdarank"], runs)
    assert on_b.trained == 1
    test_b = load_fold("synthetic-mslr", 1, root_b, None, None).test
    scores = on_b.runs[0].test_scores
    assert scores.shape == test_b.y.shape
    np.testing.assert_array_equal(
        on_b.runs[0].test_metrics["NDCG@5"],
        metrics.ndcg(
            test_b.y, scores, test_b.group, k=5, gain="exp", ties="worst", empty="skip", per_query=True
        ),
    )
    # A stored record that does not match its fold's test split is ignored (and retrained), not loaded.
    protocol = Protocol(root=root_a, **kwargs)
    cache = RunCache(runs, protocol)
    config = sample_configs(METHODS["lgb-lambdarank"], 1)[0]
    path = cache.path("lgb-lambdarank", 1, 0, config, 0)
    assert cache.load(path, 1) is not None
    record = json.loads(path.read_text())
    record["test_metrics"] = {name: values[:-1] for name, values in record["test_metrics"].items()}
    path.write_text(json.dumps(record))
    with pytest.warns(RuntimeWarning, match="per-query metrics of \\[2\\] queries, the test split 3"):
        assert cache.load(path, 1) is None
    with pytest.warns(RuntimeWarning, match="it is trained again"):
        assert run_protocol(protocol, ["lgb-lambdarank"], runs).trained == 1
    assert cache.load(path, 1) is not None


# ------------------------------------------------------------------------ report: k, resamples
def test_k_outside_the_fixed_cutoffs_is_evaluated_and_judged_and_the_report_names_the_test(
    tmp_path: Path, capsys
) -> None:
    """--k 7: test NDCG@7 is computed (equal to stochrank.metrics.ndcg of the saved scores) and the
    verdict is on NDCG@7; with 2^n <= --n-resamples the randomization test is exact and the report says so
    (not "100,000 resamples"); runs.csv records the threads and jobs of every fit."""
    assert metric_names(5) == ("NDCG@1", "NDCG@3", "NDCG@5", "NDCG@10", "ERR@10", "MRR")
    assert metric_names(7) == ("NDCG@1", "NDCG@3", "NDCG@5", "NDCG@7", "NDCG@10", "ERR@10", "MRR")
    argv = ["--methods", "sr-lgb,lgb-lambdarank", "--budget", "1", "--folds", "1", "--seeds", "1", "--k", "7",
            "--max-queries", "12", "--max-rounds", "6", "--patience", "3", "--jobs", "1",
            "--n-resamples", "5000", "--no-progress", "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "`sr-lgb`" in text and " on NDCG@7: " in text and "In short, on NDCG@7" in text
    assert "exact: all 2^n sign patterns enumerated for every test" in text and "resamples" not in text
    assert "1 thread(s) per fit with 1 fit(s) at once" in text
    test = load_fold("mq2008", 1, None, None, 12).test
    assert 0 < int(np.sum(~empty_queries(test))) <= 12  # 2^n <= 5000: exact
    (npz,) = (tmp_path / "out" / "runs" / "sr-lgb" / "fold1").glob("seed0-c0-*.npz")
    expected = metrics.ndcg(test.y, np.load(npz)["test_scores"], test.group, k=7, gain="exp", ties="worst",
                            empty="skip")  # fmt: skip
    table = {row["method"]: row for row in _csv(tmp_path / "out" / "results.csv")}
    assert float(table["sr-lgb"]["NDCG@7 mean"]) == pytest.approx(expected, abs=1e-12)
    assert all(row["threads"] == "1" and row["jobs"] == "1" for row in _csv(tmp_path / "out" / "runs.csv"))

    # Monte Carlo when 2^n > n_resamples: the report gives the number actually drawn.
    argv[argv.index("--n-resamples") + 1] = "777"
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert (
        "Trained 0 fit(s)" in text and "777 random sign patterns, seed 42" in text and "100,000" not in text
    )


def test_a_run_without_the_baseline_states_no_holm_family_or_exactness_it_did_not_compute(
    tmp_path: Path, capsys
) -> None:
    """Without lgb-lambdarank there are no baseline tests: the report must not describe a Holm family of
    them or call the same-booster randomization tests exact (they sample when 2^n > --n-resamples)."""
    argv = ["--methods", "xgb-ndcg,sr-xgb", "--budget", "1", "--folds", "1", "--seeds", "1", "--max-queries",
            "30", "--max-rounds", "4", "--patience", "2", "--jobs", "1", "--n-resamples", "100",
            "--no-progress", "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "No verdicts: the baseline `lgb-lambdarank` was not among the methods run." in text
    assert "| `sr-xgb` | `xgb-ndcg` |" in text  # the same-booster table ran its own tests
    assert "comparisons with the baseline" not in text and "exact: all 2^n" not in text
    assert "over the comparisons each table names (on NDCG@5 only; they print Holm-adjusted p too)." in text
    assert "enumerated when 2^n <= 100, else 100 random ones, seed 42" in text


def _summary_with(p_t: float, p_rand: float, diff: float) -> MethodSummary:
    m = "NDCG@5"  # one comparison: Holm's adjusted p-values are the raw ones
    return MethodSummary(
        "sr-lgb", [], [], {}, {}, {}, {m: diff}, {m: p_t}, {m: p_rand}, {m: p_t}, {m: p_rand}
    )


def test_nan_p_values_print_as_nan_and_are_never_ties() -> None:
    assert _fmt_p(float("nan")) == "nan" and _fmt_p(1.0) == "1.00" and _fmt_p(0.0123) == "0.012"
    assert _verdict(_summary_with(float("nan"), 0.01, 0.02), "NDCG@5") == "untested"
    assert _verdict(_summary_with(0.01, float("nan"), 0.02), "NDCG@5") == "untested"
    assert _verdict(_summary_with(0.01, 0.01, 0.02), "NDCG@5") == "win"
    assert _verdict(_summary_with(0.01, 0.01, -0.02), "NDCG@5") == "loss"
    assert _verdict(_summary_with(0.2, 0.01, 0.02), "NDCG@5") == "tie"


@pytest.mark.parametrize("n_resamples", [-5, 0, 2.5, True])
def test_randomization_test_refuses_bad_resample_counts(n_resamples) -> None:
    with pytest.raises(ValueError, match="'n_resamples' parameter of paired_randomization"):
        paired_randomization([0.1, 0.5, 0.2], [0.3, 0.4, 0.1], n_resamples=n_resamples)


@pytest.mark.parametrize("where", ["a", "b"])
def test_paired_tests_refuse_infinite_values(where: str) -> None:
    a, b = np.array([0.2, 0.5, 0.9, 0.1]), np.array([0.1, 0.4, 0.3, 0.1])
    (a if where == "a" else b)[2] = np.inf
    for test in (paired_randomization, paired_t):
        with pytest.raises(ValueError, match=f"infinite value in '{where}' \\(first at index 2"):
            test(a, b)


# ------------------------------------------------------------------------------ protocol checks
@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("seeds", (0, 1, 0), "'seeds' parameter of Protocol lists a value twice"),
        ("seeds", (), "'seeds' parameter of Protocol needs at least one value"),
        ("seeds", (-1,), "'seeds' parameter of Protocol must be an int in the range \\[0"),
        ("folds", (2, 2), "'folds' parameter of Protocol lists a value twice"),
        ("folds", (6,), "'folds' parameter of Protocol must hold folds of mq2008"),
        ("folds", (1.0,), "'folds' parameter of Protocol must be an int"),
        ("budget", 0, "'budget' parameter of Protocol"),
        ("metric", "ndcg@0", "'metric' parameter of Protocol: --metric 'ndcg@0'"),
        ("metric", "err", "'metric' parameter of Protocol: --metric 'err' needs a cutoff"),
        ("metric", "map@5", "'metric' parameter of Protocol: --metric must be ndcg@K, mrr, mrr@K or err@K"),
        ("metric", 5, "'metric' parameter of Protocol must be a str"),
        ("max_rounds", 0, "'max_rounds' parameter of Protocol"),
        ("patience", -1, "'patience' parameter of Protocol"),
        ("threads", 0, "'threads' parameter of Protocol"),
        ("jobs", 0, "'jobs' parameter of Protocol"),
        ("finalists", 0, "'finalists' parameter of Protocol"),
        ("max_queries", 0, "'max_queries' parameter of Protocol"),
        ("normalize", "zscore", "'normalize' parameter of Protocol must be one of 'query'"),
        ("dataset", "mslr", "'dataset' parameter of Protocol must be one of"),
    ],
)
def test_protocol_validates_every_field(field: str, value, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Protocol(**{field: value})


def test_protocol_normalises_sequences_to_tuples() -> None:
    p = Protocol(folds=[3, 1], seeds=range(2))
    assert p.folds == (3, 1) and p.seeds == (0, 1)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_rounds", 0, "'max_rounds' parameter of FitSettings must be an int in the range \\[1"),
        ("patience", 1.5, "'patience' parameter of FitSettings must be an int"),
        ("k", 0, "'k' parameter of FitSettings"),
        ("threads", 0, "'threads' parameter of FitSettings"),
        ("ties", "average", "'ties' parameter of FitSettings must be one of 'worst', 'input'"),
        ("empty", "zero", "'empty' parameter of FitSettings must be one of 'skip', 'one'"),
    ],
)
def test_fit_settings_validate_every_field(field: str, value, message: str) -> None:
    """Every FitSettings field is checked on construction; the error names the field."""
    with pytest.raises(ValueError, match=message):
        FitSettings(**{"max_rounds": 10, "patience": 3, "k": 5, field: value})


def test_protocol_fit_settings_are_the_report_convention() -> None:
    """The bench's fits early-stop in the report's NDCG convention (worst ties, empty queries skipped)."""
    p = Protocol(metric="ndcg@7", max_rounds=40, patience=6, threads=2)
    assert p.fit_settings() == FitSettings(40, 6, 7, threads=2, ties="worst", empty="skip")
    p = Protocol(dataset="catboost-querywise", metric="ERR@10")
    assert p.metric == "err@10"
    assert p.fit_settings() == FitSettings(1000, 100, 10, metric="err", gain="linear", max_grade=6.0)


def test_catboost_trainer_refuses_input_order_ties() -> None:
    """CatBoost's NDCG breaks ties worst-case: asking for another convention is an error, not a silent one."""
    settings = FitSettings(10, 3, 5, ties="input", empty="one")
    data = load_fold("mq2008", 1, None, None, 20)
    with pytest.raises(ValueError, match=r"CatBoost's NDCG, which breaks ties worst-case.*Use ties='worst'"):
        TRAINERS["catboost"](Recipe({"loss_function": "YetiRank"}), {}, data, 0, settings)


def test_fit_with_no_relevant_validation_query_is_a_clear_error() -> None:
    assert empty_queries(load_fold("mq2008", 3, None, None, 1).vali).all()
    p = Protocol(folds=(3,), seeds=(0,), budget=1, max_rounds=3, patience=2, max_queries=1)
    for method in ("cb-yetirank", "lgb-lambdarank"):
        config = sample_configs(METHODS[method], 1)[0]
        with pytest.raises(ValueError, match="No validation query of mq2008 fold 3 has a relevant document"):
            fit_run(METHODS[method], 0, config, 3, 0, p)


def test_catboost_methods_need_catboost(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "catboost" else real(name, *a)
    )
    names = list(available_methods())
    assert names == [m for m in METHODS if METHODS[m].booster != "catboost"]
    assert "sr-lgb" in names and not any(m.startswith(("cb-", "sr-cb")) for m in names)


# ------------------------------------------------------------------------ multiple comparisons
def test_holm_matches_the_step_down_procedure() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005, float("nan")]) == pytest.approx(
        [0.03, 0.06, 0.06, 0.02, np.nan], nan_ok=True
    )
    assert holm([0.5]) == pytest.approx([0.5]) and np.isnan(holm([float("nan")])).all()
    rng = np.random.default_rng(3)
    for m in (1, 2, 6, 12, 40):
        for _ in range(50):
            p = rng.uniform(0, 0.2, m) ** rng.uniform(0.5, 3)
            p[rng.random(m) < 0.1] = np.nan
            for alpha in (0.01, 0.05, 0.1):
                assert set(np.flatnonzero(holm(p) <= alpha)) == naive_holm_rejections(p, alpha)
            # Never fewer rejections than Bonferroni, never more than no correction.
            finite = np.isfinite(p)
            assert np.all(holm(p)[finite] <= np.minimum(1.0, p[finite] * finite.sum()) + 1e-15)
            assert np.all(holm(p)[finite] >= p[finite])
    with pytest.raises(ValueError, match="p-values in \\[0, 1\\]"):
        holm([0.5, 1.5])


def test_a_win_must_survive_holms_correction() -> None:
    """The quick preset printed "sr-lgb **wins** ... p = 0.013" uncorrected over its 6 comparisons."""
    m = "NDCG@5"
    base = MethodSummary("lgb-lambdarank", [], [], {}, {m: 0.70}, {}, {m: 0.0}, {m: 1.0}, {m: 1.0})
    names = ["sr-lgb", "sr-lgb-sglb", "softrank-lgb", "lgb-xendcg", "xgb-ndcg", "sr-xgb"]
    p_values = [0.013, 0.4, 0.6, 0.2, 0.9, 0.0015]
    others = [
        MethodSummary(n, [], [], {}, {m: 0.72}, {}, {m: 0.02}, {m: p}, {m: p})
        for n, p in zip(names, p_values, strict=True)
    ]
    _adjust([base, *others], [m], "lgb-lambdarank")
    assert others[0].holm_t[m] == pytest.approx(5 * 0.013) and others[5].holm_rand[m] == pytest.approx(
        6 * 0.0015
    )
    outcome = type("Outcome", (), {"protocol": Protocol(metric="ndcg@5")})()
    summary = Summary(outcome, [m], [base, *others], "lgb-lambdarank", 0.0, 100, 1000, 0, 7)
    text = verdict_text(summary)
    assert "`sr-lgb` ties (no significant difference) on NDCG@5" in text
    assert "paired t p = 0.013 (Holm 0.065)" in text
    assert "`sr-xgb` **wins** on NDCG@5" in text and text.count("**wins**") == 1


# ------------------------------------------------------------------------------------ issue 9 additions
def test_lightgbm_kept_model_skips_iterations_that_stored_no_tree() -> None:
    """An objective that gives no usable gradient at some calls makes LightGBM store no tree for those
    iterations; the kept model (and its test scores) must be the trees of the best *iteration*, not the first
    best_iteration trees."""
    data = load_fold("mq2008", 1, None, None, 80)
    calls = [0]

    def sometimes_flat(preds: np.ndarray, train: Any) -> tuple[np.ndarray, np.ndarray]:
        calls[0] += 1
        y = train.get_label()
        grad = np.zeros_like(preds) if calls[0] % 3 == 0 else (preds - y) * (1 + 0.1 * (calls[0] % 5))
        return grad, np.ones_like(preds)

    booster = {"learning_rate": 0.3, "num_leaves": 7, "min_data_in_leaf": 5}
    settings = FitSettings(40, 10, 5)
    fit = TRAINERS["lightgbm"](Recipe({}, objective=sometimes_flat), booster, data, 0, settings)
    vali = metrics.ndcg(data.vali.y, fit.vali_scores, data.vali.group, k=5, ties="worst", empty="skip")
    assert fit.best_iteration >= 4  # empty iterations (every third) came before the kept one
    assert fit.curve[fit.best_iteration - 1] == pytest.approx(vali, abs=1e-12)


@pytest.mark.parametrize("objective", ["rank:ndcg", "rank:map", "stochrank"])
def test_xgboost_leaf_size_and_l2_are_documents_times_the_methods_mean_hessian(objective: str) -> None:
    """XGBoost's space draws min_leaf_documents and l2_documents; the trainer fits exactly as with
    min_child_weight and reg_lambda = that many times the method's mean Hessian per document, measured
    without advancing the objective's call count (which seeds its noise); stochrank's mean is its own
    Hessians' mean at the first call."""
    import xgboost as xgb

    data = load_fold("mq2008", 1, None, None, 80)
    base = {"learning_rate": 0.3, "max_depth": 6}
    settings = FitSettings(12, 12, 5)

    def recipe() -> Recipe:
        if objective == "stochrank":
            return Recipe({}, objective=stochrank.ndcg(k=5, seed=3))
        return Recipe({"objective": objective}, binary_labels=objective == "rank:map")

    # train_xgboost's parameters: a callable objective runs under rank:ndcg with no intercept
    custom = {"objective": "rank:ndcg", "base_score": 0.0}
    own = custom if objective == "stochrank" else {"objective": objective}
    params = {**base, **own, "tree_method": "hist", "nthread": 1, "seed": 0}
    labels = (data.train.y > 0).astype(np.float64) if objective == "rank:map" else data.train.y
    train = xgb.DMatrix(data.train.X, labels, group=data.train.group, nthread=1)
    mean = xgboost_hessian_per_document(params, train, recipe().objective)
    if objective == "stochrank":
        _, hess = stochrank.ndcg(k=5, seed=3)(np.zeros(train.num_row()), train)
        assert mean == pytest.approx(float(np.mean(hess)), rel=1e-5)
    else:
        # lambda Hessians (0.016-0.17 per document on generated data): one leaf weight would count 6-64
        # times as many documents for LambdaMART as for stochrank
        assert 0.01 < mean < 0.2

    def fit(booster: dict[str, Any]) -> Any:
        return TRAINERS["xgboost"](recipe(), {**base, **booster}, data, 0, settings).test_scores

    documents, l2 = 20, 5.0
    converted = fit({"min_leaf_documents": documents, "l2_documents": l2})
    in_hessian_units = fit({"min_child_weight": documents * mean, "reg_lambda": l2 * mean})
    np.testing.assert_array_equal(converted, in_hessian_units)
    assert not np.array_equal(converted, fit({"min_child_weight": documents * mean}))  # the L2 binds
    assert not np.array_equal(converted, fit({"reg_lambda": l2 * mean}))  # the leaf size binds


@pytest.mark.parametrize("objective", ["lambdarank", "stochrank"])
def test_lightgbm_l2_is_documents_times_the_methods_mean_hessian(objective: str) -> None:
    """LightGBM's space draws l2_documents; the trainer fits exactly as with lambda_l2 = that many times the
    method's mean Hessian per document at the first tree, which for a callable objective is the mean of the
    Hessians it returns at zero scores (measured on a copy: the objective's call count is untouched)."""
    data = load_fold("mq2008", 1, None, None, 80)
    base = {"learning_rate": 0.3, "num_leaves": 15, "max_depth": 6, "min_data_in_leaf": 5}
    settings = FitSettings(12, 12, 5)

    def recipe() -> Recipe:
        if objective == "stochrank":
            return Recipe({}, objective=stochrank.ndcg(k=5, seed=3))
        return Recipe({"objective": "lambdarank"})

    params = {**base, **recipe().params, "verbose": -1, "num_threads": 1, "seed": 0}
    mean = lightgbm_hessian_per_document(params, data.train, recipe().objective)
    if objective == "stochrank":
        import lightgbm as lgb

        train = lgb.Dataset(data.train.X, data.train.y, group=data.train.group).construct()
        _, hess = stochrank.ndcg(k=5, seed=3)(np.zeros(data.train.y.size), train)
        assert mean == pytest.approx(float(np.mean(hess)), rel=1e-5)
    else:
        assert 0.01 < mean < 0.1  # lambdarank's lambda derivatives, normalised per query by default

    def fit(booster: dict[str, Any]) -> Any:
        return TRAINERS["lightgbm"](recipe(), {**base, **booster}, data, 0, settings).test_scores

    converted = fit({"l2_documents": 5.0})
    np.testing.assert_array_equal(converted, fit({"lambda_l2": 5.0 * mean}))
    assert not np.array_equal(converted, fit({}))  # the L2 binds


def test_lightgbm_hessian_per_document_is_zero_when_the_first_tree_cannot_split() -> None:
    """Without a relevant document every lambda is zero, the stump makes no split and records no Hessian
    sum: the mean is 0 (as XGBoost's cover), so l2_documents converts to lambda_l2 = 0 instead of failing."""
    train = load_fold("mq2008", 1, None, None, 80).train
    flat = dataclasses.replace(train, y=np.zeros_like(train.y))
    params = {"objective": "lambdarank", "verbose": -1, "num_threads": 1}
    assert lightgbm_hessian_per_document(params, flat) == 0.0
    assert lightgbm_hessian_per_document(params, train) > 0.0


def test_same_booster_pairs_name_each_boosters_lambdamart() -> None:
    methods = [
        "lgb-lambdarank",
        "sr-lgb",
        "xgb-ndcg",
        "xgb-map",
        "sr-xgb",
        "cb-yetirank",
        "sr-cb",
        "lgb-xendcg",
    ]
    assert booster_pairs(methods) == [
        ("sr-lgb", "lgb-lambdarank"), ("sr-xgb", "xgb-ndcg"), ("sr-xgb", "xgb-map"), ("sr-cb", "cb-yetirank"),
    ]  # fmt: skip
    assert booster_pairs(["sr-lgb", "xgb-ndcg"]) == []


@pytest.mark.parametrize(
    ("metric", "objective", "cb_lambdamart", "cb_yetirank"),
    [
        ("ndcg@5", "ndcg@5", "LambdaMart:metric=NDCG;top=5;type=Exp", "YetiRank"),
        ("mrr", "mrr", "LambdaMart:metric=MRR", "YetiRank:mode=MRR"),
        ("err@10", "err@10", None, None),
    ],
)
def test_metric_sets_every_methods_objective(metric: str, objective: str, cb_lambdamart, cb_yetirank) -> None:
    """--metric: stochrank methods optimise the target, baselines keep LambdaMART (in the target's mode where
    the booster has one), early stopping is on the target, and methods that cannot run it say why."""
    protocol = Protocol(metric=metric)
    target = protocol.target
    assert protocol.fit_settings().feval().name == f"sr-{objective}"  # feval logs as sr-<metric>
    for name, method in METHODS.items():
        config = sample_configs(method, 1)[0]
        why = method.unsupported(target)
        if why is not None:
            assert name.startswith(("cb-", "sr-cb", "softrank", "xgb-map")) or name in NDCG_AIMED
            with pytest.raises(ValueError, match=f"{name} does not run --metric {target.spec}"):
                fit_run(method, 0, config, 1, 0, Protocol(metric=metric, folds=(1,), seeds=(0,), budget=1))
            continue
        recipe = method.build(config["own"], config["booster"], target, 0)
        if method.stochrank:  # judged at the target; a Newton-leaf method may train at a deeper cut-off
            k = training_cutoff(config["own"].get("training_cutoff", "k"), target)
            aim = "ndcg" if name in NDCG_AIMED else target.metric
            assert recipe.objective.name == (aim if k is None else f"{aim}@{k}")
        elif name == "cb-lambdamart":
            assert recipe.params["loss_function"] == cb_lambdamart
        elif name == "cb-yetirank":
            assert recipe.params["loss_function"] == cb_yetirank
    assert ("xgb-map" in METHODS and METHODS["xgb-map"].unsupported(target) is None) == (metric == "mrr")


def test_package_version_finds_a_package_installed_under_another_distribution_name(monkeypatch):
    """``xgboost-cpu`` installs the package ``xgboost``: the machine line must still give its version."""
    real_version = metadata.version

    def version(name):
        if name == "xgboost":
            raise metadata.PackageNotFoundError(name)
        return real_version(name)

    monkeypatch.setattr(metadata, "version", version)
    monkeypatch.setattr(metadata, "packages_distributions", lambda: {"xgboost": ["numpy"]})
    assert results.package_version("xgboost") == real_version("numpy")
    assert results.package_version("no-such-package") == "not installed"


def test_section_writes_its_own_section_and_leaves_the_comparison_of_record(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """``--section`` keeps a run with another method list or budget from replacing the record section."""
    results_md = tmp_path / "RESULTS.md"
    record = "<!-- mq2008_comparison:start -->\nTHE-RECORD\n<!-- mq2008_comparison:end -->\n"
    other = "<!-- training_time:start -->\n## 2. Per-iteration training time\n<!-- training_time:end -->\n"
    results_md.write_text("# results\n\n" + record + other)
    out = tmp_path / "out"
    argv = [*TINY, "--seeds", "1", "--out", str(out), "--results", str(results_md)]
    assert main([*argv, "--section", "mq2008_extension"]) == 0
    text = results_md.read_text()
    assert record in text and other in text  # untouched
    extension = text.split("<!-- mq2008_extension:start -->")[1].split("<!-- mq2008_extension:end -->")[0]
    assert "(quick preset; 2 configurations per method × 1 seed; methods lgb-lambdarank, sr-lgb)" in extension
    assert (tmp_path / "section_mq2008_extension_learning_curves.png").exists()
    assert not (tmp_path / "mq2008_learning_curves.png").exists()
    assert (out / "mq2008_extension" / "results.csv").exists() and not (out / "results.csv").exists()
    capsys.readouterr()
    # Again, its own section is rewritten; without --out the fit cache is the record run's and the tables
    # go to a folder of their own beside it.
    monkeypatch.chdir(tmp_path)
    default_out = [a for a in argv if a not in ("--out", str(out))]
    assert main([*default_out, "--section", "mq2008_extension"]) == 0
    record_folder = tmp_path / "bench_runs" / "mq2008"
    assert (record_folder / "runs").is_dir() and not (record_folder / "results.csv").exists()
    assert (record_folder / "mq2008_extension" / "results.csv").exists()
    assert results_md.read_text().count("<!-- mq2008_extension:start -->") == 1
    capsys.readouterr()
    for args, message in (
        ([*argv, "--section", "a b"], "use letters, digits"),
        ([*TINY, "--section", "x"], "give --results too"),
        ([*argv, "--section", "mq2008_comparison"], "comparisons of record"),
        ([*argv, "--section", "training_time"], "from another script"),
        ([*argv, "--section", "runs"], "fit cache"),
        ([*argv, "--metric", "mrr", "--section", "mq2008_extension"], "another dataset or metric"),
    ):
        with pytest.raises(SystemExit):
            parse_args(args)
        assert message in capsys.readouterr().err
