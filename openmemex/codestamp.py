"""This process's code and runtime as one digest, for what is kept between processes and is
only as good as the code that made it: the index's FTS derivation rules
(``index_schema.rules_match``) and the scanner's clean verdicts (``echo.CleanMemo``).

It covers Python's version and Unicode tables (``\\w`` and the tokenizer's letters move with
them) and the size and time of every module of the package and of its scanner. It is read
once, when this module is first imported (with the index's schema, early in a process): a
process that keeps running while its files are upgraded under it goes on describing the code
it runs, never the files now on disk."""

from __future__ import annotations

import hashlib
import os
import sys
import unicodedata


def _read() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    parts = [sys.version, unicodedata.unidata_version]
    for folder in (here, os.path.join(here, "redact")):
        try:
            with os.scandir(folder) as entries:
                for entry in sorted(entries, key=lambda e: e.name):
                    if entry.name.endswith(".py"):
                        st = entry.stat()
                        parts.append(f"{os.path.basename(folder)}/{entry.name}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            parts.append(os.urandom(8).hex())  # modules we cannot list: nothing kept is ever taken at its word
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]


STAMP = _read()
