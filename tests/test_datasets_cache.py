"""The loader's cache of parsed files is bounded (least recently used out first) and can be cleared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stochrank.datasets import DEFAULT_MAX_MB, cache_dir, cache_info, clear_cache, load_svmlight_ranking
from stochrank.datasets._eviction import evict, max_bytes


def _ranking_file(path: Path, rows: int) -> Path:
    lines = [f"{i % 3} qid:{i // 4} 1:{i}.5 2:{(i * 7) % 5}" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _age(entry: Path, seconds_ago: float) -> None:
    now = entry.stat().st_mtime
    os.utime(entry, (now - seconds_ago, now - seconds_ago))


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("STOCHRANK_CACHE", str(folder))
    monkeypatch.delenv("STOCHRANK_CACHE_MAX_MB", raising=False)
    return folder


def _entries(cache: Path) -> list[str]:
    """The source file of every cache entry, by name (entries are named ``<path parts>_<file>-<digests>``)."""
    return sorted(p.name.split("-")[-3].rsplit("_", 1)[-1] for p in cache.glob("*.npz"))


def _entry(cache: Path, source: str) -> Path:
    (entry,) = (p for p in cache.glob("*.npz") if p.name.split("-")[-3].endswith(f"_{source}"))
    return entry


def test_cap_evicts_the_least_recently_used_entry_and_a_hit_counts_as_use(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [_ranking_file(tmp_path / f"f{i}.txt", 200) for i in range(3)]
    first = load_svmlight_ranking(files[0], 2, cache=True)
    load_svmlight_ranking(files[1], 2, cache=True)
    assert _entries(cache) == ["f0.txt", "f1.txt"]
    _age(_entry(cache, "f0.txt"), 200)  # f0 used 200 s ago, f1 100 s ago: f0 is the oldest
    _age(_entry(cache, "f1.txt"), 100)
    size = _entry(cache, "f0.txt").stat().st_size

    again = load_svmlight_ranking(files[0], 2, cache=True)  # a hit: f0 becomes the most recent
    assert (again.X == first.X).all()
    monkeypatch.setenv("STOCHRANK_CACHE_MAX_MB", str(2.5 * size / 2**20))  # room for two entries
    load_svmlight_ranking(files[2], 2, cache=True)
    assert _entries(cache) == ["f0.txt", "f2.txt"]


def test_entry_just_written_survives_a_cap_below_its_size(cache: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("STOCHRANK_CACHE_MAX_MB", "0")
    load_svmlight_ranking(_ranking_file(tmp_path / "a.txt", 50), 2, cache=True)
    load_svmlight_ranking(_ranking_file(tmp_path / "b.txt", 50), 2, cache=True)
    assert _entries(cache) == ["b.txt"]


def test_evict_frees_oldest_first_and_reports_bytes(tmp_path: Path) -> None:
    sizes = {"old.npz": 300, "mid.npz": 200, "new.npz": 100}
    for age, (name, size) in enumerate(sizes.items()):
        path = tmp_path / name
        path.write_bytes(b"x" * size)
        _age(path, 100 - age)
    assert evict(tmp_path, limit=350) == 300
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mid.npz", "new.npz"]
    assert evict(tmp_path, keep=tmp_path / "mid.npz", limit=0) == 100
    assert [p.name for p in tmp_path.iterdir()] == ["mid.npz"]


def test_clear_cache_removes_entries_only_and_reports_bytes(cache: Path, tmp_path: Path) -> None:
    load_svmlight_ranking(_ranking_file(tmp_path / "a.txt", 50), 2, cache=True)
    (entry,) = cache.glob("*.npz")
    (cache / "README").write_text("someone else's file")
    info = cache_info()
    assert (info.directory, info.entries, info.size_bytes) == (cache_dir(), 1, entry.stat().st_size)
    assert clear_cache() == info.size_bytes
    assert [p.name for p in cache.iterdir()] == ["README"]
    assert clear_cache() == 0 and clear_cache(tmp_path / "absent") == 0


def test_cache_cap_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STOCHRANK_CACHE_MAX_MB", raising=False)
    assert max_bytes() == DEFAULT_MAX_MB * 2**20 == cache_info().max_bytes
    monkeypatch.setenv("STOCHRANK_CACHE_MAX_MB", "1.5")
    assert max_bytes() == 3 * 2**19
    for bad in ("-1", "nan", "many"):
        monkeypatch.setenv("STOCHRANK_CACHE_MAX_MB", bad)
        with pytest.raises(
            ValueError, match=rf"STOCHRANK_CACHE_MAX_MB must be a non-negative .* got '{bad}'"
        ):
            max_bytes()
