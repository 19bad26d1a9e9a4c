"""Lines of the learner's file: where a kernel is defined, and which of its lines a compiler error
or an interpreter error points at.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


def def_line(fn: Callable[..., Any]) -> int:
    """The file line of a function's `def` (its code starts at the first decorator, which may
    span several lines, as `@triton.autotune(configs=[...])` does)."""
    import linecache

    code = fn.__code__
    line = code.co_firstlineno
    while line < code.co_firstlineno + 200 and not linecache.getline(code.co_filename, line).lstrip().startswith(
            ("def ", "async def ")):
        line += 1
    return line


def compilation_line(cause: BaseException, fn: Callable[..., Any] | None) -> int | None:
    """The file line of a Triton compilation error: its position counts from the kernel's `def`."""
    lineno = getattr(getattr(cause, "node", None), "lineno", None)
    if lineno is None or not getattr(cause, "src", None) or fn is None:
        return None
    return def_line(fn) + lineno - 1


def line_calling(message: str, fn: Callable[..., Any] | None) -> int | None:
    """For the compiler's "Unsupported function referenced: <built-in method maximum ...>", which carries no
    position: the first line of the kernel that calls that name."""
    named = re.search(r"Unsupported function referenced: <(?:built-in )?(?:method|function) (\w+)", message)
    if named is None or fn is None:
        return None
    import inspect

    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    call = re.compile(rf"\b{re.escape(named.group(1))}\s*\(")
    return next((start + i for i, text in enumerate(lines) if call.search(text)), None)

