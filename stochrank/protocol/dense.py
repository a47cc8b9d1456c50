"""Feature matrices from whatever a booster's dataset holds, as one dense float64 array."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["dense_features"]


def dense_features(data: Any) -> npt.NDArray[np.float64]:
    """Convert to a 2-D float64 array from numpy / scipy.sparse / pandas-like data; sparse gaps become 0.0."""
    if hasattr(data, "tocsr"):  # scipy.sparse
        csr = data.tocsr()
        out = np.zeros(csr.shape, dtype=np.float64)
        rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
        out[rows, csr.indices] = csr.data
        return out
    if hasattr(data, "to_numpy"):  # pandas / polars / pyarrow-like frames
        data = data.to_numpy()
    return np.asarray(data, dtype=np.float64)
