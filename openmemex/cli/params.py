"""The cyclopts parameter types the command modules annotate with.

Their own module because building them imports cyclopts: ``output.py`` hands them out
lazily, so the read commands' fast path can print through it without cyclopts (issue 11).
"""

from __future__ import annotations

from typing import Annotated

from cyclopts import Parameter

Flag = Annotated[bool, Parameter(negative="")]  # --json, --soft, … (no --no-… twin)
Text = Annotated[str, Parameter(allow_leading_hyphen=True)]  # free text may start with "-"
