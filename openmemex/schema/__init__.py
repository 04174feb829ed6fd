"""The JSON Schema of protocol v0.2 frontmatter, shipped in the package and used to validate."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_FILE = "memory-v2.schema.json"


def schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files(__package__).joinpath(SCHEMA_FILE).read_text("utf-8"))
    return data


@cache
def _validator() -> Callable[[Any], Any]:
    import fastjsonschema

    validator: Callable[[Any], Any] = fastjsonschema.compile(schema())
    return validator


def validate(fields: dict[str, Any]) -> None:
    """Raise ValueError with a one-line, field-named reason when ``fields`` break the schema."""
    import fastjsonschema

    try:
        _validator()(fields)
    except fastjsonschema.JsonSchemaValueException as exc:
        name = (exc.name or "").removeprefix("data.").removeprefix("data") or "frontmatter"
        value = exc.value if not isinstance(exc.value, dict | list) else None
        shown = f" (got {value!r})" if value is not None else ""
        raise ValueError(f"field {name!r} {exc.message.split(' ', 1)[-1]}{shown}") from None
