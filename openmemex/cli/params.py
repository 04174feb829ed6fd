"""The cyclopts parameter types the command modules annotate with.

Their own module because building them imports cyclopts: ``output.py`` hands them out
lazily, so the read commands' fast path can print through it without cyclopts (issue 11).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from cyclopts import Parameter

Flag = Annotated[bool, Parameter(negative="")]  # --json, --soft, … (no --no-… twin)
Text = Annotated[str, Parameter(allow_leading_hyphen=True)]  # free text may start with "-"


def _whole(_type: object, tokens: Sequence[Any]) -> int:
    """A count as people write it: decimal digits only. cyclopts' own ``int`` takes ``1.5``
    (rounded to 2), ``0x2`` and ``0b11``; the fast path takes only digits (``argv.count``),
    so both refuse the rest alike."""
    token = tokens[0]
    value = str(getattr(token, "value", token))
    if not (value.isascii() and value.isdigit()):
        raise ValueError(f"{value!r} is not a whole number (use digits, e.g. 8)")
    return int(value)


Count = Annotated[int, Parameter(converter=_whole)]  # --limit
