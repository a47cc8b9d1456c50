"""Parse an SVMlight file block by block into one dense matrix, so the peak stays near the matrix itself.

:func:`sklearn.datasets.load_svmlight_file` on a whole file builds a CSR matrix (value + int32 column
index per entry, plus growth slack) before it can be densified: 4.1 x the final float32 matrix on an
MSLR-layout file (benchmarks/RESULTS.md, section 10). Here the (possibly compressed) file is read in
blocks of whole lines, each block is parsed by the same function and written into a matrix allocated
once with one row per line of the file (``np.zeros``: pages that blank or comment lines would have used
are never touched). The peak is the matrix plus one block's text, CSR and dense copy; when a later block
uses a larger feature index than any before (possible only without ``n_features``), the columns grow by
one copy of the rows read so far.
"""

from __future__ import annotations

import bz2
import gzip
import io
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, cast

import numpy as np
import numpy.typing as npt

__all__ = ["open_binary", "read_dense"]

BLOCK_BYTES = 16 * 2**20  # text per parser call: small against MSLR-scale matrices, large against call cost


def open_binary(path: Path) -> BinaryIO:
    """Open a plain, ``.gz`` or ``.bz2`` file for reading its (decompressed) bytes."""
    suffix = path.suffix.lower()
    if suffix == ".gz":
        return cast(BinaryIO, gzip.open(path, "rb"))
    if suffix == ".bz2":
        return cast(BinaryIO, bz2.open(path, "rb"))
    return open(path, "rb")


def _line_count(path: Path) -> int:
    """Count the lines, a last line without a newline included."""
    count, last = 0, b"\n"
    with open_binary(path) as handle:
        while chunk := handle.read(BLOCK_BYTES):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


def _blocks(path: Path) -> Iterator[bytes]:
    """Consecutive pieces of the file of about BLOCK_BYTES, each ending at a line end."""
    rest = b""
    with open_binary(path) as handle:
        while chunk := handle.read(BLOCK_BYTES):
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:
                rest += chunk
                continue
            yield rest + chunk[:cut]
            rest = chunk[cut:]
    if rest.strip():
        yield rest


def read_dense(
    path: Path, n_features: int | None, zero_based: bool, dtype: type
) -> tuple[npt.NDArray[np.floating], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Return ``(X, y, qid)`` as :func:`sklearn.datasets.load_svmlight_file` would, with ``X`` dense.

    ``qid`` holds the ids of the rows that have one (as sklearn returns them); ``X`` has ``n_features``
    columns, or as many as the largest index in the file. Parser errors are sklearn's.
    """
    from sklearn.datasets import load_svmlight_file

    X: npt.NDArray[np.floating] = np.zeros((0, n_features or 0), dtype)
    labels: list[npt.NDArray[np.float64]] = []
    qids: list[npt.NDArray[np.int64]] = []
    row = 0
    for block in _blocks(path):
        part, y, qid = load_svmlight_file(
            io.BytesIO(block), n_features=n_features, zero_based=zero_based, query_id=True, dtype=dtype
        )
        rows, width = part.shape
        if rows == 0:
            continue
        if X.shape[0] == 0:
            X = np.zeros((_line_count(path), width), dtype)
        elif width > X.shape[1]:
            wider = np.zeros((X.shape[0], width), dtype)
            wider[:row, : X.shape[1]] = X[:row]
            X = wider
        X[row : row + rows, :width] = part.toarray()
        row += rows
        labels.append(np.asarray(y, dtype=np.float64))
        qids.append(np.asarray(qid, dtype=np.int64))
    y_all = np.concatenate(labels) if labels else np.zeros(0)
    qid_all = np.concatenate(qids) if qids else np.zeros(0, np.int64)
    return X[:row], y_all, qid_all
