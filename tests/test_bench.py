"""The benchmark runner: a tiny end-to-end run re-checked from its saved scores, the cache, the statistics,
the fairness of the search and the command-line errors."""

from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from stochrank import metrics
from stochrank.bench import METHODS, Protocol, run_protocol
from stochrank.bench.__main__ import main, parse_args
from stochrank.bench.methods import BOOSTER_SPACES, Choice, LogUniform, LogUniformInt, Uniform
from stochrank.bench.protocol import fit_run, load_fold, sample_configs
from stochrank.bench.stats import paired_randomization, paired_t
from stochrank.datasets import load

TINY = ["--methods", "sr-lgb,lgb-lambdarank", "--budget", "2", "--folds", "1", "--seeds", "2", "--max-queries", "40",
        "--max-rounds", "20", "--patience", "5", "--jobs", "1", "--n-resamples", "4000", "--no-progress"]  # fmt: skip
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
    assert "Trained 6 fit(s), 0 loaded" in capsys.readouterr().out  # 2 methods x (2 configs + 1 more seed)
    out = tmp_path / "out"

    # Re-evaluate every selected run from its saved test scores with stochrank.metrics.
    sel = load("mq2008", 1, "test")
    rows = int(sel.group[:40].sum())
    y, group = sel.y[:rows], sel.group[:40]
    runs = _csv(out / "runs.csv")
    selected = [r for r in runs if r["selected"] == "True"]
    assert len(runs) == 6 and len(selected) == 4 and {r["seed"] for r in selected} == {"0", "1"}
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
    assert (tmp_path / "mq2008_learning_curves.png").stat().st_size > 1000

    # Resumable: the same protocol again trains nothing and returns the same selection.
    protocol, methods, _, _ = parse_args(argv)
    outcome = run_protocol(protocol, methods, out / "runs")
    assert outcome.trained == 0 and len(outcome.runs) == 6
    assert {(r.method, r.config_index) for runs in outcome.selected.values() for r in runs} == {
        (r["method"], int(r["config"])) for r in selected
    }
    # A changed setting that alters fits (more rounds) is a different cache entry.
    bigger = Protocol(**{**protocol.__dict__, "max_rounds": 21, "folds": (1,), "seeds": (0,), "budget": 1})
    assert run_protocol(bigger, ["sr-lgb"], out / "runs").trained == 1


@pytest.mark.parametrize("method", ["xgb-ndcg", "cb-lambdamart", "cb-stochasticrank"])
def test_booster_early_stopping_curve_is_the_report_metric(method: str) -> None:
    """fit_run raises unless the booster's logged validation NDCG@k at its kept iteration equals
    stochrank.metrics.ndcg (worst ties, empty queries skipped) of the kept model: for CatBoost this checks
    the conversion from its own convention (empty query = 1)."""
    p = Protocol(folds=(2,), seeds=(0,), budget=1, max_rounds=15, patience=4, max_queries=60)
    config = sample_configs(METHODS[method], 1)[0]
    run = fit_run(METHODS[method], 0, config, 2, 0, p)
    vali = load_fold("mq2008", 2, None, None, 60).vali
    assert _empty_share(vali) > 0.1  # the conversion matters on this split
    assert 1 <= run.best_iteration <= run.rounds <= 15
    assert run.curve[run.best_iteration - 1] == pytest.approx(run.vali, abs=1e-6)
    assert run.vali == max(run.curve) or math.isclose(run.vali, max(run.curve), abs_tol=1e-6)


def _empty_share(split) -> float:
    starts = np.r_[0, np.cumsum(split.group)[:-1]]
    return float(np.mean(np.add.reduceat(split.y > 0, starts) == 0))


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
    assert methods[0] == "lgb-lambdarank" and set(methods) == set(METHODS)
    assert protocol.seeds == (0, 1) and protocol.folds == (3, 1) and protocol.max_rounds == 1000
    assert out == Path("bench_runs") / "mq2008"
    protocol, methods, _, _ = parse_args(["--methods", "sr-xgb,lgb-lambdarank", "--threads", "2"])
    assert methods == ["lgb-lambdarank", "sr-xgb"] and protocol.threads == 2 and protocol.budget == 3
