"""Constructor decoration: shared parameter docs, strict keyword arguments with hints.

A booster that calls the constructor itself (``lgb.train({"objective": stochrank.ndcg}, ...)``, no
parentheses) gets an error saying to call it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

__all__ = ["check_not_constructor", "documented"]

P = ParamSpec("P")
R = TypeVar("R")

# The decorated constructors (stochrank.ndcg, ..., softrank), to recognise one passed as an objective.
_CONSTRUCTORS: list[Callable[..., Any]] = []


def check_not_constructor(objective: object) -> None:
    """Raise ``TypeError`` if ``objective`` is one of stochrank's constructors (``stochrank.ndcg`` itself)."""
    if any(objective is c for c in _CONSTRUCTORS):
        raise TypeError(_misuse(getattr(objective, "__name__", "ndcg")))


def _misuse(name: str) -> str:
    """Return the message for the constructor ``stochrank.<name>`` given where an objective belongs."""
    return (
        f"stochrank.{name} is the function that makes an objective, not an objective: call it, "
        f"stochrank.{name}(k=...), and pass what it returns, e.g. "
        f"lgb.train({{'objective': stochrank.{name}(k=5)}}, ...), "
        f"LGBMRanker(objective=stochrank.{name}(k=5)) or xgb.train(..., obj=stochrank.{name}(k=5))."
    )


def documented(
    common_doc: str, renamed: Mapping[str, str] | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a constructor: complete its docstring and reject unknown keyword arguments.

    ``common_doc`` takes the place of ``    {common}`` in the docstring; an unknown keyword argument
    fails with a suggestion (CatBoost silently ignores typos).

    ``renamed`` maps names people bring from elsewhere (CatBoost's loss string) to the parameter to use.
    The signature is kept (``ParamSpec``), so type checkers and IDEs see the real parameters.
    """
    hints = dict(renamed or {})

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        if func.__doc__:
            func.__doc__ = func.__doc__.replace("    {common}", common_doc.strip("\n"))
        valid = set(inspect.signature(func).parameters)

        @functools.wraps(func)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if len(args) > 1:  # the constructor takes at most k positionally; boosters call (preds, data)
                raise TypeError(
                    f"{_misuse(func.__name__)} It was called with {len(args)} positional "
                    "arguments, as a booster calls an objective."
                )
            unknown = sorted(set(kwargs) - valid)
            if unknown:
                named = [f"'{u}' (use '{hints[u]}')" if hints.get(u) in valid else f"'{u}'" for u in unknown]
                raise TypeError(
                    f"stochrank.{func.__name__}() got unknown parameter(s) {', '.join(named)}. "
                    f"Valid parameters: {', '.join(sorted(valid))}."
                )
            return func(*args, **kwargs)

        _CONSTRUCTORS.append(wrapper)
        return wrapper

    return decorate
