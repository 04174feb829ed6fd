"""Settings: built-in defaults overlaid by ``<data root>/config.json`` (or
``OPEN_MEMEX_CONFIG``). Comments are tolerated on read (JSONC, string-aware, D63)."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from .errors import MemexError, UsageError
from .jsonc import strip_jsonc
from .paths import DEFAULT_MEMORY_DIR

BOM = "\ufeff"  # Notepad's "UTF-8 with BOM": read past, and kept by `config set`

if TYPE_CHECKING:
    from .redact.user import UserRules

DEFAULTS: dict[str, Any] = {
    "memoryDir": DEFAULT_MEMORY_DIR,
    "maxProjectMemories": 8,
    "maxProfileItems": 5,
    "injectTokens": 800,
    "injectOnFirstTurn": True,
    "keywordCaptureEnabled": True,
    "captureAliases": True,
    "redactPatterns": [],
    "redactAllowlist": [],
    "scanExclude": [],
    "logLevel": "info",
    "sync": {"autoPull": False, "transport": "auto"},
    "github": {"apiUrl": ""},
    # search (issue 10): the optional embeddings lane (off | multilingual-e5-small |
    # wordllama, D7/D8) and user D80 expansion groups ([["pto", "vacation", "休假"], …])
    "embeddings": "off",
    "searchExpansions": [],
}


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _nonneg_int(value: Any) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError("expected a whole number >= 0")
    number = int(value)  # OverflowError for 1e400: a ValueError below
    if number < 0:
        raise ValueError("expected a whole number >= 0")
    return number


def _choice(*options: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if str(value) not in options:
            raise ValueError(f"expected one of {', '.join(options)}")
        return str(value)

    return check


def _patterns(value: Any) -> list[str]:
    """Checked as they will run: by the ``regex`` package (``redact.user``), which reads every
    pattern ``re`` reads, and a few more (``\\p{L}``)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of regular expressions")
    from .redact.user import pattern_problem

    for pattern in value:
        problem = pattern_problem(pattern)
        if problem is not None:
            raise ValueError(f"{pattern!r} is not a valid regular expression ({problem})")
    return list(value)


def _allowlist(value: Any) -> list[str]:
    """Values never to mask: each an exact value or a regex matching the whole value (an
    entry that is not a valid regex is kept as an exact value)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError("expected a list of non-empty strings (exact values or regular expressions)")
    return list(value)


def _scan_exclude(value: Any) -> list[str]:
    """Paths ``scan`` leaves out (gitignore-style globs, ``globs.py``): the way a gate lets one
    legitimate file it cannot scan (a dump over 5 MB) be committed without ``--no-verify``."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of gitignore-style globs, e.g. [\"data/*.sql\"]")
    from .globs import check_pattern

    return [check_pattern(v) for v in value]


class UrlCredentialsError(ValueError):
    """A URL with a ``user:token@`` part: refused, so no token is stored in config or shown."""


def check_url(value: Any) -> str:
    """An http(s) URL with a host (and a port in range), or ValueError: ``github.apiUrl`` as set,
    and ``pr-status --api-url``. A URL with credentials (``https://x-access-token:TOKEN@host``)
    is refused (``UrlCredentialsError``): the config file is plain text, and the URL is shown in
    every pr-status error and CI log; the token belongs in ``GH_TOKEN``."""
    text = str(value).strip()
    if not text:
        return text
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  (a port out of range raises here, not at the first request)
    except ValueError:
        parts = None
    if parts is not None and ("@" in parts.netloc or parts.query or parts.fragment):  # ?access_token=…
        raise UrlCredentialsError(
            "the URL holds credentials (user:token@) or a query — give the API's base URL alone; the token comes from "
            "GH_TOKEN, GITHUB_TOKEN or `gh auth login`"
        )
    if parts is None or parts.scheme not in ("https", "http") or not parts.hostname:
        raise ValueError("expected an http(s) URL such as https://ghe.example.com/api/v3")
    return text


def _expansion_groups(value: Any) -> list[list[str]]:
    if value == []:
        return []  # the default: no need to load the expansion module (and sqlite3) on every start-up
    from .expansions import check_groups

    return check_groups(value)


