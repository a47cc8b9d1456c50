"""Constructor decoration: shared parameter docs and strict keyword arguments with hints."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import ParamSpec, TypeVar

__all__ = ["documented"]

P = ParamSpec("P")
R = TypeVar("R")


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
            unknown = sorted(set(kwargs) - valid)
            if unknown:
                named = [f"'{u}' (use '{hints[u]}')" if hints.get(u) in valid else f"'{u}'" for u in unknown]
                raise TypeError(
                    f"stochrank.{func.__name__}() got unknown parameter(s) {', '.join(named)}. "
                    f"Valid parameters: {', '.join(sorted(valid))}."
                )
            return func(*args, **kwargs)

        return wrapper

    return decorate
