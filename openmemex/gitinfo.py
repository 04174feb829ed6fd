"""Just enough repository discovery for read paths, in pure Python.

``open-memex search`` must not pay for importing pygit2, so finding the work tree root and
``remote.origin.url`` is done by reading ``.git`` and the config file directly. The git
sync layer uses pygit2 for everything that changes a repository.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RepoInfo:
    workdir: Path
    git_dir: Path
    common_dir: Path

    def origin_url(self) -> str | None:
        return read_config_value(self.common_dir / "config", "remote", "origin", "url")


def discover(start: Path) -> RepoInfo | None:
    """The work tree containing ``start`` (a linked worktree's ``.git`` file is followed)."""
    env_dir = os.environ.get("GIT_DIR")
    if env_dir:
        git_dir = Path(env_dir).absolute()
        work = Path(os.environ.get("GIT_WORK_TREE") or start).absolute()
        return RepoInfo(work, git_dir, _common_dir(git_dir))
    current = start.absolute()
    for folder in (current, *current.parents):
        dot_git = folder / ".git"
        try:
            if dot_git.is_dir():
                if (dot_git / "HEAD").exists():
                    return RepoInfo(folder, dot_git, _common_dir(dot_git))
            elif dot_git.is_file():
                target = _read_gitfile(dot_git)
                if target is not None:
                    return RepoInfo(folder, target, _common_dir(target))
        except OSError:
            continue
    return None


def _read_gitfile(path: Path) -> Path | None:
    try:
        text = path.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    return target if target.is_absolute() else (path.parent / target).resolve()


def _common_dir(git_dir: Path) -> Path:
    try:
        rel = (git_dir / "commondir").read_text("utf-8").strip()
    except OSError:
        return git_dir
    path = Path(rel)
    return path if path.is_absolute() else (git_dir / path).resolve()


_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')


def read_config_value(path: Path, section: str, subsection: str | None, key: str,
                      git_dir: Path | None = None, _depth: int = 0) -> str | None:  # fmt: skip
    """The last value of ``section.subsection.key`` in one git config file, the files it
    includes read where their ``[include]`` or matching ``[includeIf]`` stands (as git does:
    ``gitdir:``, ``gitdir/i:`` against ``git_dir``, ``onbranch:``; depth ≤ 10). A key without
    ``=`` is a boolean true."""
    try:
        lines = path.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    current: tuple[str, str | None] | None = None
    found: str | None = None
    for line in lines:
        match = _SECTION.match(line)
        if match:
            current = (match.group(1).lower(), match.group(2))
            line = match.group(3)
            if not line.strip():
                continue
        name, sep, value = line.partition("=")
        name = name.strip().lower()
        if current is not None and current[0] in ("include", "includeif") and name == "path" and sep:
            if _depth < 10 and (current[0] == "include" or _condition(current[1] or "", path, git_dir)):
                target = _include_path(_unquote(value), path)
                included = read_config_value(target, section, subsection, key, git_dir, _depth + 1)
                if included is not None:
                    found = included
            continue
        if current != (section.lower(), subsection):
            continue
        if name == key.lower():
            found = _unquote(value) if sep else ("true" if not name.startswith(("#", ";")) else found)
    return found


def _include_path(text: str, including: Path) -> Path:
    if text.startswith("~/"):
        return Path.home() / text[2:]
    path = Path(text)
    return path if path.is_absolute() else including.parent / path


def _condition(condition: str, including: Path, git_dir: Path | None) -> bool:
    kind, _, pattern = condition.partition(":")
    if kind in ("gitdir", "gitdir/i") and git_dir is not None and pattern:
        if pattern.startswith("~/"):
            pattern = str(Path.home()) + pattern[1:]
        elif pattern.startswith("./"):
            pattern = str(including.parent) + pattern[1:]
        elif not pattern.startswith("/"):
            pattern = "**/" + pattern
        if pattern.endswith("/"):
            pattern += "**"
        flags = re.IGNORECASE if kind == "gitdir/i" else 0
        regex = re.compile(_wildmatch(pattern), flags)
        candidates = {str(git_dir), os.path.realpath(git_dir)}
        return any(regex.fullmatch(c) or regex.fullmatch(c + "/") for c in candidates)
    if kind == "onbranch" and git_dir is not None and pattern:
        try:
            head = (git_dir / "HEAD").read_text("utf-8", errors="replace").strip()
        except OSError:
            return False
        if not head.startswith("ref: refs/heads/"):
            return False
        if pattern.endswith("/"):
            pattern += "**"
        return re.fullmatch(_wildmatch(pattern), head[len("ref: refs/heads/") :]) is not None
    return False  # hasconfig: and conditions git may add later: not matched


def _wildmatch(pattern: str) -> str:
    """git's wildmatch with WM_PATHNAME as a regular expression: ``*`` and ``?`` stay within a
    folder, ``**/`` spans folders."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def command_line_config(section: str, key: str) -> str | None:
    """``git -c section.key=value`` as git hands it to a subcommand (``git memex …``):
    ``GIT_CONFIG_PARAMETERS``, then ``GIT_CONFIG_COUNT``/``_KEY_n``/``_VALUE_n``; the last
    wins, a key without a value is true."""
    import shlex

    wanted = f"{section}.{key}".lower()
    found: str | None = None
    raw = os.environ.get("GIT_CONFIG_PARAMETERS", "")
    try:
        entries = shlex.split(raw) if raw else []
    except ValueError:
        entries = []
    for entry in entries:
        name, sep, value = entry.partition("=")
        if name.lower() == wanted:
            found = value if sep else "true"
    try:
        count = int(os.environ.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        count = 0
    for n in range(max(0, count)):
        if os.environ.get(f"GIT_CONFIG_KEY_{n}", "").lower() == wanted:
            found = os.environ.get(f"GIT_CONFIG_VALUE_{n}", "")
    return found


def _unquote(value: str) -> str:
    out: list[str] = []
    in_quote = False
    i = 0
    text = value.strip()
    while i < len(text):
        ch = text[i]
        if ch == '"':
            in_quote = not in_quote
        elif ch == "\\" and i + 1 < len(text):
            i += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(text[i], text[i]))
        elif ch in "#;" and not in_quote:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip()


def config_files(git_dir: Path | None) -> list[Path]:
    """The config files git reads, most specific first: the repository's (a linked
    worktree's common dir too), the global file (``GIT_CONFIG_GLOBAL`` when set — libgit2
    ignores it), then system unless ``GIT_CONFIG_NOSYSTEM``."""
    files: list[Path] = []
    if git_dir is not None:
        files.append(git_dir / "config")
        common = _common_dir(git_dir)
        if common != git_dir:
            files.append(common / "config")
    global_file = os.environ.get("GIT_CONFIG_GLOBAL")
    if global_file is not None:
        files.append(Path(global_file))
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME")
        files.append(Path.home() / ".gitconfig")
        files.append(Path(xdg) / "git" / "config" if xdg else Path.home() / ".config" / "git" / "config")
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        files.append(Path("/etc/gitconfig"))
    return files


def config_value(section: str, key: str, git_dir: Path | None = None) -> str | None:
    """``section.key`` as git resolves it: ``git -c`` first, then the files with their
    includes (no subsections)."""
    value = command_line_config(section, key)
    if value is not None:
        return value
    for path in config_files(git_dir):
        value = read_config_value(path, section, None, key, git_dir)
        if value is not None:
            return value
    return None


def hook_file(git_dir: Path, workdir: Path, name: str) -> Path | None:
    """The hook ``name`` git would run for this repository: under ``core.hooksPath`` (a
    relative one from the work tree's top), else the common git dir's ``hooks/`` — a linked
    worktree's hooks are the main repository's — and only an executable file, as for git.
    libgit2 runs none: every place that must run or respect one finds it here."""
    configured = config_value("core", "hooksPath", git_dir)
    folder = Path(os.path.expanduser(configured)) if configured else _common_dir(git_dir) / "hooks"
    if not folder.is_absolute():
        folder = workdir / folder
    hook = folder / name
    return hook if hook.is_file() and os.access(hook, os.X_OK) else None