def check_memory_dir(value: Any) -> str:
    """A relative folder inside the repository: no absolute path, no ``..``, not the
    repository root and not inside ``.git`` (D23, D63). A hand-edited config's ``5`` or
    ``["a"]`` is not a folder name (it became ``<repo>/['a']``)."""
    if not isinstance(value, str):
        raise ValueError(f"memoryDir must be a folder name in quotes (a string), not {type(value).__name__} {value!r}")
    text = value.strip().replace("\\", "/")
    pure = PurePosixPath(text)
    if (not text or pure.is_absolute() or ".." in pure.parts or (len(text) > 1 and text[1] == ":")
            or str(pure) == "." or (pure.parts and pure.parts[0].lower() == ".git")):  # fmt: skip
        raise ValueError("memoryDir must be a relative folder inside the repository (not '.', not in .git, without '..')")
    return str(pure)


VALIDATORS: dict[str, Callable[[Any], Any]] = {
    "memoryDir": check_memory_dir,
    "maxProjectMemories": _nonneg_int,
    "maxProfileItems": _nonneg_int,
    "injectTokens": _nonneg_int,
    "injectOnFirstTurn": _bool,
    "keywordCaptureEnabled": _bool,
    "captureAliases": _bool,
    "redactPatterns": _patterns,
    "redactAllowlist": _allowlist,
    "scanExclude": _scan_exclude,
    "logLevel": _choice("info", "debug"),
    "sync.autoPull": _bool,
    "sync.transport": _choice("auto", "git", "pygit2"),
    "github.apiUrl": check_url,
    "embeddings": _choice("off", "multilingual-e5-small", "wordllama"),
    "searchExpansions": _expansion_groups,
}


@dataclass
class Config:
    values: dict[str, Any]
    path: Path
    exists: bool

    def get(self, key: str) -> Any:
        node: Any = self.values
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise UsageError(f"unknown config key {key!r} — known keys: {', '.join(VALIDATORS)}")
            node = node[part]
        return node

    @property
    def memory_dir(self) -> str:
        return str(self.values["memoryDir"])

    @property
    def redact_patterns(self) -> UserRules:
        """``redactPatterns``, carrying ``redactAllowlist`` along: every caller that passes
        these to ``redact``/``find_secrets`` honours the allowlist too."""
        from .redact.user import UserRules

        return UserRules(self.values.get("redactPatterns") or [], self.redact_allowlist)

    @property
    def masking_rules(self) -> Sequence[str]:
        """``redact_patterns`` for masking what goes back to an agent (``echo.for_transcript``):
        nothing when the user set neither patterns nor an allowlist, so a hook that finds
        every text known clean never imports the scanner."""
        if not self.values.get("redactPatterns") and not self.values.get("redactAllowlist"):
            return ()
        return self.redact_patterns

    @property
    def redact_allowlist(self) -> list[str]:
        return list(self.values.get("redactAllowlist") or [])

    @property
    def scan_exclude(self) -> list[str]:
        return list(self.values.get("scanExclude") or [])


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(path: Path, warn: Callable[[str], None] | None = None) -> Config:
    """The config at ``path`` over the defaults; each invalid value is warned about (through
    ``warn``: a Context's, so an MCP tool result carries it as a note) and replaced by its
    default — except ``redactPatterns``, where only the invalid patterns are left out (one
    typo turned off every pattern, and secrets they mask were stored in the clear)."""
    _warn = warn or _warn_stderr
    user: dict[str, Any] = {}
    exists = path.is_file()
    if os.path.lexists(path) and not exists:
        _warn(f"config file {path} is not a file (a folder, or a link to nothing); using the defaults")
    if exists:
        try:
            text = path.read_text("utf-8").removeprefix(BOM)
            parsed = json.loads(strip_jsonc(text)) if text.strip() else {}
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:  # ValueError: a 5,000-digit number
            raise MemexError(f"config file {path} is not valid JSON ({exc}); fix or delete it") from None
        if not isinstance(parsed, dict):
            raise MemexError(f"config file {path} must hold a JSON object; fix or delete it")
        user = parsed
    for section in ("sync", "github"):
        if section in user and not isinstance(user[section], dict):
            _warn(f"{section!r} in {path} must be an object; using the defaults")
            user.pop(section)
    values = _merge(DEFAULTS, user)
    for key, check in VALIDATORS.items():
        head, _, tail = key.partition(".")
        node = values[head] if tail else values
        name = tail or head
        if name not in node:
            continue
        if key == "redactPatterns" and isinstance(node[name], list):
            kept, bad = _valid_patterns(node[name])
            for pattern, why in bad:
                _warn(f"redactPatterns in {path}: {pattern!r} is left out ({why}); the other patterns still apply")
            node[name] = kept
            continue
        try:
            node[name] = check(node[name])
        except (TypeError, ValueError, OverflowError) as exc:
            default = DEFAULTS[head][tail] if tail else DEFAULTS[head]
            _warn(f"{key} in {path} is invalid ({exc}); using {default!r}")
            node[name] = default
    return Config(values, path, exists)


