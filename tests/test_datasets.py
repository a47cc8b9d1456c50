"""stochrank.datasets: loaders on real files (bundled MQ2008, LightGBM's example with .query files, the
MSLR-format sample, CatBoost's querywise set), the official layouts, the cache, query-level
normalisation, bad files, and the synthetic generators.

Every parse is checked against an independent reader: a plain-Python LETOR line parser (``naive_parse``),
LightGBM's own file reader, the CatBoost TSV originals, or the publisher's checksums and counts.
Files under ``../shared/data`` (beside the checkout) are used only when present (the skip says so).
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import os
import pickle
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from stochrank.data import MQ2008_DIR
from stochrank.datasets import (
    DATASETS,
    RankingSplit,
    _svmlight,
    data_root,
    load,
    load_mq2008,
    load_svmlight_ranking,
    query_level_norm,
    split_queries,
    synthetic,
)

DATA = Path(__file__).resolve().parent / "data"
# The project's shared data folder beside the checkout (../shared/data), present in development
# checkouts; tests that need files only it holds skip without it.
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
MSLR_SAMPLE = DATA / "mslr_tiny_sample"
LGB_SAMPLE = DATA / "lightgbm_lambdarank"


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private cache per test and no data root from the environment."""
    monkeypatch.setenv("STOCHRANK_CACHE", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("STOCHRANK_DATA", raising=False)


# ------------------------------------------------------------------------------------ naive twins
def naive_parse(path: Path, n_features: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Plain-Python LETOR reader: (X float64, y, qid, group from contiguous qid runs)."""
    opener = gzip.open if path.suffix == ".gz" else open
    rows, labels, qids = [], [], []
    with opener(path, "rt") as handle:
        for line in handle:
            tokens = line.split("#", 1)[0].split()
            if not tokens:
                continue
            labels.append(float(tokens[0]))
            qids.append(int(tokens[1].removeprefix("qid:")))
            row = [0.0] * n_features
            for token in tokens[2:]:
                index, value = token.split(":")
                row[int(index) - 1] = float(value)
            rows.append(row)
    group = []
    for i, q in enumerate(qids):
        if i == 0 or q != qids[i - 1]:
            group.append(0)
        group[-1] += 1
    return np.array(rows), np.array(labels), np.array(qids), np.array(group)


def naive_query_norm(X: np.ndarray, group: np.ndarray) -> np.ndarray:
    out = np.zeros(X.shape)
    start = 0
    for size in group:
        for j in range(X.shape[1]):
            column = [float(v) for v in X[start : start + size, j]]
            lo, hi = min(column), max(column)
            for i in range(size):
                out[start + i, j] = (column[i] - lo) / (hi - lo) if hi > lo else 0.0
        start += size
    return out


def provenance_table(path: Path) -> dict[str, dict[str, str]]:
    """Rows of a PROVENANCE.md table, keyed by file name."""
    rows = {}
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0].endswith(".gz"):
            rows[cells[0]] = dict(
                zip(("rows", "queries", "max_index", "labels", "sha256"), cells[1:], strict=True)
            )
    return rows


def label_counts(y: np.ndarray) -> str:
    values, counts = np.unique(y, return_counts=True)
    return ", ".join(f"{v:g}:{c}" for v, c in zip(values, counts, strict=True))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def mslr_root(tmp_path: Path, name: str = "MSLR-WEB30K") -> Path:
    """A fake data root holding the MSLR-format sample in MSLR's official layout (vali = the test file)."""
    fold = tmp_path / "root" / name / "Fold1"
    fold.mkdir(parents=True)
    shutil.copy(MSLR_SAMPLE / "search_tiny_train.txt.gz", fold / "train.txt.gz")
    shutil.copy(MSLR_SAMPLE / "search_tiny_test.txt.gz", fold / "test.txt.gz")
    shutil.copy(MSLR_SAMPLE / "search_tiny_test.txt.gz", fold / "vali.txt.gz")
    return tmp_path / "root"


# --------------------------------------------------------------------------------------- MQ2008
def test_bundled_mq2008_matches_its_provenance() -> None:
    """Each bundled file has the publisher's bytes (sha256) and the documented rows, queries, labels."""
    table = provenance_table(MQ2008_DIR / "PROVENANCE.md")
    for fold in DATASETS["mq2008"].folds:
        for split in ("train", "vali", "test"):
            name = f"Fold{fold}/{split}.txt.gz"
            expected = table[name]
            assert hashlib.sha256((MQ2008_DIR / name).read_bytes()).hexdigest() == expected["sha256"].strip(
                "`"
            )
            data = load_mq2008(fold, split)
            assert data.X.shape == (int(expected["rows"]), 46) and data.X.dtype == np.float64
            assert data.n_queries == int(expected["queries"])
            assert label_counts(data.y) == expected["labels"]


@pytest.mark.skipif(
    not (SHARED / "MQ2008").is_dir(), reason="needs ../shared/data/MQ2008 (S1..S5 parts) beside the checkout"
)
def test_bundled_folds_are_the_rotated_parts_of_the_shared_copy() -> None:
    """Fold k = train S_k, S_k+1, S_k+2 / vali S_k+3 / test S_k+4 (mod 5), row for row (PROVENANCE.md)."""
    parts = {i: load_svmlight_ranking(SHARED / "MQ2008" / f"S{i}.txt.gz", 46) for i in range(1, 6)}
    for fold in range(1, 6):
        order = [(fold - 1 + j) % 5 + 1 for j in range(5)]
        expected = {"train": order[:3], "vali": order[3:4], "test": order[4:]}
        for split, ids in expected.items():
            data = load("mq2008", fold, split)
            for attr in ("X", "y", "qid", "group"):
                np.testing.assert_array_equal(
                    getattr(data, attr), np.concatenate([getattr(parts[i], attr) for i in ids])
                )


def test_fold4_train_groups_are_contiguous_qid_runs() -> None:
    """Fold4's training file is S4, S5, S1: qids fall back at the part boundaries, so groups must come
    from runs in file order, not from sorted ids."""
    data = load("mq2008", 4, "train")
    _, y, qid, group = naive_parse(MQ2008_DIR / "Fold4" / "train.txt.gz", 46)
    assert (np.diff(data.qid) < 0).any(), "Fold4 train is not sorted by qid"
    np.testing.assert_array_equal(data.qid, qid)
    np.testing.assert_array_equal(data.group, group)
    np.testing.assert_array_equal(data.y, y)
    starts = np.concatenate(([0], np.cumsum(data.group)[:-1]))
    assert np.unique(data.qid[starts]).size == data.n_queries == 470  # every run is a distinct query
    _, sorted_counts = np.unique(data.qid, return_counts=True)
    assert not np.array_equal(sorted_counts, data.group)  # what grouping by sorted qid would get wrong
    np.testing.assert_array_equal(data.query_index, np.repeat(np.arange(470), data.group))
    assert (np.diff(data.query_index) >= 0).all()


def test_mq2008_parse_matches_naive_reader() -> None:
    X, y, qid, group = naive_parse(MQ2008_DIR / "Fold1" / "vali.txt.gz", 46)
    data = load("mq2008", 1, "vali")
    for attr, expected in zip(("X", "y", "qid", "group"), (X, y, qid, group), strict=True):
        np.testing.assert_array_equal(getattr(data, attr), expected)


# -------------------------------------------------------------------------- other real files
def test_lightgbm_example_with_query_file_agrees_with_lightgbm(tmp_path: Path) -> None:
    lgb = pytest.importorskip("lightgbm")
    data = load_svmlight_ranking(LGB_SAMPLE / "rank.test.gz")  # finds rank.test.query.gz next to it
    sizes = np.loadtxt(LGB_SAMPLE / "rank.test.query.gz", dtype=np.int64)
    np.testing.assert_array_equal(data.group, sizes)
    assert data.X.shape == (768, 300) and data.n_queries == 50
    assert label_counts(data.y) == "0:206, 1:256, 2:252, 3:44, 4:10"
    np.testing.assert_array_equal(data.qid, np.repeat(np.arange(50), sizes))
    explicit = load_svmlight_ranking(LGB_SAMPLE / "rank.test.gz", 300, LGB_SAMPLE / "rank.test.query.gz")
    np.testing.assert_array_equal(explicit.X, data.X)
    # LightGBM's own reader (plain files; it loads rank.test.query itself)
    for name in ("rank.test", "rank.test.query"):
        with gzip.open(LGB_SAMPLE / f"{name}.gz", "rb") as src:
            (tmp_path / name).write_bytes(src.read())
    reference = lgb.Dataset(str(tmp_path / "rank.test"), params={"verbose": -1}).construct()
    np.testing.assert_array_equal(reference.get_label(), data.y)
    np.testing.assert_array_equal(np.diff(reference.get_field("group")), data.group)


def test_mslr_sample_through_the_official_mslr_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = mslr_root(tmp_path)
    for split, source, rows, queries, counts in (
        ("train", "search_tiny_train.txt.gz", 582, 7, "0:338, 1:155, 2:77, 3:6, 4:6"),
        ("test", "search_tiny_test.txt.gz", 403, 4, "0:185, 1:136, 2:79, 3:2, 4:1"),
    ):
        data = load("mslr-web30k", 1, split, root=root)
        assert data.X.shape == (rows, 136) and data.X.dtype == np.float32 and data.n_queries == queries
        assert label_counts(data.y) == counts
        X, y, qid, group = naive_parse(MSLR_SAMPLE / source, 136)
        np.testing.assert_array_equal(data.X, X.astype(np.float32))
        np.testing.assert_array_equal(data.y, y)
        np.testing.assert_array_equal(data.qid, qid)
        np.testing.assert_array_equal(data.group, group)
    monkeypatch.setenv("STOCHRANK_DATA", str(root))  # the environment variable is the fallback root
    assert data_root() == root
    np.testing.assert_array_equal(load("mslr-web30k", 1, "test").X, data.X)
    with pytest.raises(FileNotFoundError, match="MSLR-WEB10K"):  # the 10K layout is a different folder
        load("mslr-web10k", 1, "test")


@pytest.mark.skipif(
    not (SHARED / "CatBoost_querywise" / "train.svmlight.gz").is_file(),
    reason="needs ../shared/data/CatBoost_querywise beside the checkout",
)
def test_catboost_querywise_svmlight_matches_its_tsv_original() -> None:
    data = load_svmlight_ranking(SHARED / "CatBoost_querywise" / "train.svmlight.gz", 50)
    with gzip.open(SHARED / "CatBoost_querywise" / "train.gz", "rt") as handle:
        columns = [line.rstrip("\n").split("\t") for line in handle]
    runs = [len(list(rows)) for _, rows in itertools.groupby(c[1] for c in columns)]  # GroupId runs
    assert data.X.shape == (1500, 50) and data.n_queries == 91
    np.testing.assert_array_equal(data.group, runs)
    np.testing.assert_array_equal(data.y, [float(c[2]) for c in columns])
    np.testing.assert_array_equal(data.X, [[float(v) for v in c[5:]] for c in columns])


def test_yahoo_and_istella_layouts(tmp_path: Path) -> None:
    """Yahoo names its validation file 'valid' and has 700 columns; Istella's 1.8e308 sentinel is clipped
    to float32's maximum, keeping its order above every other value."""
    root = tmp_path / "root"
    write(root / "ltrc_yahoo" / "set1.valid.txt", "2 qid:5 1:0.5 700:1\n0 qid:5 3:0.25\n")
    data = load("yahoo-set1", 1, "vali", root=root)
    assert data.X.shape == (2, 700) and data.X[0, 699] == 1.0 and data.X[1, 2] == 0.25
    write(
        root / "istella" / "full" / "train.txt",
        "1 qid:1 1:1.79769313486e+308 2:3\n0 qid:1 1:5 2:-1.79769313486e+308\n",
    )
    data = load("istella", 1, "train", root=root)
    big = np.finfo(np.float32).max
    np.testing.assert_array_equal(data.X[:, :2], np.array([[big, 3], [5, -big]], dtype=np.float32))
    write(root / "sample" / "test.txt", "4 qid:9 220:2\n")  # istella-s-letor.tar.gz unpacked into the root
    assert load("istella-s", 1, "test", root=root).X[0, 219] == 2.0


# -------------------------------------------------------------------------------- normalisation
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_query_level_norm_matches_naive_twin(dtype: type) -> None:
    rng = np.random.default_rng(3)
    group = np.array([1, 4, 7, 2, 30])
    X = (rng.normal(size=(group.sum(), 6)) * 1e3 - 50).astype(dtype)
    X[1:5, 2] = 7.5  # constant within the second query -> 0
    X[:, 4] = -3.0  # constant everywhere -> 0
    out = query_level_norm(X, group)
    assert out.dtype == dtype
    expected = naive_query_norm(X, group)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-15 if dtype is np.float64 else 1e-7)
    assert out[1:5, 2].tolist() == [0.0] * 4 and (out[:, 4] == 0).all() and (out[0] == 0).all()


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.bool_, np.longdouble])
def test_query_level_norm_of_other_real_dtypes_is_the_float64_result(dtype: type) -> None:
    """The compiled kernel takes float32/float64: other real dtypes (float16 used to reach Numba and fail
    with a bare NotImplementedError) are converted to float64 first."""
    rng = np.random.default_rng(4)
    group = np.array([3, 5, 1, 6])
    X = rng.integers(0, 2 if dtype is np.bool_ else 40, size=(group.sum(), 4)).astype(dtype)
    out = query_level_norm(X, group)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, naive_query_norm(X.astype(np.float64), group))
    assert 0 < np.count_nonzero(out) < out.size
    with pytest.raises(ValueError, match="'X' must hold real numbers; got dtype complex128"):
        query_level_norm(X.astype(np.complex128), group)


