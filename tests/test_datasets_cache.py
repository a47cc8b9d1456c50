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


def _entry_name(stem: str) -> str:
    """A name as the cache writes it: ``<stem>-<16 hex digest>-<16 hex digest>.npz``."""
    return f"{stem}-0123456789abcdef-fedcba9876543210.npz"


def test_evict_frees_oldest_first_and_reports_bytes(tmp_path: Path) -> None:
    old, mid, new = (_entry_name(stem) for stem in ("old", "mid", "new"))
    for age, (name, size) in enumerate({old: 300, mid: 200, new: 100}.items()):
        path = tmp_path / name
        path.write_bytes(b"x" * size)
        _age(path, 100 - age)
    assert evict(tmp_path, limit=350) == 300
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mid, new])
    assert evict(tmp_path, keep=tmp_path / mid, limit=0) == 100
    assert [p.name for p in tmp_path.iterdir()] == [mid]


# Files that are not the cache's own: a user's results, and names close to an entry's or a temporary file's
# (a digest of 15 or 17 hex digits, upper-case hex, another suffix, another prefix, a folder).
_FOREIGN = [
    "my_results.npz",
    "a.txt-0123456789abcdef-fedcba987654321.npz",
    "a.txt-0123456789abcdef-fedcba98765432100.npz",
    "a.txt-0123456789ABCDEF-FEDCBA9876543210.npz",
    "a.txt-0123456789abcdef-fedcba9876543210.npz.bak",
    "a txt-0123456789abcdef-fedcba9876543210.npz",
    ".tmp-.npz",
    ".tmp-abc.npz",
    "tmp-abcd1234.npz",
]


def _foreign_files(folder: Path) -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {name: f"not stochrank's: {name}".encode() for name in _FOREIGN}
    for name, content in files.items():
        (folder / name).write_bytes(content)
        _age(folder / name, 1000)  # older than any entry: first in line if they counted as entries
    (folder / "sub-0123456789abcdef-fedcba9876543210.npz").mkdir()
    return files


def _assert_untouched(folder: Path, files: dict[str, bytes]) -> None:
    assert {name: (folder / name).read_bytes() for name in files if (folder / name).is_file()} == files
    assert (folder / "sub-0123456789abcdef-fedcba9876543210.npz").is_dir()


def test_clear_cache_and_eviction_never_touch_other_files_in_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "results"  # a folder of the user's, passed as load(..., cache=folder)
    files = _foreign_files(folder)
    data = _ranking_file(tmp_path / "a.txt", 50)
    load_svmlight_ranking(data, 2, cache=folder)
    (entry,) = set(folder.iterdir()) - {folder / name for name in files} - set(folder.glob("sub-*"))
    stale = folder / ".tmp-k3j_9x2q.npz"  # a write interrupted by a crash: the cache's own
    stale.write_bytes(b"partial")
    info = cache_info(folder)
    assert (info.entries, info.size_bytes) == (2, entry.stat().st_size + len(b"partial"))

    assert clear_cache(folder) == info.size_bytes
    assert not entry.exists() and not stale.exists()
    _assert_untouched(folder, files)
    assert cache_info(folder).entries == 0

    monkeypatch.setenv("STOCHRANK_CACHE_MAX_MB", "0")  # every write evicts all but itself
    load_svmlight_ranking(_ranking_file(tmp_path / "b.txt", 50), 2, cache=folder)
    load_svmlight_ranking(data, 2, cache=folder)
    assert [p.name.split("-")[-3] for p in folder.iterdir() if p.name not in files and p.is_file()] == [
        entry.name.split("-")[-3]
    ]
    _assert_untouched(folder, files)
    assert evict(folder, limit=0) > 0 and cache_info(folder).entries == 0
    _assert_untouched(folder, files)


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


def test_a_new_version_replaces_only_the_cache_entry_of_its_file(tmp_path: Path) -> None:
    """Rewriting an entry removes its older versions, not a user's file that shares the entry's prefix."""
    folder = tmp_path / "results"
    data = _ranking_file(tmp_path / "a.txt", 50)
    load_svmlight_ranking(data, 2, cache=folder)
    (first,) = folder.iterdir()
    namesake = folder / (first.name.rsplit("-", 1)[0] + "-my-notes.npz")  # the entry's prefix, not its form
    namesake.write_bytes(b"mine")
    _ranking_file(data, 60)  # the file changes: a new version of its entry is written
    os.utime(data, (first.stat().st_mtime + 10, first.stat().st_mtime + 10))
    load_svmlight_ranking(data, 2, cache=folder)
    assert not first.exists() and namesake.read_bytes() == b"mine"
    assert cache_info(folder).entries == 1