def _valid_patterns(values: list[Any]) -> tuple[list[str], list[tuple[str, str]]]:
    kept: list[str] = []
    bad: list[tuple[str, str]] = []
    for value in values:
        if not isinstance(value, str):
            bad.append((str(value), "not a string"))
            continue
        try:  # re first: already loaded, and what it reads regex reads too (redact.user)
            re.compile(value)
        except (re.error, OverflowError, RecursionError, ValueError) as exc:
            from .redact.user import pattern_problem

            if pattern_problem(value) is not None:
                bad.append((value, f"not a valid regular expression: {exc}"))
                continue
        kept.append(value)
    return kept, bad


def _warn_stderr(message: str) -> None:
    from .terminal import safe  # values quoted from a hand-edited file

    print(f"open-memex: warning: {safe(message)}", file=sys.stderr)


def set_value(path: Path, key: str, raw_value: str) -> Any:
    """Validate and persist one key; dotted keys keep their siblings. Returns the value set."""
    if key not in VALIDATORS:
        raise UsageError(f"unknown config key {key!r} — settable keys: {', '.join(VALIDATORS)}")
    try:
        candidate: Any = json.loads(raw_value)
    except (ValueError, RecursionError):
        candidate = raw_value
    try:
        value = VALIDATORS[key](candidate)
    except (TypeError, ValueError, OverflowError) as exc:
        raise UsageError(f"invalid value for {key}: {exc}") from None
    # a link (a dotfiles manager's) is written through, not replaced by a plain file
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    if os.path.lexists(target) and not target.is_file():
        raise MemexError(f"config file {path} is not a file — move it away, then set the value again")
    from .locks import scope_lock

    target.parent.mkdir(parents=True, exist_ok=True)
    with scope_lock(target.parent, [f".{target.name}"]):  # two `config set` at once: neither update is lost
        return _write_value(target, key, value)


def _write_value(path: Path, key: str, value: Any) -> Any:
    current: dict[str, Any] = {}
    bom = False
    if path.is_file():
        try:
            text = path.read_text("utf-8")
            bom = text.startswith(BOM)
            text = text.removeprefix(BOM)
            loaded = json.loads(strip_jsonc(text)) if text.strip() else {}
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise MemexError(f"config file {path} is not valid JSON ({exc}); fix or delete it first") from None
        if not isinstance(loaded, dict):
            raise MemexError(f"config file {path} must hold a JSON object; fix or delete it first")
        current = loaded
    node = current
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value
    _replace(path, (BOM if bom else "") + json.dumps(current, indent=2, ensure_ascii=False) + "\n")
    return value


def _replace(path: Path, text: str) -> None:
    """Temp file + fsync + rename, as ``store.write_atomic``, keeping the file's mode: a
    config made 0600 (``redactAllowlist`` can hold exact secret values) stays 0600, and the
    temp file is 0600 until it gets that mode. A new config is made as before (umask)."""
    try:
        mode: int | None = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    data = text.encode("utf-8")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else 0o600)
    try:
        try:
            view = memoryview(data)
            while view:  # a short write on a nearly full disk: every byte, or an error
                written = os.write(fd, view)
                if written <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