def test_normalize_query_is_the_identity_on_letor_querylevelnorm_files() -> None:
    """MQ2008's files are already QueryLevelNorm: re-normalising must reproduce them exactly."""
    for fold, split in ((1, "train"), (4, "train"), (5, "test")):
        raw = load("mq2008", fold, split)
        np.testing.assert_array_equal(load("mq2008", fold, split, normalize="query").X, raw.X)


def test_normalize_query_on_raw_features(tmp_path: Path) -> None:
    root = mslr_root(tmp_path)
    raw = load("mslr-web30k", 1, "train", root=root)
    normed = load("mslr-web30k", 1, "train", root=root, normalize="query")
    np.testing.assert_allclose(normed.X, naive_query_norm(raw.X, raw.group), atol=1e-7)
    assert normed.X.min() == 0.0 and normed.X.max() == 1.0
    np.testing.assert_array_equal(normed.y, raw.y)
    with pytest.raises(ValueError, match="NaN or infinite"):
        query_level_norm(np.array([[np.nan], [1.0]]), [2])
    with pytest.raises(ValueError, match="sums to 3"):
        query_level_norm(np.zeros((2, 1)), [3])


# ---------------------------------------------------------------------------------------- cache
def test_cache_hit_is_identical_and_a_changed_file_is_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "data.txt"
    shutil.copy(MQ2008_DIR / "Fold1" / "vali.txt.gz", tmp_path / "data.txt.gz")
    with gzip.open(tmp_path / "data.txt.gz", "rb") as src:
        source.write_bytes(src.read())
    cache = tmp_path / "cache"
    first = load_svmlight_ranking(source, 46, cache=cache)
    assert len(list(cache.glob("*.npz"))) == 1

    real_parse = _svmlight._parse
    monkeypatch.setattr(_svmlight, "_parse", lambda *a: pytest.fail("a cache hit must not parse"))
    second = load_svmlight_ranking(source, 46, cache=cache)
    for attr in ("X", "y", "qid", "group"):
        np.testing.assert_array_equal(getattr(second, attr), getattr(first, attr))
        assert getattr(second, attr).dtype == getattr(first, attr).dtype

    calls = []
    monkeypatch.setattr(_svmlight, "_parse", lambda *a: calls.append(1) or real_parse(*a))
    lines = source.read_text().splitlines(keepends=True)
    source.write_text("".join(["2" + lines[0][1:], *lines[1:]]))  # relabel the first document
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
    changed = load_svmlight_ranking(source, 46, cache=cache)
    assert calls == [1] and changed.y[0] == 2.0 and first.y[0] != 2.0
    np.testing.assert_array_equal(changed.y[1:], first.y[1:])
    assert len(list(cache.glob("*.npz"))) == 1  # the stale entry was replaced

    float32 = load_svmlight_ranking(source, 46, dtype=np.float32, cache=cache)  # other options: own entry
    assert calls == [1, 1] and float32.X.dtype == np.float32 and len(list(cache.glob("*.npz"))) == 2
    assert load("mq2008", 1, "vali", cache=False).X.shape == first.X.shape


