r"""StochasticRank objectives: a cascade metric, its noise smoothing, and the booster call.

One :class:`StochasticRankObjective` works unchanged as

* ``lgb.train({"objective": obj}, dataset)`` and ``lgb.cv`` (with ``folds=GroupKFold(...)``, which keeps
  queries whole) — called as ``obj(preds, Dataset)``;
* ``lightgbm.LGBMRanker(objective=obj)`` — called as ``obj(y_true, y_pred, weight, group)``;
* ``xgb.train(params, dtrain, obj=obj)`` and ``xgb.cv`` — called as ``obj(preds, DMatrix)``;
* ``stochrank.xgboost.XGBRanker(objective=obj)``.

The booster call (caches, weights, run restarts, SGLB) is :class:`~._base.RankingObjective`'s; it
returns ``(grad, hess)`` for *minimisation*: ``grad = -w_q \hat\nabla E[M]`` (plus SGLB noise) and
``hess = w_q h`` with ``h`` per ``hessian``.

**Hessians.** The smoothed metric's own Hessian is indefinite and its Monte-Carlo estimate noisier than the
gradient's, so it is never used (its diagonal made positive, saddle-free or floored, did not beat the default
as the leaf curvature: ``benchmarks/exact_curvature.py``). ``hessian='newton'`` (the default without SGLB)
takes instead the positive curvature :math:`h_d = \sum_b |c_b| D(b)/s_d` accumulated in the same CCS pass (so
:math:`|g_d| \le s_d h_d` for every draw), normalised to mean 1 over the documents that have one: each leaf is
a Newton step of at most one noise scale, like LambdaMART's leaf in Gaussian form, without mean removal or
SFA. ``hessian='unit'`` (the default with SGLB, and CatBoost's ``leaf_estimation_method=Gradient``, which
StochasticRank and SGLB were proven with) makes each leaf the (L2-shrunk) mean gradient of its documents,
``-sum(grad) / (count + lambda_l2)``. Either way the Hessian is O(1) per document, so LightGBM's
``min_sum_hessian_in_leaf`` and XGBoost's ``min_child_weight`` keep their usual meaning.

**Weights.** Boosters do not apply weights to custom gradients; here a query weight multiplies both
the gradient and the Hessian of its documents, so a leaf is the weighted mean gradient. Weights must
be constant within a query (ranking metrics weight queries, not documents); a zero-weight query gets
zero gradient and Hessian and drops out of training. CatBoost ignores weights in StochasticRank's
derivatives and uses them only in the leaf denominator.

**Reproducibility.** The noise of query q at the t-th call on a dataset comes from its own stream
(seed, t, q): one seed gives bit-identical gradients for any thread count. LightGBM deep-copies the
objective for every training run; XGBoost does not, so a call whose predictions return to the first
call's on that DMatrix, after they had moved away, is recognised as the start of a new run and the call
counter restarts: training the same object twice gives the same model.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from .._parallel import run_parallel
from .._validation import check_int, check_labels, check_scores
from ..conventions import offsets_from_sizes
from ..kernels import CascadeArrays, smoothed_gradient, translation_invariant
from ..protocol import BoosterCall, DatasetInfo
from ._base import UNIT_HESSIAN, Ascent, FloatArray, RankingObjective
from ._run import DatasetRuns
from .cascade import CascadeMetric
from .sglb import SGLB
from .smoothing import Smoothing

__all__ = ["StochasticRankObjective"]

# Smoothing settings of translation-invariant ranking metrics only: LSO's threshold is absolute (no relevance
# shift) and its kernel has no curvature (unit Hessians only), so lso() takes neither.
_RANKING_ONLY = frozenset({"mu", "hessian"})


class StochasticRankObjective(RankingObjective[CascadeArrays]):
    r"""A StochasticRank objective, called by the booster for gradients and Hessians.

    The booster gets ``-w_q`` times the coordinate-conditional-sampling estimate of
    :math:`\nabla_f E[M(f - \sigma\mu r + \sigma\varepsilon)]` and Hessian ``w_q h``: with Newton leaves
    ``h`` is the positive curvature of the same draws normalised to mean 1 (the gradient neither
    mean-removed nor SFA-projected), with unit Hessians ``h = 1`` (the gradient mean-removed and
    SFA-projected). Build one with :func:`~stochrank.ndcg`, :func:`~stochrank.dcg`, :func:`~stochrank.err`,
    :func:`~stochrank.pfound`, :func:`~stochrank.mrr`, :func:`~stochrank.lso`, :func:`~stochrank.auc`,
    :func:`~stochrank.map` or :func:`~stochrank.precision`.

    Parameters
    ----------
    target : CascadeMetric
        The metric optimised (:class:`~.cascade.NDCG`, :class:`~.cascade.ERR`, …).
    smoothing : Smoothing
        Noise scale, relevance shift, scale-free acceleration, samples and seed, as given: its defaults
        ``hessian=None`` / ``sfa=None`` are resolved here (attribute ``smoothing``: unit Hessians with SGLB
        or for LSO, else Newton leaves) and re-resolved by :meth:`replace` and :meth:`with_sglb`.
    sglb : SGLB or None
        Langevin noise and model shrinkage.
    """

    def __init__(self, target: CascadeMetric, smoothing: Smoothing, sglb: SGLB | None = None) -> None:
        if not isinstance(target, CascadeMetric):
            raise TypeError(f"'target' must be a stochrank cascade metric such as NDCG(k=5); got {target!r}.")
        if not isinstance(smoothing, Smoothing):
            raise TypeError(f"'smoothing' must be stochrank.objectives.Smoothing(...); got {smoothing!r}.")
        if sglb is not None and not isinstance(sglb, SGLB):
            raise TypeError(
                f"The 'sglb' parameter of {target.owner} must be stochrank.SGLB(...) or None; got {sglb!r}."
            )
        ranking = translation_invariant(target.kind)
        if not ranking and smoothing.hessian == "newton":
            raise ValueError(
                f"{target.owner}: Newton leaves need the curvature of the ranking kernel, which LSO does not "
                "have; build the smoothing with hessian='unit'."
            )
        if not ranking and smoothing.mu != 0.0:
            # The kernel would apply it, while lso() takes no mu: a copy would show and hash as the
            # objective without the shift and still train differently.
            raise ValueError(
                f"{target.owner} takes no relevance shift (its threshold is absolute, so any smoothing is "
                f"consistent); got a smoothing with mu={smoothing.mu}. Build it with mu=0."
            )
        if smoothing.hessian == "newton" and sglb is not None:
            raise ValueError(
                f"{target.owner}(hessian='newton', sglb=...): SGLB's Langevin dynamics are defined for unit "
                "Hessians (the preconditioner its convergence theory uses). Pass hessian='unit' (the default "
                "when sglb is given), or drop sglb."
            )
        super().__init__()
        self.target = target
        # As given, for copies, equality and replace(); LSO has no choice of leaves to keep.
        self._given = smoothing if ranking else dataclasses.replace(smoothing, hessian=None)
        self.smoothing = smoothing.resolve("newton" if ranking and sglb is None else "unit", target.owner)
        self._sglb = sglb

    # ------------------------------------------------------------------ configuration
    def _config(self) -> tuple[CascadeMetric, Smoothing, SGLB | None]:
        return (self.target, self._given, self._sglb)

    @property
    def metric(self) -> str:
        """The metric family, e.g. ``'ndcg'``."""
        return self.target.name

    @property
    def k(self) -> int | None:
        """The cut-off (None: the whole list)."""
        return self.target.k

    @property
    def seed(self) -> int:
        """Seed of the smoothing and Langevin noise streams."""
        return self.smoothing.seed

    @property
    def sglb(self) -> SGLB | None:
        """SGLB settings, or None."""
        return self._sglb

    def with_sglb(self, sglb: SGLB | None) -> StochasticRankObjective:
        """Return a copy with other SGLB settings, as the constructor builds it (defaults re-resolved)."""
        return self.replace(sglb=sglb)

    def parameters(self) -> dict[str, Any]:
        """Return the constructor's arguments by name: ``stochrank.<metric>(**obj.parameters()) == obj``."""
        fields = {f.name: getattr(self.target, f.name) for f in dataclasses.fields(self.target) if f.init}
        ranking = translation_invariant(self.target.kind)
        for f in dataclasses.fields(self._given):
            if ranking or f.name not in _RANKING_ONLY:
                fields[f.name] = getattr(self._given, f.name)
        fields["sglb"] = self._sglb
        return fields

    def replace(self, **changes: Any) -> StochasticRankObjective:
        """Return a copy with some constructor arguments changed, e.g. ``obj.replace(sigma=0.5)``.

        The copy is what the constructor builds from the merged arguments, so defaults this objective
        resolved (``hessian``, ``sfa``) are resolved again: ``ndcg(k=5).replace(sglb=SGLB())`` is
        ``ndcg(k=5, sglb=SGLB())``.
        """
        merged = self.parameters()
        unknown = changes.keys() - merged.keys()
        if unknown:
            raise TypeError(f"{self.target.owner}() has no parameter(s) {sorted(unknown)}.")
        merged.update(changes)
        sglb = merged.pop("sglb")
        of_target = {f.name for f in dataclasses.fields(self.target) if f.init}
        target = dataclasses.replace(self.target, **{k: v for k, v in merged.items() if k in of_target})
        smoothing = dataclasses.replace(
            self._given, owner=self.target.owner, **{k: v for k, v in merged.items() if k not in of_target}
        )
        return type(self)(target, smoothing, sglb)  # a subclass stays itself

    def __repr__(self) -> str:
        """Show the constructor call that builds an equal objective."""
        arguments = ", ".join(f"{key}={value!r}" for key, value in self.parameters().items())
        return f"stochrank.{self.target.name}({arguments})"

    # ------------------------------------------------------------------ gradients
    def _prepare(self, booster_call: BoosterCall[DatasetRuns[CascadeArrays]]) -> CascadeArrays:
        return self.target.encode(booster_call.info.labels, booster_call.info.offsets)

    def _ascent(self, scores: FloatArray, info: DatasetInfo, encoding: CascadeArrays, call: int) -> Ascent:
        out = np.empty(scores.size)
        curv = np.empty(scores.size) if self.smoothing.hessian == "newton" else UNIT_HESSIAN
        run_parallel(
            smoothed_gradient, scores.size,
            scores, info.labels, info.offsets, info.query_keys, encoding, self.smoothing.kernel_params(),
            call, out, curv,
        )  # fmt: skip
        return Ascent(out, curv)

    def _gradient_scale(self, encoding: CascadeArrays) -> float:
        return float(np.max(encoding.query_scale[encoding.active], initial=0.0))

    def _collapse_hint(self, encoding: CascadeArrays) -> str:
        hint = (
            "The CCS estimate is zero only where no noise draw of scale sigma can move a document across "
            "a position that changes the metric: the starting scores (init_score / base_margin) are "
            f"spread far more than sigma={self.smoothing.sigma:g}. Start from zero scores, or raise sigma "
            "to the scale of the starting scores."
        )
        mu = self.smoothing.mu
        if mu > 1.0:  # the shift -sigma * mu * label separates the grades by mu noise scales at any sigma
            hint += (
                f" With mu={mu:g} the noise is also centred at -sigma * mu * label, {mu:g} noise scales per "
                "grade, which a larger sigma does not undo: lower mu."
            )
        return hint

    def derivatives(self, scores: Any, labels: Any, group: Any, *, call: int = 0) -> Ascent:
        r"""CCS estimate of :math:`\nabla_f E[M(f - \sigma\mu r + \sigma\varepsilon)]` and its curvature.

        ``gradient``: the ascent direction of the smoothed metric for every document (averaged over
        ``n_samples`` draws, 1/IDCG-scaled for NDCG; with ``hessian='unit'`` also mean-removed and
        SFA-projected), without weights or SGLB. ``curvature``: with Newton leaves the positive curvature
        :math:`\sum_b |c_b| D(b)/s_d` of the same draws (before the booster-level normalisation to a mean
        of 1), empty with unit Hessians. ``call`` selects the noise stream: the t-th booster call on a
        dataset uses ``call=t``.
        """
        # Finite here; the range is the target's own (encode: [0, 1] for ERR, >= 0 for MRR and AUC, ...).
        labels = check_labels(labels, None, self.target.owner, low=-np.inf)
        scores = check_scores(scores, labels.size)
        offsets = offsets_from_sizes(group, labels.size)
        check_int(call, "call", "gradient", low=0)
        info = DatasetInfo(labels, offsets, None, "stochrank")
        return self._ascent(scores, info, self.target.encode(labels, offsets), call)

    def gradient(self, scores: Any, labels: Any, group: Any, *, call: int = 0) -> FloatArray:
        """Return the ascent direction alone (:meth:`derivatives`' ``gradient``)."""
        gradient: FloatArray = self.derivatives(scores, labels, group, call=call).gradient
        return gradient

    def _check_start(self, info: DatasetInfo, preds: FloatArray) -> None:
        if (
            not translation_invariant(self.target.kind)
            and info.library == "xgboost"
            and preds.size
            and np.all(preds == 0.5)
        ):
            warnings.warn(
                "XGBoost starts every score at base_score=0.5, so lso() begins with every document shown. "
                "Pass base_score=0 to xgb.train (stochrank.xgboost.XGBRanker does this by default).",
                stacklevel=3,
            )
