"""What keeps the first call's compilation short (issue 11, item 3) without changing a result.

Every kernel is compiled once per argument type: a read-only or non-contiguous array, or a constant passed
where a variable was passed elsewhere, is another type and a second compilation of the whole kernel. The
per-dataset IDCG and "does this query vary" are plain numpy (they were two parallel kernels to compile), and
must give what the kernels gave: bit for bit, against the naive definitions.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from stochrank.conventions import ideal_dcg, position_weights, varying_queries

from .naive import naive_ideal_dcg

ROOT = Path(__file__).resolve().parents[1]


def _queries(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Gains with many ties, in queries of 0 to 39 documents."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 40, 200)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    gain = 2.0 ** rng.integers(0, 5, offsets[-1]) - 1.0 + 0.1 * rng.integers(0, 2, offsets[-1])
    return gain, offsets


@pytest.mark.parametrize("k", [None, 1, 3, 10, 100])
@pytest.mark.parametrize("discount", ["log", "position"])
def test_ideal_dcg_is_the_naive_sum_bit_for_bit(k, discount):
    gain, offsets = _queries(0)
    w = position_weights(discount, 45, k)
    expected = [naive_ideal_dcg(gain[s:e], w, -1) for s, e in itertools.pairwise(offsets)]
    np.testing.assert_array_equal(ideal_dcg(gain, offsets, w), expected)


def test_ideal_dcg_with_the_whole_list_linear_discount():
    gain, offsets = _queries(1)
    expected = []
    for s, e in itertools.pairwise(offsets):
        n = e - s
        expected.append(sum((1.0 - r / n) * g for r, g in enumerate(sorted(gain[s:e], reverse=True))))
    np.testing.assert_allclose(ideal_dcg(gain, offsets, None), expected, rtol=1e-13)


@pytest.mark.parametrize("min_size", [1, 2, 5])
def test_varying_queries_is_the_naive_test(min_size):
    gain, offsets = _queries(2)
    cont = np.where(np.random.default_rng(3).random(gain.size) < 0.05, 0.5, 1.0)
    for c in (np.ones(gain.size), cont):
        expected = [
            e - s >= min_size and bool(np.any(gain[s:e] != gain[s]) or np.any(c[s:e] != c[s]))
            for s, e in itertools.pairwise(offsets)
        ]
        np.testing.assert_array_equal(varying_queries(gain, c, offsets, min_size), expected)


CALLS = """
import numpy as np, pandas as pd, stochrank
from stochrank.datasets import load_mq2008
from stochrank.kernels import ccs, softrank, stochastic_rank, _random
train = load_mq2008(1, "train")
y, group = train.y, train.group
scores = np.random.default_rng(0).standard_normal(y.size)
frame = pd.DataFrame({"a": np.arange(y.size), "y": y})  # a DataFrame column: read-only (pandas 3)
for labels in (y, frame["y"].to_numpy(), np.stack([y, y], axis=1)[:, 1]):  # and a strided view
    stochrank.ndcg(k=5)(labels, scores, None, group)
stochrank.lso(k=5, order="score")(y, scores, None, group)  # the thresholded kernel, beside the ranking one
stochrank.softrank(k=5)(y, scores, None, group)
stochrank.softrank(k=5, variance=np.full(y.size, 0.5))(y, scores, None, group)  # frozen (read-only) copy
for kernel in (stochastic_rank.smoothed_gradient, stochastic_rank._query_gradient, _random.query_keys,
               ccs.ccs_query_ws, softrank.softrank_batch, softrank.softrank_query):
    print(kernel.py_func.__name__, len(kernel.signatures))
"""


@pytest.mark.slow
def test_one_compilation_per_kernel_whatever_the_callers_arrays(tmp_path):
    """Read-only or strided labels, a read-only variance array and the thresholded metric each compiled a
    second copy. An empty Numba cache, so that every kernel, called ones included, is compiled here."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", CALLS], capture_output=True, text=True, env=env, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counts = {name: int(n) for name, n in (line.split() for line in done.stdout.splitlines())}
    assert counts == dict.fromkeys(counts, 1) and len(counts) == 6, counts