def test_corrupt_cache_file_is_parsed_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = load_svmlight_ranking(MQ2008_DIR / "Fold1" / "test.txt.gz", 46, cache=cache)
    (entry,) = cache.glob("*.npz")
    entry.write_bytes(b"not a zip file")
    again = load_svmlight_ranking(MQ2008_DIR / "Fold1" / "test.txt.gz", 46, cache=cache)
    np.testing.assert_array_equal(again.X, first.X)


def test_an_edit_keeping_size_and_mtime_is_not_served_from_the_cache(tmp_path: Path) -> None:
    """The key is the content, not (size, mtime): a same-length edit restored to the old mtime (rsync -t,
    tar x, a coarse-mtime file system, a copy within the same second) must be parsed again."""
    source = write(tmp_path / "f.txt", "1 qid:1 1:0.5\n0 qid:1 1:0.25\n")
    cache = tmp_path / "cache"
    assert load_svmlight_ranking(source, cache=cache).y.tolist() == [1.0, 0.0]
    stat = source.stat()
    source.write_text("2 qid:1 1:0.5\n0 qid:1 1:0.75\n")  # same size
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source.stat().st_size == stat.st_size and source.stat().st_mtime_ns == stat.st_mtime_ns
    edited = load_svmlight_ranking(source, cache=cache)
    assert edited.y.tolist() == [2.0, 0.0] and edited.X[:, 0].tolist() == [0.5, 0.75]
    assert len(list(cache.glob("*.npz"))) == 1  # the entry of the old content was replaced


