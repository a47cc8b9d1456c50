"""GP-Rank / FITC-Rank (Guiver & Snelson, SIGIR 2008).

A sparse GP whose predictive mean and variance are the SoftRank score distributions, trained on SoftNDCG
by L-BFGS with exact gradients.
"""

from __future__ import annotations

from typing import Any, TypedDict

import numpy as np
from sklearn.utils.validation import check_random_state

from .._parallel import run_parallel
from .._validation import (
    check_choice,
    check_int,
    check_labels,
    check_optional_int,
    check_real,
    check_scores,
    check_variances,
)
from ..conventions import (
    MAX_EXP_LABEL,
    check_offsets,
    gains,
    ndcg_scaling,
    offsets_from_qid,
    offsets_from_sizes,
    position_weights,
)
from ..kernels.softrank import softrank_batch, softrank_linear_batch
from ..metrics import ndcg
from ._model import SparseGPBase
from ._sparse import GPState

__all__ = ["GPRanker", "SoftNDCG"]

DISCOUNTS = ("linear", "log")

# Validation features, labels and query sizes.
_Validation = tuple[np.ndarray, np.ndarray, np.ndarray]


class _BestIterate(TypedDict):
    """The best validation NDCG seen while training, its parameters and its iteration."""

    score: float
    theta: np.ndarray
    iteration: int


class SoftNDCG:
    r"""Mean SoftNDCG over the queries with two different labels, and its gradient.

    The gradient is in the score means and variances (SoftRank's rank distributions,
    :mod:`stochrank.kernels.softrank`).

    SoftNDCG_q :math:`= \frac{1}{\mathrm{IDCG}_q}\sum_j (2^{l_j} - 1)\sum_r p_j(r)\, d(r)` with the
    training discount ``d``:

    * ``"linear"``, ``k=None``: :math:`d(r) = 1 - r/n_q` over the whole list of query q (the milder
      training discount of Taylor et al. and Guiver & Snelson). It needs only the expected ranks,
      :math:`\sum_j g_j (1 - E[r_j]/n_q)` with :math:`E[r_j] = \sum_{i \ne j}\pi_{ij}`: O(n²) per query
      (:func:`~stochrank.kernels.softrank_linear_batch`);
    * ``"linear"``, ``k``: :math:`d(r) = \max(0, 1 - r/k)`;
    * ``"log"``: :math:`d(r) = 1/\log_2(r + 2)` for :math:`r < k` (the evaluation discount).

    The last two run the exact SoftRank recursion, O(n²·k) per query (O(n³) without k).
    ``IDCG_q`` is the DCG of the ideal order under the same discount; queries whose labels are all equal
    (NDCG constant) are left out of the mean.

    Parameters
    ----------
    labels : array (n,)
        Relevance grades in [0, 50] (gain :math:`2^l - 1`).
    offsets : int array (n_queries + 1,)
        Query boundaries ``[0, end of query 0, ..., n]``: ``np.r_[0, np.cumsum(group)]``.
    discount : {"linear", "log"}, default "linear"
    k : int >= 1 or None, default None
        Truncation (None: the whole list).
    """

    def __init__(self, labels: Any, offsets: Any, discount: str = "linear", k: int | None = None) -> None:
        owner = "SoftNDCG"
        check_choice(discount, "discount", owner, DISCOUNTS)
        k = check_optional_int(k, "k", owner, low=1, none_means="the whole list")
        labels = check_labels(labels, None, owner, high=MAX_EXP_LABEL,
                              hint="Relevance grades feed the exponential gain 2**label - 1.")  # fmt: skip
        offsets = check_offsets(offsets, labels.size)
        sizes = np.diff(offsets)
        self.offsets = offsets
        self.discount = discount
        self.k = k
        self.gain = gains(labels, "exp")
        self._whole_list_linear = discount == "linear" and k is None
        if self._whole_list_linear:  # d(r) = 1 - r/n_q differs between queries: no shared weight vector
            self._pos_weight = np.empty(0)
        else:
            self._pos_weight = position_weights(discount, int(sizes.max()) if k is None else k, k)
        # A query whose NDCG cannot change (all labels equal) is left out: SoftRank's marginals are not
        # exactly doubly stochastic, so it would otherwise get a spurious gradient under the log discount.
        self._query_scale, active = ndcg_scaling(
            self.gain, offsets, None if self._whole_list_linear else self._pos_weight
        )
        self.n_scored = int(active.sum())
        if self.n_scored == 0:
            raise ValueError(
                "No training query has two different labels, so no ranking can change any NDCG and there is "
                "nothing to learn; pass queries with relevant and non-relevant documents."
            )

    def __call__(self, mean: Any, var: Any) -> tuple[float, np.ndarray, np.ndarray]:
        """Return ``(SoftNDCG, dSoftNDCG/dmean, dSoftNDCG/dvar)`` at score means and variances.

        ``mean`` and ``var`` hold one entry per document, finite, ``var >= 0``.
        """
        n = self.gain.size
        mean = check_scores(mean, n, name="mean")
        var = check_variances(var, n, name="var")
        values = np.empty(self.offsets.size - 1)
        d_mean = np.empty(n)
        d_var = np.empty(n)
        if self._whole_list_linear:
            run_parallel(
                softrank_linear_batch, n, mean, var, self.gain, self.offsets, self._query_scale,
                values, d_mean, d_var,
            )  # fmt: skip
        else:
            run_parallel(
                softrank_batch, n, mean, var, self.gain, self.offsets, self._pos_weight,
                -1 if self.k is None else self.k, self._query_scale, values, d_mean, d_var,
            )  # fmt: skip
        inv = 1.0 / self.n_scored
        return float(values.sum() * inv), d_mean * inv, d_var * inv


