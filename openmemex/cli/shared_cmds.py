"""Shared-repository commands: scan and check (the pre-commit hooks and CI call these).

Plain command lines never reach this module: ``entry.py`` runs them through ``shared.fast``
without loading cyclopts. These are the same commands for ``--help`` and for everything the
fast path leaves to the full CLI; both call ``shared.run_scan`` / ``shared.run_check``.
"""

from __future__ import annotations

from .output import Flag
from .shared import run_check, run_scan


def scan(paths: list[str] | None = None, /, *, staged: Flag = False, format: str = "text") -> int:
    """Scan files for secrets (the pre-commit hook open-memex-secrets).

    Prints `path:line:col rule-id value` per finding, the value masked (first 4 characters
    kept). Folders are searched recursively (skipping .git, binary and files over 5 MB);
    a file named here or staged is a gate's: a binary one is scanned for its text, one over
    5 MB fails the run. Arguments after -- are paths, even --help. Memory files never
    report the ids and times open-memex generates. Exit 0 when clean, 1 when a secret is
    found or a named file could not be scanned, 2 for a usage error.

    Parameters
    ----------
    paths
        Files or folders to scan; default: this repository's memory folder (.ai/open-memex).
    staged
        Scan what the next commit adds or changes, read from the index git names in GIT_INDEX_FILE (right under `git commit -a` and `git commit -- path`; the index is never written); with PATHs, only those.
    format
        text, json, github (workflow annotations) or sarif (SARIF 2.1.0).
    """
    return run_scan(list(paths or []), staged=staged, format=format)


def check(paths: list[str] | None = None, /, *, base: str | None = None, format: str = "text") -> int:
    """Check memory files for CI and the pre-commit hook open-memex-check.

    Per file: frontmatter valid against the JSON Schema, id equal to the file name, no
    personal or private memory in the repository, no secrets, review steps legal and
    review_history only appended to; across files: supersede chains consistent and no
    duplicate ids. One line per problem, with the fix. Exit 0 pass, 1 problems, 2 usage.

    Parameters
    ----------
    paths
        Memory files (or folders) to check as they are on disk, against HEAD (what the pre-commit hook passes); with --base, only these among the changed files.
    base
        Check the memory files added or changed between the merge base of BASE and HEAD (a pull request: --base origin/main); without BASE or PATHs, every memory file in HEAD.
    format
        text, json or github (workflow annotations).
    """
    return run_check(list(paths or []), base=base, format=format)