def test_a_file_changed_while_it_is_parsed_is_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = write(tmp_path / "f.txt", "1 qid:1 1:0.5\n0 qid:1 1:0.25\n")
    cache = tmp_path / "cache"
    real_parse = _svmlight._parse

    def parse_then_edit(*args: object) -> object:
        parsed = real_parse(*args)
        source.write_text("2 qid:1 1:0.5\n0 qid:1 1:0.75\n")  # another process rewrites it meanwhile
        return parsed

    monkeypatch.setattr(_svmlight, "_parse", parse_then_edit)
    assert load_svmlight_ranking(source, cache=cache).y.tolist() == [1.0, 0.0]
    assert not list(cache.glob("*.npz"))  # the arrays match neither the old nor the new content's key
    monkeypatch.setattr(_svmlight, "_parse", real_parse)
    assert load_svmlight_ranking(source, cache=cache).y.tolist() == [2.0, 0.0]


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_truncated_or_damaged_cache_zip_is_parsed_again(tmp_path: Path, damage: str) -> None:
    """A half-written or bit-flipped .npz is a zip file that zipfile refuses (BadZipFile): parse again."""
    source = MQ2008_DIR / "Fold1" / "vali.txt.gz"
    cache = tmp_path / "cache"
    first = load_svmlight_ranking(source, 46, cache=cache)
    (entry,) = cache.glob("*.npz")
    blob = bytearray(entry.read_bytes())
    if damage == "truncate":
        blob = blob[: len(blob) // 2]
    else:  # inside the stored X array: zipfile's CRC check fails on reading it
        blob[len(blob) // 3] ^= 0xFF
    entry.write_bytes(bytes(blob))
    for _ in range(2):  # the damaged entry is replaced, so the second load is a clean hit
        again = load_svmlight_ranking(source, 46, cache=cache)
        for attr in ("X", "y", "qid", "group"):
            np.testing.assert_array_equal(getattr(again, attr), getattr(first, attr))


# ------------------------------------------------------------------------------------ bad files
def test_missing_qid_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "f.txt", "# header\n1 qid:1 1:0.5\n0 qid:1 1:0.1\n2 1:0.3\n")
    with pytest.raises(ValueError, match=r"1 of the 3 rows .* no 'qid:<id>' \(first at line 4\)"):
        load_svmlight_ranking(path)
    no_qid = write(tmp_path / "g.txt", "1 1:0.5\n0 1:0.1\n")
    with pytest.raises(ValueError, match="query file with the group sizes"):
        load_svmlight_ranking(no_qid)


def test_non_contiguous_queries_are_new_queries_or_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "f.txt", "1 qid:7 1:1\n0 qid:7 1:2\n1 qid:3 1:3\n0 qid:7 1:4\n2 qid:7 1:5\n")
    data = load_svmlight_ranking(path)
    np.testing.assert_array_equal(data.group, [2, 1, 2])  # the second run of qid 7 is its own query
    np.testing.assert_array_equal(data.query_index, [0, 0, 1, 2, 2])
    with pytest.raises(ValueError, match=r"Query 7 .* row 0 and again at row 3"):
        load_svmlight_ranking(path, repeated_qid="error")
    with pytest.raises(ValueError, match=r"'repeated_qid' parameter .* 'new_query', 'error'"):
        load_svmlight_ranking(path, repeated_qid="merge")


