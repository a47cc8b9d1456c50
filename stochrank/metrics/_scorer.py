"""Query-aware scikit-learn scorers: ``scoring=make_ranking_scorer("ndcg", k=5)`` in model selection."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..conventions import rows_and_queries
from ._feval import METRICS, check_metric, cutoff

__all__ = ["RankingScorer", "make_ranking_scorer"]

# Metadata a RankingScorer can receive through scikit-learn's metadata routing: per-row query ids under
# scikit-learn's name (``groups``, what GroupKFold splits by) or stochrank's (``qid``), or query sizes.
_METADATA = ("groups", "qid", "group")


class RankingScorer:
    """A scikit-learn scorer that evaluates a ranking metric per query and averages over queries.

    Create it with :func:`make_ranking_scorer`. Called as ``scorer(estimator, X, y, groups=qid)``, as
    scikit-learn's model selection calls a scorer; the query structure comes from ``groups`` / ``qid`` (one
    query id per row, a query's rows contiguous), ``group`` (documents per query) or a ``qid`` column of a
    pandas DataFrame ``X``. Without any it raises ``ValueError``: one number over the whole fold as a
    single query would be meaningless.

    It requests ``groups`` through scikit-learn's metadata routing, so with routing enabled the test rows'
    query ids reach it from ``GridSearchCV(...).fit(X, y, groups=qid)`` (the same ``groups`` that
    ``GroupKFold`` splits by). :meth:`set_score_request` changes that, as for scikit-learn's own scorers.
    """

    def __init__(self, metric: str, k: int | None, conventions: dict[str, Any]) -> None:
        self.metric = check_metric(metric, k, conventions, "make_ranking_scorer", "the scorer's call")
        self.k = k
        self.conventions = dict(conventions)
        self._requests: dict[str, bool | str | None] = {"groups": True}

    def __call__(
        self, estimator: Any, X: Any, y: Any, *, groups: Any = None, qid: Any = None, group: Any = None
    ) -> float:
        """Return the mean per-query metric of ``estimator.predict(X)`` against the labels ``y``.

        Parameters
        ----------
        estimator : fitted ranker
            Anything with ``predict(X)`` returning one score per row (higher = ranked first).
        X : array-like or pandas DataFrame
            The rows to score; a DataFrame's ``qid`` column is the query structure (and is not passed to
            ``predict``).
        y : array-like of shape (n_rows,)
            Relevance labels.
        groups, qid : array-like of shape (n_rows,), optional
            One query id per row (two names for the same thing: scikit-learn's and stochrank's).
        group : array-like of int, optional
            Documents per query in row order.

        Returns
        -------
        float
            The weighted mean over queries (every query weight 1) of the metric, higher is better.

        Raises
        ------
        ValueError
            Without a query structure, or with more than one.
        """
        if groups is not None and qid is not None:
            raise ValueError(f"{self!r} got both groups= and qid=: they are the same query ids, pass one.")
        labels = np.asarray(y, dtype=np.float64).reshape(-1)
        ids = groups if groups is not None else qid
        X, offsets = rows_and_queries(X, labels.size, group=group, qid=ids, where=repr(self))
        scores = np.asarray(estimator.predict(X), dtype=np.float64).reshape(-1)
        value = METRICS[self.metric](
            labels, scores, np.diff(offsets), **cutoff(self.metric, self.k), **self.conventions
        )
        return float(value)

    def get_metadata_routing(self) -> Any:
        """Return the metadata this scorer requests (scikit-learn's metadata routing protocol)."""
        from sklearn.utils.metadata_routing import MetadataRequest

        request = MetadataRequest(owner=self)
        for param, alias in self._requests.items():
            request.score.add_request(param=param, alias=alias)
        return request

    def set_score_request(self, **requests: bool | str | None) -> RankingScorer:
        """Set which metadata the scorer requests, as scikit-learn's ``set_score_request``; return self.

        Parameters
        ----------
        **requests : bool, str or None
            For ``groups``, ``qid`` or ``group``: True (requested), False (not), None (error if passed) or an
            alias, the name under which the caller passes it. Default: ``groups=True``.
        """
        unknown = sorted(set(requests) - set(_METADATA))
        if unknown:
            raise TypeError(f"set_score_request got {unknown}; a RankingScorer takes {list(_METADATA)}.")
        self._requests.update(requests)
        return self

    def __repr__(self) -> str:
        extra = "".join(f", {key}={value!r}" for key, value in sorted(self.conventions.items()))
        return f"make_ranking_scorer({self.metric!r}, k={self.k!r}{extra})"


def make_ranking_scorer(metric: str = "ndcg", *, k: int | None = 5, **conventions: Any) -> RankingScorer:
    """Make a scikit-learn scorer that evaluates ``metric`` per query, for ``scoring=`` in model selection.

    Parameters
    ----------
    metric : {"ndcg", "dcg", "err", "pfound", "mrr", "map", "precision"}, default "ndcg"
        The :mod:`stochrank.metrics` function to average over queries.
    k : int >= 1 or None, default 5
        Cutoff; None scores whole lists.
    **conventions
        Keyword arguments of that metric, e.g. ``gain="linear"``, ``ties="input"``, ``empty="skip"``;
        unknown names raise ``TypeError``.

    Returns
    -------
    RankingScorer
        ``scorer(estimator, X, y, groups=qid)``: the mean per-query metric of ``estimator.predict(X)``.

    Notes
    -----
    A scorer only sees the test rows, so the query structure has to travel with them. Two ways work with
    ``GroupKFold`` on the query ids (which keeps every query in one fold) without splitting queries by
    hand:

    - scikit-learn's metadata routing: ``sklearn.set_config(enable_metadata_routing=True)``, then
      ``GridSearchCV(ranker.set_fit_request(qid="groups"), grid, cv=GroupKFold(3), scoring=scorer)
      .fit(X, y, groups=qid)``: ``groups`` reaches the splitter, the scorer (it requests ``groups``) and,
      through the alias, the ranker's ``fit(qid=...)``, each sliced to its rows;
    - no routing: X as a pandas DataFrame with a ``qid`` column (XGBoost's convention), which stochrank's
      rankers take as the query ids and the scorer reads; ``.fit(X_df, y, groups=X_df["qid"])``.

    Examples
    --------
    >>> from stochrank.metrics import make_ranking_scorer
    >>> make_ranking_scorer("ndcg", k=10, ties="input")
    make_ranking_scorer('ndcg', k=10, ties='input')
    """
    return RankingScorer(metric, k, conventions)