def _offsets(group: Any, qid: Any, n_rows: int, owner: str, prefix: str = "") -> np.ndarray:
    if (group is None) == (qid is None):
        raise ValueError(
            f"{owner} needs the query structure: pass exactly one of '{prefix}group' (documents per query, "
            f"in row order) or '{prefix}qid' (one query id per row, each query's rows contiguous)."
        )
    if group is not None:
        return offsets_from_sizes(group, n_rows, name=f"{prefix}group")
    qid = np.asarray(qid)
    if qid.ndim != 1 or qid.size != n_rows:
        raise ValueError(f"'{prefix}qid' must have one query id per row ({n_rows}); got shape {qid.shape}.")
    return offsets_from_qid(qid, name=f"{prefix}qid")


def _only(value: Any, name: str) -> Any:
    """Return the single entry of ``eval_group`` / ``eval_qid`` (lists aligned with ``eval_set``)."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 1:
        raise ValueError(
            f"'{name}' must be a list holding one array, aligned with eval_set=[(X_val, y_val)]: "
            f"{name}=[{name.removeprefix('eval_')}_val]."
        )
    return value[0]


class GPRanker(SparseGPBase):
    r"""GP-Rank / FITC-Rank: a sparse GP ranking function trained on SoftNDCG (Guiver & Snelson, 2008).

    Document j's score is Gaussian, :math:`S_j \sim N(\bar s_j, v_j)`, with the GP predictive mean and
    variance of :class:`SparseGP` (``form="prototype"``: eq. 11, M virtual outputs; ``form="fitc"``:
    eqs. 29–30, one virtual output per training document). Prototypes, virtual outputs, the ARD + linear
    kernel's hyper-parameters and the noise σ² maximise the training SoftNDCG (:class:`SoftNDCG`, exact
    SoftRank rank distributions with :math:`\pi_{ij} = \Phi((\bar s_i-\bar s_j)/\sqrt{v_i+v_j})`) by
    ``scipy.optimize.minimize(method="L-BFGS-B")`` on its exact gradient: SoftRank's
    :math:`\partial/\partial\bar s_j`, :math:`\partial/\partial v_j` chained through the GP
    (the paper's appendix), positive parameters in log space. Initialisation follows the paper: M
    prototypes drawn at random within each label value, virtual outputs = centred labels, amplitude =
    label standard deviation, linear weights :math:`1/\lambda_d^2`.

    Ranking score (section 5.3): :math:`\bar s + \alpha\,\sigma`, :math:`\sigma = \sqrt{v}` —
    ``alpha < 0`` conservative (certain documents first), ``alpha > 0`` risky.

    Parameters
    ----------
    form : {"fitc", "prototype"}, default "fitc"
        FITC-Rank or GP-Rank.
    n_prototypes : int >= 1 or None, default None
        Number of prototypes M; None: 2 per label value (``"fitc"``) or 4 (``"prototype"``), the
        paper's choice. At most the number of training documents.
    alpha : float, default 0.0
        Risk parameter of :meth:`predict` (and of the validation selection in :meth:`fit`).
    k : int >= 1 or None, default None
        Truncation of the training SoftNDCG (cost O(n²·k) per query). None: the whole list, O(n²) per query
        with the linear discount (it needs only the expected ranks), O(n³) with the log discount.
    discount : {"linear", "log"}, default "linear"
        Training discount (see :class:`SoftNDCG`); the paper trains with a linear discount.
    eval_k : int >= 1, default 5
        Cutoff of the validation NDCG used to select the iterate (the paper: NDCG@5).
    max_iter : int >= 1, default 200
        L-BFGS-B iterations.
    early_stopping_rounds : int >= 1 or None, default None
        With ``eval_set``: stop after this many iterations without a better validation NDCG@eval_k.
        With or without it, the iterate with the best validation NDCG is kept when ``eval_set`` is given.
    standardize : bool, default True
        Corpus-level z-scoring of the features (as in the paper).
    random_state : int, RandomState or None, default None
        Seeds the initial prototypes.

    Attributes
    ----------
    inducing_points_, outputs_, amplitude_, lengthscale_, linear_weights_, noise_, weights_,
    variance_matrix_ :
        As in :class:`SparseGP`.
    train_history_ : list of float
        Training SoftNDCG after each L-BFGS iteration.
    validation_history_ : list of float
        Validation NDCG@eval_k after each iteration (empty without ``eval_set``).
    best_iteration_ : int
        Iteration kept (1-based; 0 = the initialisation).
    n_iter_ : int
        Iterations run.
    """

    def __init__(
        self,
        form: str = "fitc",
        n_prototypes: int | None = None,
        *,
        alpha: float = 0.0,
        k: int | None = None,
        discount: str = "linear",
        eval_k: int = 5,
        max_iter: int = 200,
        early_stopping_rounds: int | None = None,
        standardize: bool = True,
        random_state: Any = None,
    ) -> None:
        self.form = form
        self.n_prototypes = n_prototypes
        self.alpha = alpha
        self.k = k
        self.discount = discount
        self.eval_k = eval_k
        self.max_iter = max_iter
        self.early_stopping_rounds = early_stopping_rounds
        self.standardize = standardize
        self.random_state = random_state

    def fit(
        self,
        X: Any,
        y: Any,
        *,
        group: Any = None,
        qid: Any = None,
        eval_set: list[tuple[Any, Any]] | None = None,
        eval_group: list[Any] | None = None,
        eval_qid: list[Any] | None = None,
    ) -> GPRanker:
        """Train on queries given by ``group`` (sizes, LightGBM style) or ``qid`` (per-row ids).

        ``eval_set=[(X_val, y_val)]`` with ``eval_group=[sizes]`` or ``eval_qid=[ids]`` keeps the
        iterate with the best validation NDCG@eval_k of the scores ``mean + alpha * std``.
        """
        owner = "GPRanker"
        self._check_common_params(owner)
        check_real(self.alpha, "alpha", owner)
        check_optional_int(self.k, "k", owner, low=1, none_means="the whole list")
        check_choice(self.discount, "discount", owner, DISCOUNTS)
        check_int(self.eval_k, "eval_k", owner, low=1)
        check_optional_int(
            self.early_stopping_rounds, "early_stopping_rounds", owner, low=1, none_means="no early stopping"
        )
        X = self._check_X(X, fitting=True)
        labels = check_labels(y, X.shape[0], owner, high=MAX_EXP_LABEL,
                              hint="Relevance grades feed the exponential gain 2**label - 1.")  # fmt: skip
        offsets = _offsets(group, qid, X.shape[0], owner)
        validation = self._validation_set(eval_set, eval_group, eval_qid, owner)
        softndcg = SoftNDCG(labels, offsets, self.discount, self.k)
        Xs = self._fit_scaler(X)
        state = self._initial_state(Xs, labels, check_random_state(self.random_state), owner)

        self.train_history_: list[float] = []
        self.validation_history_: list[float] = []
        best: _BestIterate = {"score": -np.inf, "theta": state.pack(), "iteration": 0}
        if validation is not None:
            best["score"] = self._validation_ndcg(state.pack(), state, Xs, validation)

        def on_iterate(theta: np.ndarray, objective: float) -> None:
            self.train_history_.append(-objective)
            if validation is None:
                return
            score = self._validation_ndcg(theta, state, Xs, validation)
            self.validation_history_.append(score)
            iteration = len(self.validation_history_)
            if score > best["score"]:
                best.update({"score": score, "theta": theta, "iteration": iteration})
            elif (
                self.early_stopping_rounds is not None
                and iteration - best["iteration"] >= self.early_stopping_rounds
            ):
                raise StopIteration

        def negative(mean: np.ndarray, var: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
            value, d_mean, d_var = softndcg(mean, var)
            return -value, -d_mean, -d_var

        theta, result = self._train(state, Xs, negative, callback=on_iterate)
        self.n_iter_ = int(result.nit)
        if validation is None:
            self.best_iteration_ = self.n_iter_
        else:
            theta = best["theta"]
            self.best_iteration_ = int(best["iteration"])
        self._set_fitted(state.unpack(theta), Xs)
        return self

    def _validation_set(
        self, eval_set: Any, eval_group: Any, eval_qid: Any, owner: str
    ) -> _Validation | None:
        if eval_set is None:
            if eval_group is not None or eval_qid is not None:
                raise ValueError(
                    f"{owner}.fit got eval_group/eval_qid without eval_set; pass eval_set=[(X, y)]."
                )
            return None
        if not isinstance(eval_set, (list, tuple)) or len(eval_set) != 1 or len(eval_set[0]) != 2:
            raise ValueError(
                f"{owner}.fit takes eval_set=[(X_val, y_val)] (one validation set, a list with one pair); "
                f"got {type(eval_set).__name__} of length "
                f"{len(eval_set) if hasattr(eval_set, '__len__') else '?'}."
            )
        Xv = self._check_X(eval_set[0][0], fitting=False)
        yv = check_labels(eval_set[0][1], Xv.shape[0], owner, high=MAX_EXP_LABEL)
        offsets = _offsets(
            _only(eval_group, "eval_group"), _only(eval_qid, "eval_qid"), Xv.shape[0], owner, prefix="eval_"
        )
        return Xv, yv, np.diff(offsets)

    def _validation_ndcg(
        self, theta: np.ndarray, state: GPState, Xs: np.ndarray, validation: _Validation
    ) -> float:
        Xv, yv, sizes = validation
        self._set_fitted(state.unpack(theta), Xs)
        mean, std = self.predict(Xv, return_std=True)
        return float(ndcg(yv, mean + self.alpha * std, sizes, k=self.eval_k, ties="input"))

    def predict(self, X: Any, return_std: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """Return ranking scores ``mean + alpha * std``, or the predictive ``(mean, std)``.

        With ``return_std=True`` the predictive ``(mean, std)`` comes back instead (scikit-learn's
        GaussianProcessRegressor protocol, noise included, ``alpha`` not applied), which makes a fitted
        ranker a variance source for ``stochrank.softrank(variance=...)``.
        """
        mean, var = self._moments(X)
        std: np.ndarray = np.sqrt(var)  # numpy's stubs type sqrt of an untyped-dtype array as Any
        if return_std:
            return mean, std
        return mean + self.alpha * std