def test_wrong_feature_counts(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root / "MSLR-WEB10K" / "Fold2" / "train.txt", "1 qid:1 1:0.5 137:2\n")
    with pytest.raises(ValueError, match=r"feature index 137 but this data has 136 features"):
        load("mslr-web10k", 2, "train", root=root)
    write(root / "MQ2007" / "Fold1" / "test.txt", "1 qid:1 0:0.5 1:2\n")
    with pytest.raises(ValueError, match="uses feature index 0"):
        load("mq2007", 1, "test", root=root)
    write(root / "MQ2007" / "Fold1" / "vali.txt", "1 qid:1 1:2\n")  # fewer features: zeros, 46 columns
    assert load("mq2007", 1, "vali", root=root).X.shape == (1, 46)


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_empty_files(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "root" / "MQ2007" / "Fold3" / "train.txt", text)
    with pytest.raises(ValueError, match="contains no data rows"):
        load("mq2007", 3, "train", root=tmp_path / "root")
    with pytest.raises(ValueError, match="contains no data rows"):
        load_svmlight_ranking(path)


@pytest.mark.parametrize(("label", "shown"), [("5", "5"), ("-1", "-1"), ("1.5", "1.5")])
def test_labels_outside_the_dataset_grades(tmp_path: Path, label: str, shown: str) -> None:
    write(tmp_path / "MQ2007" / "Fold1" / "train.txt", f"1 qid:1 1:0.5\n{label} qid:1 1:0.1\n")
    with pytest.raises(
        ValueError, match=rf"integer grades 0\.\.2 \(first: {re.escape(shown)} in data row 1\)"
    ):
        load("mq2007", 1, "train", root=tmp_path)


