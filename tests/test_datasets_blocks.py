"""Block-by-block SVMlight parsing (stochrank.datasets._blocks) against sklearn's whole-file parse."""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_svmlight_file

from stochrank.data import MQ2008_DIR
from stochrank.datasets import _blocks


def _reference(path: Path, n_features=None, zero_based=False, dtype=np.float64):
    X, y, qid = load_svmlight_file(
        str(path), n_features=n_features, zero_based=zero_based, query_id=True, dtype=dtype
    )
    return X.toarray(), y, qid


def _assert_same(path: Path, **options) -> None:
    X, y, qid = _blocks.read_dense(
        path,
        options.get("n_features"),
        options.get("zero_based", False),
        options.get("dtype", np.float64),
    )
    X_ref, y_ref, qid_ref = _reference(path, **options)
    assert X.dtype == X_ref.dtype
    np.testing.assert_array_equal(X, X_ref)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_array_equal(qid, qid_ref)


@pytest.mark.parametrize("block_bytes", [97, 4096, _blocks.BLOCK_BYTES])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mq2008_fold_equals_the_whole_file_parse(monkeypatch, block_bytes, dtype):
    monkeypatch.setattr(_blocks, "BLOCK_BYTES", block_bytes)
    _assert_same(MQ2008_DIR / "Fold1" / "vali.txt.gz", dtype=dtype)


@pytest.mark.parametrize("opener", [open, gzip.open, bz2.open])
def test_compressed_files_and_awkward_lines(monkeypatch, tmp_path, opener):
    # Comments, blank lines, a row without qid, a later block with a larger feature index (the matrix
    # widens), and no newline at the end.
    text = (
        "# header comment\n"
        "2 qid:1 1:0.5 3:1.25 # doc a\n"
        "\n"
        "0 qid:1 2:-1\n"
        "1 qid:2 1:3\n"
        "1 9:7.5\n"
        "0 qid:3 1:2 12:1e-3"
    )
    suffix = {open: ".txt", gzip.open: ".gz", bz2.open: ".bz2"}[opener]
    path = tmp_path / f"awkward{suffix}"
    with opener(path, "wb") as handle:
        handle.write(text.encode())
    monkeypatch.setattr(_blocks, "BLOCK_BYTES", 16)
    _assert_same(path)
    _assert_same(path, n_features=20, dtype=np.float32)


def test_parser_errors_are_sklearns(tmp_path):
    path = tmp_path / "zero.txt"
    path.write_text("1 qid:1 0:1.0\n")
    with pytest.raises(ValueError, match="Invalid index 0"):
        _blocks.read_dense(path, None, False, np.float64)
    path.write_text("1 qid:1 5:1.0\n")
    with pytest.raises(ValueError, match="n_features was set to 3"):
        _blocks.read_dense(path, 3, False, np.float64)


def test_a_file_without_data_rows_gives_no_rows(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("# nothing\n\n")
    X, y, qid = _blocks.read_dense(path, 4, False, np.float64)
    assert X.shape == (0, 4)
    assert y.size == 0
    assert qid.size == 0


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 4),
            st.integers(1, 5),
            st.dictionaries(st.integers(1, 30), st.floats(-1e3, 1e3, allow_nan=False, width=32), max_size=6),
        ),
        min_size=1,
        max_size=25,
    ),
    block_bytes=st.integers(8, 300),
)
def test_any_block_size_gives_sklearns_arrays(tmp_path_factory, rows, block_bytes):
    lines = [
        f"{label} qid:{q} " + " ".join(f"{j}:{v!r}" for j, v in sorted(features.items()))
        for label, q, features in rows
    ]
    path = tmp_path_factory.mktemp("blocks") / "random.txt"
    path.write_text("\n".join(lines) + "\n")
    original = _blocks.BLOCK_BYTES
    _blocks.BLOCK_BYTES = block_bytes
    try:
        _assert_same(path)
    finally:
        _blocks.BLOCK_BYTES = original
