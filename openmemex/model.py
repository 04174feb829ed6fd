"""Protocol v0.2 data model: the field set, enums and defaults of design §3."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 2
PERSONAL_KEY = "personal"

TYPES = (
    "fact", "preference", "decision", "constraint", "todo", "knowledge",
    "howto", "gotcha", "lesson", "observation", "reference",
)  # fmt: skip
ROLES = ("knowledge", "instruction")
IMPORTANCE = ("low", "normal", "high")
STATUSES = ("active", "superseded", "deprecated", "retracted", "archived")
REVIEW_STATES = ("draft", "proposed", "approved", "rejected", "published")
SCOPES = ("personal", "project", "org")
RESERVED_SCOPES = ("team", "public")
VISIBILITIES = ("private", "internal", "shared")
SOURCES = ("user", "tool", "keyword", "inference", "import", "cli")
HIDDEN_STATUSES = ("retracted", "archived")

# Canonical key order of a written file (design §3 example). Unknown keys keep their place.
FIELD_ORDER = (
    "id", "schema_version", "scope", "scope_key", "visibility", "project_name",
    "type", "role", "importance", "status", "tags", "aliases", "alias", "target",
    "source", "created_at", "updated_at", "supersedes", "superseded_by",
    "review_state", "proposed_by", "approved_by", "derived_from", "review_note",
    "review_history",
)  # fmt: skip
TIME_FIELDS = ("created_at", "updated_at")
MAX_ALIASES = 4
MAX_TAGS = 64  # a new memory's tags: findable words, not a word list (the file reader keeps whatever it finds)


@dataclass
class Memory:
    """One memory file. ``extra`` holds fields we do not know; they survive rewrites."""

    id: str
    scope: str
    scope_key: str
    body: str
    type: str = "fact"
    visibility: str = "private"
    project_name: str = ""
    role: str = "knowledge"
    importance: str = "normal"
    status: str = "active"
    tags: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    source: str = "user"
    created_at: str = ""
    updated_at: str = ""
    supersedes: str | None = None
    superseded_by: str | None = None
    review_state: str = "draft"
    proposed_by: str | None = None
    approved_by: str | None = None
    derived_from: str | None = None
    review_note: str | None = None
    review_history: list[dict[str, Any]] = field(default_factory=list)
    schema_version: int = SCHEMA_VERSION
    alias: str | None = None
    target: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    raw: Any = None  # memfile.RawFile of the text this was read from, for faithful rewrites

    def fields(self) -> dict[str, Any]:
        """The frontmatter mapping in canonical order (optional empties omitted)."""
        out: dict[str, Any] = {}
        for key in FIELD_ORDER:
            value = getattr(self, key)
            if key == "aliases" and not value:
                continue
            if key in ("alias", "target") and value is None:
                continue
            out[key] = value
        return out

    @property
    def title(self) -> str:
        """First non-empty body line, whitespace collapsed — what lists show."""
        for line in self.body.splitlines():
            if line.strip():
                return " ".join(line.split())
        return ""


def default_visibility(scope: str) -> str:
    return "private" if scope == "personal" else "internal"


def normalize_aliases(values: list[str] | None, cap: int | None = MAX_ALIASES) -> list[str]:
    """Trim, drop blanks, case-insensitive dedupe, cap at 4 (D61: never an error; the write
    path says what it left out)."""
    out: list[str] = []
    seen: set[str] = set()
    for value in values or []:
        text = " ".join(str(value).split())
        if not text or text.casefold() in seen:
            continue
        seen.add(text.casefold())
        out.append(text)
        if len(out) == cap:
            break
    return out


def normalize_tags(values: list[str] | str | None) -> list[str]:
    if isinstance(values, str):
        values = values.split(",")
    out: list[str] = []
    seen: set[str] = set()  # a list's `in` made 40k tags take 6 s
    for value in values or []:
        text = str(value).strip()
        if text and text not in seen:
            seen.add(text)
            out.append(text)
    return out