@pytest.mark.parametrize(("label", "shown"), [("-1", "-1"), ("nan", "nan"), ("inf", "inf"), ("-inf", "-inf")])
@pytest.mark.parametrize("allow_nan", [True, False])
def test_generic_loader_refuses_nan_infinite_and_negative_labels(
    tmp_path: Path, label: str, shown: str, allow_nan: bool
) -> None:
    """One label rule: finite and >= 0, as every metric and objective needs (load() also wants the grades)."""
    path = write(tmp_path / "f.txt", f"1 qid:1 1:0.5\n0 qid:1 1:0.2\n{label} qid:2 1:0.1\n2 qid:2 1:0.3\n")
    pattern = (
        rf"{re.escape(str(path))} has 1 labels that are NaN, infinite or negative \(first: {shown} in data"
    )
    for cache in (False, tmp_path / "cache", tmp_path / "cache"):  # the second cached load is a hit
        with pytest.raises(ValueError, match=pattern):
            load_svmlight_ranking(path, allow_nan=allow_nan, cache=cache)
    write(tmp_path / "MQ2007" / "Fold1" / "train.txt", path.read_text())
    with pytest.raises(ValueError, match=rf"integer grades 0\.\.2 \(first: {shown} in data row 2\)"):
        load("mq2007", 1, "train", root=tmp_path)


@pytest.mark.parametrize(
    ("encoding", "named"), [("utf-8-sig", "UTF-8"), ("utf-16", "UTF-16"), ("utf-8-sig+gz", "UTF-8")]
)
def test_byte_order_mark_is_named(tmp_path: Path, encoding: str, named: str) -> None:
    text = "# written by a Windows editor\n1 qid:1 1:0.5\n0 qid:1 1:0.2\n"
    path = tmp_path / ("f.txt.gz" if encoding.endswith("+gz") else "f.txt")
    blob = text.encode(encoding.removesuffix("+gz"))
    path.write_bytes(gzip.compress(blob) if encoding.endswith("+gz") else blob)
    with pytest.raises(
        ValueError, match=rf"{re.escape(str(path))} starts with a {named}.* byte-order mark \(BOM\)"
    ):
        load_svmlight_ranking(path)


def test_zero_size_groups_name_the_query(tmp_path: Path) -> None:
    data = write(tmp_path / "d.txt", "1 1:1\n0 1:2\n1 1:3\n")
    query_file = write(tmp_path / "d.query", "1\n1\n1\n1\n1\n1\n0\n")
    with pytest.raises(ValueError, match=r"query 6 \(number 7 in the file\) has size 0"):
        load_svmlight_ranking(data, query_file=query_file)
    with pytest.raises(ValueError, match=r"'group' .* query 6 has size 0 \(1 bad of 7 entries\)"):
        RankingSplit(np.zeros((6, 1)), np.zeros(6), np.zeros(6), [1, 1, 1, 1, 1, 1, 0])


def test_other_corrupt_files(tmp_path: Path) -> None:
    nan = write(tmp_path / "MQ2007" / "Fold1" / "train.txt", "1 qid:1 1:0.5\n0 qid:1 1:nan\n")
    with pytest.raises(ValueError, match=r"NaN or infinite feature values \(first in data row 1\)"):
        load("mq2007", 1, "train", root=tmp_path)
    assert np.isnan(load_svmlight_ranking(nan).X[1, 0])  # the generic reader passes NaN (= missing) on
    garbage = write(tmp_path / "bad.txt", "relevant qid:1 1:0.5\n")
    with pytest.raises(ValueError, match=r"Could not parse .* as SVMlight/LETOR"):
        load_svmlight_ranking(garbage)
    data = write(tmp_path / "d.txt", "1 1:1\n0 1:2\n1 1:3\n")
    with pytest.raises(ValueError, match=r"add up to 4 rows but .* has 3"):
        load_svmlight_ranking(data, query_file=write(tmp_path / "d.query", "2\n2\n"))
    with pytest.raises(ValueError, match="one positive integer group size per line"):
        load_svmlight_ranking(data, query_file=write(tmp_path / "e.query", "3\n0\n"))
    mixed = write(tmp_path / "m.txt", "1 qid:1 1:1\n0 qid:2 1:2\n")
    with pytest.raises(ValueError, match="different qids"):
        load_svmlight_ranking(mixed, query_file=write(tmp_path / "m.query", "2\n"))
    with pytest.raises(FileNotFoundError, match="No ranking file"):
        load_svmlight_ranking(tmp_path / "absent.txt")


@pytest.mark.parametrize("damage", ["truncated", "bad crc", "header only"])
@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
def test_truncated_or_corrupt_compressed_files_name_the_file(
    tmp_path: Path, damage: str, suffix: str
) -> None:
    import bz2

    text = (MQ2008_DIR / "Fold1" / "vali.txt.gz").read_bytes()
    blob = bytearray(bz2.compress(gzip.decompress(text)) if suffix == ".bz2" else text)
    if damage == "truncated":
        blob = blob[: len(blob) // 2]
    elif damage == "bad crc":  # the stream's trailer: gzip's CRC-32, bzip2's combined CRC
        blob[-6] ^= 0xFF
    else:
        blob = blob[:12]
    path = tmp_path / f"vali.txt{suffix}"
    path.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))} is truncated or corrupt .*Re-download"):
        load_svmlight_ranking(path, 46)


