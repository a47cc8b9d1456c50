"""The command lines a user meets first: versions, presets in --help, a missing dataset, the loader cache."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import stochrank
from stochrank.bench.__main__ import PRESETS, main
from stochrank.bench.methods import METHODS

ROOT = Path(__file__).resolve().parents[1]


def _python(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=300, env=environment, check=False
    )


def test_bench_version_names_stochrank_and_every_booster(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert f"stochrank {stochrank.__version__}" in out
    for booster in ("lightgbm", "xgboost", "catboost"):
        assert f"{booster} {version(booster)}" in out


def test_bench_help_lists_every_preset_value(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # undo argparse's and textwrap's line breaks
    for name, preset in PRESETS.items():
        start = text.index(f"{name}: dataset {preset['dataset']}")
        line = text[start : start + 600]
        for key, label in [("seeds", "seeds"), ("budget", "budget"), ("max_rounds", "max rounds"),
                           ("patience", "patience"), ("jobs", "jobs")]:  # fmt: skip
            assert f"{label} {preset[key]}" in line, (name, label)
        assert "folds all" in line
        methods = preset["methods"] or tuple(METHODS)
        assert f"methods ({len(methods)}): {', '.join(methods)}" in line


@pytest.mark.slow
def test_bench_missing_dataset_says_where_to_get_it_without_traceback(tmp_path: Path) -> None:
    out = _python("-m", "stochrank.bench", "--dataset", "mslr-web30k", "--data-root", str(tmp_path),
                  "--out", str(tmp_path / "out"), "--no-progress")  # fmt: skip
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("python -m stochrank.bench: error: MSLR-WEB30K ('mslr-web30k') fold 1")
    assert "Obtain it from https://www.microsoft.com/en-us/research/project/mslr/" in out.stderr
    assert str(tmp_path / "MSLR-WEB30K" / "Fold1" / "test.txt") in out.stderr
    assert out.stdout == ""


@pytest.mark.slow
def test_datasets_command_line_shows_and_clears_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {"STOCHRANK_CACHE": str(cache)}
    loaded = _python("-c", "from stochrank.datasets import load_mq2008; load_mq2008(1, 'vali')", env=env)
    assert loaded.returncode == 0, loaded.stderr
    (entry,) = cache.glob("*.npz")
    (cache / "notes.txt").write_text("not ours")

    info = _python("-m", "stochrank.datasets", "info", env=env)
    assert info.returncode == 0 and info.stdout.startswith(f"{cache}: 1 entries, ")
    assert "(cap 4096 MiB)" in info.stdout

    cleared = _python("-m", "stochrank.datasets", "clear-cache", env=env)
    assert cleared.returncode == 0 and cleared.stdout.startswith("Removed 1 cache entries (")
    assert not entry.exists() and (cache / "notes.txt").exists()

    bad = _python("-m", "stochrank.datasets", "info", env={**env, "STOCHRANK_CACHE_MAX_MB": "lots"})
    assert bad.returncode == 2 and "STOCHRANK_CACHE_MAX_MB must be a non-negative number" in bad.stderr
    assert "Traceback" not in bad.stderr
