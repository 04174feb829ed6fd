"""Writing results: people's text and --json documents to stdout, notices to stderr."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

from cyclopts import Parameter

if TYPE_CHECKING:
    from ..context import Context

Flag = Annotated[bool, Parameter(negative="")]  # --json, --soft, … (no --no-… twin)
Text = Annotated[str, Parameter(allow_leading_hyphen=True)]  # free text may start with "-"


def open_context() -> Context:
    """The command's Context, with a progress bar for large first reads on a terminal."""
    from ..context import Context
    from .progress import Progress

    ctx = Context.load()
    ctx.progress = Progress("indexing memory files").update
    return ctx


def out(text: str = "") -> None:
    sys.stdout.write(text + "\n")


def note(text: str) -> None:
    sys.stderr.write(text + "\n")


def emit_json(document: Any) -> None:
    """Exactly one JSON document on stdout (SPEC §6)."""
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2, default=str) + "\n")


def split_list(value: str | None, seps: str = ",") -> list[str]:
    if not value:
        return []
    items = [value]
    for sep in seps:
        items = [part for item in items for part in item.split(sep)]
    return [item.strip() for item in items if item.strip()]