# ---------------------------------------------------------------------------- names and errors
def test_missing_dataset_says_where_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(FileNotFoundError) as info:
        load("mslr-web30k", 3, "vali", root=tmp_path)
    text = str(info.value)
    assert str(tmp_path / "MSLR-WEB30K" / "Fold3" / "vali.txt") in text
    assert "https://www.microsoft.com/en-us/research/project/mslr/" in text and "research use" in text
    assert "STOCHRANK_DATA" in text and "root=" in text and "the root argument" in text
    monkeypatch.setenv("STOCHRANK_DATA", str(tmp_path / "env"))
    with pytest.raises(
        FileNotFoundError, match=r"(?s)ltrc_yahoo/set2\.valid\.txt.*\$STOCHRANK_DATA.*Webscope"
    ):
        load("yahoo-set2", 1, "vali")
    with pytest.raises(
        FileNotFoundError, match=r"(?s)istella/full/test\.txt.*full/test\.txt.*non-commercial"
    ):
        load("istella", 1, "test")
    assert load("mq2008", 2, "test", root=tmp_path / "nowhere").n_queries == 157  # bundled: root ignored


def test_names_folds_splits_and_options_are_validated() -> None:
    with pytest.raises(ValueError, match=r"'name' parameter .* 'mq2008', 'mq2007', 'ohsumed', 'mslr-web10k'"):
        load("mslr30k")
    with pytest.raises(ValueError, match=r"'fold' parameter .* one of \[1, 2, 3, 4, 5\] .* Got 6"):
        load("mq2008", 6)
    with pytest.raises(ValueError, match=r"'fold' parameter .* \[1\] for Yahoo"):
        load("yahoo-set1", 2)
    with pytest.raises(ValueError, match=r"'split' parameter .* 'train', 'vali', 'test' .* Got 'valid'"):
        load("mq2008", 1, "valid")
    with pytest.raises(ValueError, match="no validation split: hold out training queries"):
        load("istella", 1, "vali")
    with pytest.raises(ValueError, match=r"'normalize' parameter .* 'query'"):
        load("mq2008", normalize="zscore")
    expected = {
        "mq2008": (46, (0, 2), 5), "mq2007": (46, (0, 2), 5), "ohsumed": (45, (0, 2), 5),
        "mslr-web10k": (136, (0, 4), 5), "mslr-web30k": (136, (0, 4), 5),
        "yahoo-set1": (700, (0, 4), 1), "yahoo-set2": (700, (0, 4), 1),
        "istella": (220, (0, 4), 1), "istella-s": (220, (0, 4), 1),
    }  # fmt: skip
    for name, (n_features, labels, n_folds) in expected.items():
        spec = DATASETS[name]
        assert (spec.n_features, spec.labels, len(spec.folds)) == (n_features, labels, n_folds), name


def test_split_queries_and_pickling() -> None:
    data = load("mq2008", 1, "test")
    rest, held = split_queries(data, 0.25, seed=1)
    assert held.n_queries == 39 and rest.n_queries == data.n_queries - 39
    assert set(rest.qid).isdisjoint(held.qid) and set(rest.qid) | set(held.qid) == set(data.qid)
    assert rest.X.shape[0] + held.X.shape[0] == data.X.shape[0]
    again, _ = split_queries(data, 0.25, seed=1)
    np.testing.assert_array_equal(again.qid, rest.qid)
    keep = np.isin(data.qid, rest.qid)
    np.testing.assert_array_equal(rest.X, data.X[keep])  # file order kept
    with pytest.raises(ValueError, match="both parts need at least one query"):
        split_queries(data, 0.001)
    clone = pickle.loads(pickle.dumps(data))
    assert isinstance(clone, RankingSplit) and np.array_equal(clone.X, data.X)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"X": np.zeros(6)}, "'X' must be 2-D"),
        ({"y": np.zeros(5)}, "'y' must be 1-D with one entry per row of 'X' \\(6\\); got shape \\(5,\\)"),
        ({"y": np.zeros((6, 1))}, "'y' must be 1-D with one entry per row"),
        ({"qid": np.zeros(7, dtype=np.int64)}, "'qid' must be 1-D with one entry per row of 'X' \\(6\\)"),
        ({"group": np.array([2, 3])}, "'group' sums to 5 documents but there are 6 rows"),
        ({"group": np.array([2, 0, 4])}, "'group' must hold positive integer query sizes"),
        ({"group": np.array([3, 3])}, "query 0 of 'group' \\(rows 0..2\\) has rows with different 'qid'"),
    ],
)
def test_ranking_split_checks_its_fields(change: dict, message: str) -> None:
    fields = {"X": np.zeros((6, 2)), "y": np.arange(6.0), "qid": np.array([7, 7, 1, 1, 1, 1]),
              "group": np.array([2, 4])}  # fmt: skip
    split = RankingSplit(**fields)  # consistent: accepted, arrays in the documented dtypes
    assert split.y.dtype == np.float64 and split.group.dtype == np.int64 and split.n_queries == 2
    with pytest.raises(ValueError, match=message):
        RankingSplit(**{**fields, **change})


