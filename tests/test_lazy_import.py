"""Import-time work deferred to first use (issue 60): the CJK and redaction patterns compile,
and the built-in expansion map derives its tables, only when something uses them — a hook's
session start, ``list`` or ``show`` imports the modules and never does. Results are the
ones eager compilation and derivation gave."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import openmemex
from openmemex import expansions, lazyre
from openmemex.expansions import GROUPS, Expander, token
from openmemex.lazyre import LazyPattern

# (pattern, flags, text): groups that take no part, inline flags, flags given, CJK classes
CASES = [
    (r"(a)|(b)", 0, "xaybzab"),
    (r"(?ix) d(e)ploy  # a comment", 0, "DEPLOY and deploy, Deploy"),
    (r"ship(ped)?", re.IGNORECASE, "SHIPPED ship Shipping"),
    (r"[\u3040-\u30ff\u4e00-\u9fff]+", 0, "用redis做缓存，部署 then ひらがな"),
    (r"^\w+$", re.MULTILINE, "one\ntwo three\nfour"),
    (r"", 0, "ab"),
]


def _shape(result: object) -> object:
    """A method's result with each match object as what it matched (match objects of two
    patterns never compare equal)."""
    if isinstance(result, re.Match):
        return ("match", result.span(), result.group(), result.groups(), result.groupdict())
    if isinstance(result, list | tuple):
        return [_shape(r) for r in result]
    return result


def _calls(text: str) -> list[tuple[str, Callable[[Any], object]]]:
    """Every method, with positional, keyword and pos/endpos forms."""
    end = max(len(text) - 2, 0)
    return [
        ("search", lambda p: p.search(text)),
        ("search pos", lambda p: p.search(text, 2, end)),
        ("match", lambda p: p.match(text)),
        ("match pos", lambda p: p.match(string=text, pos=1)),
        ("fullmatch", lambda p: p.fullmatch(text)),
        ("fullmatch endpos", lambda p: p.fullmatch(text, 0, 3)),
        ("sub", lambda p: p.sub("<\\g<0>>", text)),
        ("sub count", lambda p: p.sub("-", text, 1)),
        ("sub function", lambda p: p.sub(lambda m: m.group().upper()[::-1] + "|", text)),
        ("subn", lambda p: p.subn("_", text)),
        ("subn function", lambda p: p.subn(lambda m: str(m.span()), text, count=2)),
        ("findall", lambda p: p.findall(text)),
        ("findall pos", lambda p: p.findall(text, 1, end)),
        ("finditer", lambda p: list(p.finditer(text))),
        ("finditer pos", lambda p: list(p.finditer(text, pos=1))),
        ("split", lambda p: p.split(text)),
        ("split maxsplit", lambda p: p.split(text, maxsplit=1)),
    ]


@pytest.mark.parametrize(("pattern", "flags", "text"), CASES)
def test_a_lazy_pattern_answers_as_the_compiled_one(pattern: str, flags: int, text: str) -> None:
    """Each method, the first call (through the wrapper) and later ones (the compiled
    pattern's own methods) alike."""
    compiled = re.compile(pattern, flags)
    for name, call in _calls(text):
        lazy = LazyPattern(pattern, flags)
        first = _shape(call(lazy))
        assert first == _shape(call(compiled)), name
        assert _shape(call(lazy)) == first, name
    lazy = LazyPattern(pattern, flags)
    for name, call in _calls(text):  # one object, every method in turn
        assert _shape(call(lazy)) == _shape(call(compiled)), name
    assert lazy.compiled.flags == compiled.flags and lazy.compiled.groups == compiled.groups


@pytest.mark.parametrize("method", ["search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"])
def test_a_lazy_pattern_compiles_once_at_its_first_use(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    compiles: list[tuple[str, int]] = []
    real = re.compile

    def spy(pattern: str, flags: int = 0) -> re.Pattern[str]:
        compiles.append((pattern, flags))
        return real(pattern, flags)

    monkeypatch.setattr(lazyre.re, "compile", spy)
    lazy = LazyPattern("[部署]+", re.IGNORECASE)
    assert (lazy.pattern, lazy.flags) == ("[部署]+", re.IGNORECASE)  # read without compiling
    assert repr(lazy) == "LazyPattern('[部署]+', re.IGNORECASE)" and not lazy.is_compiled and compiles == []
    call: Callable[[str], object] = {
        "sub": lambda s: lazy.sub("x", s), "subn": lambda s: lazy.subn("x", s),
        "finditer": lambda s: list(lazy.finditer(s)),
    }.get(method, getattr(lazy, method))  # fmt: skip
    call("先部署")
    assert lazy.is_compiled and compiles == [("[部署]+", re.IGNORECASE)]
    for other in ("search", "match", "fullmatch", "findall", "split"):
        getattr(lazy, other)("部署 again")
    lazy.sub(lambda m: "", "部署")
    assert compiles == [("[部署]+", re.IGNORECASE)]
    assert lazy.search.__self__ is lazy.compiled  # type: ignore[attr-defined]  # later calls: re's own method


def test_importing_the_hook_and_index_modules_compiles_and_derives_nothing() -> None:
    """In a fresh process of this checkout: the costly patterns are lazy and not compiled,
    and the built-in expansion map has its digest and no tables, after the imports a hook
    or a read command makes (and the secret scanner's name and value rules too)."""
    checkout = Path(openmemex.__file__).resolve().parent.parent
    code = (
        "import json, openmemex.index, openmemex.inject, openmemex.hooks, openmemex.freshness\n"
        "import openmemex.redact.names, openmemex.redact.allow\n"
        "from openmemex import text, index_schema, expansions\n"
        "from openmemex.lazyre import LazyPattern\n"
        "from openmemex.redact import names, allow\n"
        "lazy = {'CJK_RUN': text.CJK_RUN, '_CJK_SCRIPT': text._CJK_SCRIPT,\n"
        "        '_CJK_WORDS': index_schema._CJK_WORDS, '_BESIDE_CJK': index_schema._BESIDE_CJK,\n"
        "        'names._SPLIT': names._SPLIT, 'allow._PLACEHOLDER': allow._PLACEHOLDER,\n"
        "        'allow._NOT_SECRET': allow._NOT_SECRET}\n"
        "ex = expansions.current()\n"
        "print(json.dumps({'lazy': {k: isinstance(p, LazyPattern) for k, p in lazy.items()},\n"
        "                  'compiled': {k: p.is_compiled for k, p in lazy.items() if isinstance(p, LazyPattern)},\n"
        "                  'builtin': ex is expansions.BUILTIN, 'digest': ex.digest, 'built': ex._built,\n"
        "                  'reach': len(ex._reach), 'words': len(ex._words)}))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(checkout), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert all(found["lazy"].values()), found["lazy"]
    assert not any(found["compiled"].values()), found["compiled"]
    assert found["builtin"] and found["digest"] == expansions.BUILTIN.digest
    assert (found["built"], found["reach"], found["words"]) == (False, 0, 0)


# (text, {a member of the group: the members the text uses}) in English and Chinese
TEXTS = [
    ("We shipped the release after the rollback; rate limiting kicked in",
     {"deploy": ["ship", "release"], "rollback": ["rollback"], "rate limit": ["rate limit", "rate limiting"]}),
    ("部署之前先备份数据库，然后回滚", {"deploy": ["部署"], "rollback": ["回滚"], "db": ["数据库"], "backup": ["备份"]}),
    ("Taking a day off: PTO for the on-call", {"pto": ["day off", "pto"]}),
    ("用redis做缓存, then deploy to prod 上线", {"cache": ["缓存"], "deploy": ["deploy", "上线"], "production": ["prod"]}),
    ("hello world", {}),
]  # fmt: skip
USER = ("pto", "vacation", "day off")


def _group(member: str) -> int:
    return next(gi for gi, group in enumerate((*GROUPS, USER)) if member in group)


def _answers(ex: Expander, text: str) -> tuple[object, ...]:
    asked = ex.matched_members("ship it to production, 上线")
    column = " ".join(ex.tokens(text))
    return (ex.matched_groups(text), ex.matched_groups(text, has_cjk=False), list(ex.matched_members(text).items()),
            ex.tokens(text), ex.stored(text), ex.reached(asked, column, text))  # fmt: skip


@pytest.mark.parametrize("first", ["matched_groups", "matched_members", "tokens", "stored", "reached"])
def test_an_expander_derives_its_tables_at_the_first_method_that_needs_them(first: str) -> None:
    lazy = Expander((*GROUPS, USER))
    eager = Expander((*GROUPS, USER))
    eager._ensure()
    assert lazy.digest == eager.digest and len(lazy.digest) == 16 and not lazy._built
    assert lazy == eager and repr(lazy) == repr(eager)  # the tables are not part of either
    if first == "reached":
        lazy.reached({_group("deploy"): ["ship"]}, token(GROUPS[_group("deploy")]), "deploy notes")
    else:
        getattr(lazy, first)("部署 the release")
    assert lazy._built and lazy.digest == eager.digest
    for text, members in TEXTS:
        assert _answers(lazy, text) == _answers(eager, text), text
        found = lazy.matched_members(text)
        assert found == {_group(m): used for m, used in members.items()}, text
        assert lazy.tokens(text) == [token((*GROUPS, USER)[gi]) for gi in found], text
    asked = lazy.matched_members("ship to production")
    assert lazy.reached(asked, " ".join(lazy.tokens("deploy to prod")), "deploy to prod") == ["ship", "production"]
    assert lazy.reached(lazy.matched_members("上线 检查"), " ".join(lazy.tokens("deploy")), "deploy") == ["上线"]


def test_a_word_lookup_derives_the_tables_too() -> None:
    """``_lookup`` (and the ``_reach`` set read with it) on a fresh map."""
    ex = Expander(GROUPS)
    _, groups, phrases = ex._lookup("shipping")
    assert groups == (_group("ship"),) and phrases == () and "shipping" in ex._reach


def test_a_map_whose_digest_the_index_has_attaches_without_its_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """``attach`` compares digests: a process whose index was written with the map in force
    (every hook, ``list``, ``show``) never derives the tables."""
    monkeypatch.setattr(expansions, "_current", expansions.BUILTIN)  # put back afterwards
    monkeypatch.setattr(expansions, "_cache", {})
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE index_info (key TEXT PRIMARY KEY, value TEXT)")
        ex = expansions.for_config([["standup", "daily sync"]])
        conn.execute("INSERT INTO index_info VALUES ('expansions', ?)", (ex.digest,))
        assert not ex._built and ex.digest != expansions.BUILTIN.digest
        assert expansions.attach(conn, ex) == 0 and expansions.current() is ex and not ex._built
        assert expansions.for_config([["standup", "daily sync"]]) is ex
    finally:
        conn.close()
