r"""A branch-free ``exp`` for arguments <= 0 that LLVM can inline and vectorise.

Numba's ``np.exp`` in a loop is a scalar libm call (the pip llvmlite has no SVML), which made the
Gaussian densities of the CCS loop its dominant cost. :func:`exp_nonpos` is the textbook scheme:

* Cody–Waite range reduction :math:`v = k \ln 2 + r`, :math:`|r| \le \ln 2 / 2`, with k found by the
  "shifter" trick (adding :math:`1.5 \cdot 2^{52}` rounds to an integer held in the low mantissa bits),
  so no float-to-int conversion is needed (AVX2 has none for 64-bit integers);
* :math:`e^r` by its degree-12 Taylor polynomial (truncation error below :math:`3 \cdot 10^{-16}`
  relative on the interval) in Horner form with fused multiply-adds;
* :math:`2^k` built directly in the exponent bits.

The relative error against ``np.exp`` is a few units in the last place (tested below 1e-14). Results
that would be subnormal are flushed to exactly 0: for :math:`v < \ln(2^{-1022}) \approx -708.396`
``np.exp`` returns less than 2.3e-308, which no density sum in this package can notice. Arguments must
be finite or -inf (scores are validated finite); positive arguments up to about 709 also work.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # 32 significant bits: k * _LN2_HI is exact for |k| < 2^21
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0  # 1.5 * 2^52: x + _SHIFT rounds x to an integer kept in the low bits
_LOWEST = -708.3964185322641  # ln(2^-1022): below it exp(v) is subnormal or 0
_EXP_BIAS = 1023
_MANTISSA_BITS = 52


# An intrinsic's definition receives Numba's typing context and argument types and returns the signature
# and an LLVM IR generator; those objects are numba/llvmlite internals, hence Any.
def _as_int64_definition(typingctx: Any, x: Any) -> tuple[Any, Any]:
    """Reinterpret the bits of a float64 as an int64 (free: a register bitcast)."""

    def codegen(context: Any, builder: Any, signature: Any, args: list[Any]) -> Any:
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


def _as_float64_definition(typingctx: Any, i: Any) -> tuple[Any, Any]:
    """Reinterpret an int64's bits as a float64."""

    def codegen(context: Any, builder: Any, signature: Any, args: list[Any]) -> Any:
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


def _fma_definition(typingctx: Any, a: Any, b: Any, c: Any) -> tuple[Any, Any]:
    """Compute a * b + c with one rounding (``llvm.fma``, a single instruction on FMA hardware)."""

    def codegen(context: Any, builder: Any, signature: Any, args: list[Any]) -> Any:
        return builder.fma(*args)

    return types.float64(types.float64, types.float64, types.float64), codegen


if TYPE_CHECKING:
    # How jitted code calls them. Numba's stubs give an intrinsic its definition's signature, typing
    # context included, and the return type Never (calling one from Python raises).
    def _as_int64(x: float, /) -> int: ...
    def _as_float64(i: int, /) -> float: ...
    def _fma(a: float, b: float, c: float, /) -> float: ...
else:
    _as_int64 = intrinsic(_as_int64_definition)
    _as_float64 = intrinsic(_as_float64_definition)
    _fma = intrinsic(_fma_definition)


@njit(cache=True)
def exp_nonpos(v: float) -> float:
    """exp(v) for v <= 0 within a few ulp of ``np.exp``; 0 where ``np.exp`` would be subnormal."""
    w = max(v, _LOWEST)  # keeps 2^k normal; the result is replaced by 0 below
    s = w * _LOG2E + _SHIFT
    kf = s - _SHIFT  # round(w / ln 2), exactly representable
    r = _fma(-kf, _LN2_LO, _fma(-kf, _LN2_HI, w))
    p = 1.0 / 479001600.0
    p = _fma(p, r, 1.0 / 39916800.0)
    p = _fma(p, r, 1.0 / 3628800.0)
    p = _fma(p, r, 1.0 / 362880.0)
    p = _fma(p, r, 1.0 / 40320.0)
    p = _fma(p, r, 1.0 / 5040.0)
    p = _fma(p, r, 1.0 / 720.0)
    p = _fma(p, r, 1.0 / 120.0)
    p = _fma(p, r, 1.0 / 24.0)
    p = _fma(p, r, 1.0 / 6.0)
    p = _fma(p, r, 0.5)
    p = _fma(p, r, 1.0)
    p = _fma(p, r, 1.0)
    # The low 12 bits of s hold k (two's complement); shifted into the exponent field they give 2^k.
    scale = _as_float64((_as_int64(s) + _EXP_BIAS) << _MANTISSA_BITS)
    return p * scale if v >= _LOWEST else 0.0