@pytest.mark.parametrize(
    "qid",
    [
        np.array(["q7", "q7", "q1", "q1", "q1", "q1"]),
        np.array([b"a", b"a", b"b", b"b", b"b", b"b"]),
        np.array([7.0, 7.0, 1.5, 1.5, 1.5, 1.5]),
        np.array([7, 7, "x", "x", "x", "x"], dtype=object),
    ],
)
def test_ranking_split_accepts_any_query_ids_compared_with_equality(qid: np.ndarray) -> None:
    split = RankingSplit(np.arange(12.0).reshape(6, 2), np.arange(6.0), qid, np.array([2, 4]))
    assert split.n_queries == 2 and list(split.qid) == list(qid)  # kept as given
    rest, held = split_queries(split, 0.5, seed=0)
    assert sorted([rest.qid[0], held.qid[0]], key=str) == sorted([qid[0], qid[2]], key=str)
    mixed = qid.copy()
    mixed[4] = mixed[0]
    with pytest.raises(ValueError, match=r"query 1 of 'group' \(rows 2\.\.5\) has rows with different 'qid'"):
        RankingSplit(split.X, split.y, mixed, split.group)


# ------------------------------------------------------------------------------------ synthetic
def test_mslr_like_has_mslr_shapes_and_label_skew() -> None:
    data = synthetic.mslr_like(400, seed=5)
    assert data.X.shape[1] == 136 and data.X.dtype == np.float32 and data.n_queries == 400
    assert abs(data.group.mean() - 120) < 3 and data.group.min() >= 2
    np.testing.assert_allclose(np.bincount(data.y.astype(int), minlength=5) / data.y.size,
                               synthetic.MSLR_LABEL_P, atol=0.005)  # fmt: skip
    corr = [np.corrcoef(data.X[:, j], data.y)[0, 1] for j in (0, 33, 34, 135)]
    assert corr[0] > 0.5 and corr[1] > 0.05 and abs(corr[2]) < 0.02 and abs(corr[3]) < 0.02
    np.testing.assert_array_equal(synthetic.mslr_like(400, seed=5).X, data.X)


def test_synthetic_files_load_through_the_synthetic_mslr_layout(tmp_path: Path) -> None:
    paths = synthetic.write_mslr_like(tmp_path / "synthetic-mslr", (5, 3, 2), seed=2)
    streams = np.random.SeedSequence(2).spawn(3)
    for (split, path), stream in zip(paths.items(), streams, strict=True):
        generated = synthetic.mslr_like((5, 3, 2)[("train", "vali", "test").index(split)],
                                        seed=int(stream.generate_state(1)[0]))  # fmt: skip
        loaded = load("synthetic-mslr", 1, split, root=tmp_path)
        assert path.is_file()
        np.testing.assert_array_equal(
            loaded.X, np.round(generated.X.astype(np.float64), 6).astype(np.float32)
        )
        np.testing.assert_array_equal(loaded.y, generated.y)
        np.testing.assert_array_equal(loaded.group, generated.group)


def test_multimodal_instances_and_their_enumerated_optimum() -> None:
    paper = synthetic.one_hot_instance(synthetic.PAPER)
    np.testing.assert_array_equal(paper.group, [3, 2])
    np.testing.assert_array_equal(paper.X.argmax(axis=1), [0, 1, 2, 2, 0])
    weak, strict = synthetic.global_optimum(paper.X, paper.y, paper.group, k=3)
    assert round(weak, 3) == 0.917 and weak == pytest.approx(strict, abs=1e-12)
    assert synthetic.optimal_orders(paper.X, paper.y, paper.group) == [(0, 1, 2)]  # x1 > x2 > x3
    cyclic = synthetic.one_hot_instance(synthetic.CYCLIC)
    # the two optima drop one cheap query: B > C > A and C > A > B (rank of A, B, C)
    assert sorted(synthetic.optimal_orders(cyclic.X, cyclic.y, cyclic.group)) == [(1, 2, 0), (2, 0, 1)]
    assert len(list(synthetic.weak_orderings(3))) == 13
