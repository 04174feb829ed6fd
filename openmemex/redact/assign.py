"""The generic rules: credentials given to a name, in any syntax a note or a config uses.

``DB_PASSWORD=hunter2`` (.env, shell ``export``), ``password: hunter2`` (YAML),
``"password": "S3cr3t!Pa55w0rd#2024"`` (JSON), ``password = "…"`` (TOML, INI, code),
``password = blueberry`` under an INI ``[section]``,
``password := "…"`` (Go), ``'password' => '…'`` (PHP), ``password: str = "…"`` (typed),
``--password hunter2`` (CLI), ``<password>…</password>`` (XML), ``| password | hunter2 |``
and password *columns* of Markdown tables, ``?token=…`` (URL queries),
``machine … password …`` (netrc) and prose ("the token for staging is …", "pw is …",
"密码是 …").

Parsing starts where the prefilter saw a credential word: the name around it, then the
operator and the value right after it — never a scan of whole lines. Each pair is judged
by the name (``names.strength``) and by the value's shape (``allow``); a provider
``ContextRule`` that recognises the pair names the finding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openmemex.redact import allow, names
from openmemex.redact.findings import GENERIC_TIER, SPECIFIC, Candidate
from openmemex.redact.names import Strength

GENERIC = "generic-secret-assignment"
PROSE = "generic-secret-prose"
QUERY = "url-query-secret"
NETRC = "netrc-password"
TABLE = "markdown-table-secret"
ENTROPY_RULE_PREFIX = "high-entropy-secret:"
"""Weak-name findings are reported as this prefix followed by the assignment's name."""

# An unquoted value stops at blanks, quotes and separators; ``&`` only where a new query
# parameter starts (``Tr0ub4dor&3horse`` keeps its ``&``).
_UNQUOTED = r"""(?P<uq>(?:->|[^\s"'`,;<>|&。，；：！？、（）]|&(?![A-Za-z_][\w.-]*=)){1,2000})"""
_QUOTED = r"""(?:"(?P<dq>(?:[^"\\\n]|\\.){1,2000})"|'(?P<sq>[^'\n]{1,2000})'|`(?P<bq>[^`\n]{1,2000})`)"""
# After the name: closing quote/bracket/emphasis, an operator, the value.
_OP_VALUE = re.compile(
    r"""(?P<close>["'`*\])]{0,3})[ \t]*
    (?P<op>:[ \t]*[A-Za-z_][\w.\[\], |]{0,40}?[ \t]+=(?![=>~])|::?=|=>|\?=|=(?![=>~])|:(?![:/=])|：|\|)
    [ \t]*(?:""" + _QUOTED + "|" + _UNQUOTED + ")",
    re.VERBOSE,
)
_FLAG_VALUE = re.compile(r"[ \t]+(?:" + _QUOTED + "|" + _UNQUOTED + ")")
# Prose after the credential word: "for the staging db", then "is", "was", ":" …
_PROSE_TAIL = re.compile(
    r"""(?ix)(?:[ \t]+(?:for|of|on|to|in|at|from)(?:[ \t]+(?!(?:is|was|are|has|have|got|became|now)[ \t])[\w.@/-]{1,40}){1,3})?
    (?:[ \t]*(?::|=|：|是|为|->|=>)[ \t]*
      |[ \t]+(?:(?:is|was|are|has[ \t]+been|have[ \t]+been|got)(?:[ \t]+now)?(?:[ \t]+(?:set|changed|reset|updated|rotated)[ \t]+to)?
        |(?:set|changed|reset|updated|rotated)[ \t]+to|became|now[ \t]+is)[ \t]+)
    (?P<open>[`"'*]+[ \t]*)?(?P<uq>[^\s`"'，。]{1,2000})"""
)
_XML_VALUE = re.compile(r">(?P<uq>[^<\n]{1,300})</")
_NUGET_VALUE = re.compile(r"""(?i)"[ \t]+value="(?P<dq>[^"\n]{1,300})\"""")
_NETRC = re.compile(r"[ \t]passw(?:or)?d(?=[ \t])")
_NETRC_VALUE = re.compile(r"[ \t]+(?P<uq>[^\s\"'`]{1,300})")
_TABLE_SEPARATOR = re.compile(r"[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*\r?")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-$")
_NAME_TAIL = re.compile(r"(?:[A-Za-z0-9_.-]|密码|口令|密钥|令牌)*")
_PREV_WORD = re.compile(r"([a-z]{2,12})[ \t]+$")
# A name followed by one of these is used, not assigned: token.value, get_token(, token)
_NOT_ASSIGNED = frozenset("(.,);[{}+/\\!?#&%^~$\n")
_TRAILING = ".,;:…。，；："
_CONTEXT_SPAN = 60
# A CSS selector's pseudo-classes and elements, up to the rule's opening brace: in
# ``.special-token:empty::before{`` the colon starts ``:empty``, it does not assign a value
_SELECTOR_TAIL = re.compile(r"(?::{1,2}[a-z][a-z-]*(?:\([^()\n]*\))?)+[ \t]*(?:[,>+~][^{};\n]*)?\{")
_IDENT_VALUE = re.compile(r"[A-Za-z_$][\w$]*")
# How a value was given, for ``_states_value``: by a syntax that always states it (a URL
# query, netrc, XML), by an operator, by a command-line flag, or in prose and tables.
_ALWAYS, _OPERATOR, _FLAG, _NEVER_STATED = "always", "operator", "flag", "never"
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
_LINE_END = re.compile(r"[ \t]*(?:#.*)?(?:\r|\n|$)")
# A config file's line (``_config_line``): its start, its end (INI comments start with ; too),
# a section header, a row of settings or comments, a YAML key with its column and its value
_YAML_LEAD = re.compile(r"[ \t]*(?:- )?")
_CONFIG_END = re.compile(r"[ \t]*(?:[#;].*)?(?:\r|\n|$)")
_INI_SECTION = re.compile(r"[ \t]*\[[^\[\]\n]{1,80}\][ \t]*")
_INI_ROW = re.compile(r"[ \t]*(?:[#;].*|[\w.$-][\w.$ -]{0,79}[ \t]*[=:].*)?")
_YAML_KEY = re.compile(r"(?P<lead>[ \t]*(?:- )?)[A-Za-z_][\w.-]*:(?:[ \t]+(?P<value>.*))?")
_AFTER_TIGHT = re.compile(r"""[ \t;&"'`]|\r|\n|$""")
# After a flag's value on a command line: its end, a continuation, a pipe or separator, a
# closing quote — or another option, itself followed by a value, ``=`` or the end
_AFTER_FLAG = re.compile(r"""[ \t]*(?:\r|\n|$|\\|[|;&<>"'`)]|--?[A-Za-z][\w-]*(?:[ \t=]|\r|\n|$))""")
# Where the command a flag belongs to starts: the line, or a quote or backtick around it
_COMMAND_START = re.compile(r"""[`"'(]|\$\(|\r|\n""")
_BARE_WORD = re.compile(r"(?<![\w./:@=-])[A-Za-z]+(?![\w./:@=-])")


@dataclass(frozen=True)
class ContextCheck:
    """A compiled ``rules.ContextRule``."""

    id: str
    names: tuple[str, ...]
    also: tuple[str, ...]
    value: re.Pattern[str]
    entropy: float


def _value(m: re.Match[str]) -> tuple[str, int, int, bool] | None:
    """The value group that matched, its span, and whether it was quoted."""
    groups = m.re.groupindex
    for group, quoted in (("uq", False), ("dq", True), ("sq", True), ("bq", True)):
        if group not in groups:
            continue
        start = m.start(group)
        if start < 0:
            continue
        value = m.group(group)
        if quoted:
            stripped = value.strip()
            start += len(value) - len(value.lstrip())
            while stripped.endswith(("\\n", "\\r", "\\t")):  # an escaped line break in a string
                stripped = stripped[:-2].rstrip()
        else:
            stripped = _code_end(value).rstrip(_TRAILING)
            while stripped.endswith(("\\n", "\\r", "\\t")):  # an escaped line break in a string
                stripped = stripped[:-2].rstrip(_TRAILING)
            if "open" in groups and "*" in (m.group("open") or ""):
                stripped = stripped.rstrip("*").rstrip(_TRAILING)  # **bold**
            for close, open_ in ((")", "("), ("]", "["), ("}", "{")):
                while stripped.endswith(close) and stripped.count(close) > stripped.count(open_):
                    stripped = stripped[:-1].rstrip(_TRAILING)
        return (stripped, start, start + len(stripped), quoted) if stripped else None
    return None


_ANNOTATION_END = re.compile(r"[ \t]*(?:[|=,)\]]|$)", re.MULTILINE)
_PARAMETER_END = re.compile(r"[ \t]*[=,)]")
_CONCATENATION = re.compile(r"""["'`][ \t]*(?:\+|%[ \t(]|\.format\(|\.join\()""")


def _in_code(text: str, m: re.Match[str], name: str, value: str, vend: int, quoted: bool) -> bool:
    """The pair is code, not a setting: a type annotation (``key: PKCS12PrivateKeyTypes | None``)
    or a string fragment glued to a variable (``" --username=" + auth``). Inside a parameter
    list (``(name: AnyStr, pat: AnyStr)``) a type may be spelt with abbreviations; at the end
    of a line (YAML's ``password: …``) it may not, so random letters there stay secrets."""
    if quoted:
        # " --username=" + auth, ' + access_key + ': a piece of a string being built
        return _CONCATENATION.match(text, vend) is not None or value.startswith("+ ") or value.endswith(" +")
    op = m.group("op") if "op" in m.re.groupindex else None
    if op != ":" or _ANNOTATION_END.match(text, vend) is None:
        return False
    start = m.start() - len(name)
    listed = text[max(0, start - 8) : start].rstrip(" \t")[-1:] in ("(", ",") and _PARAMETER_END.match(text, vend) is not None
    return allow.type_name(value, abbreviations=listed)


def _code_end(value: str) -> str:
    """An unquoted value ends at a bracket that closes something opened before it, when code
    follows (``whoami(token=token)["name"]``); random keys keep theirs (``…-)ib1%(t…``)."""
    depth = 0
    for i, ch in enumerate(value):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0 and (i + 1 == len(value) or value[i + 1] in "[.(,;)]}"):
                return value[:i]
    return value


class Parser:
    """Finds named credentials around keyword hits; one instance per compiled rule set."""

    def __init__(self, context_rules: tuple[ContextCheck, ...]) -> None:
        self.context_rules = context_rules
        words = sorted({w for rule in context_rules for w in rule.names}, key=len, reverse=True)
        self._context_words = re.compile("|".join(map(re.escape, words)))
        self._rules_by_word: dict[str, tuple[int, ...]] = {
            w: tuple(i for i, r in enumerate(context_rules) if w in r.names) for w in words
        }

    def at(self, text: str, low: str, pos: int, out: list[Candidate]) -> None:
        """Judge the name around the credential word at ``pos`` and what is given to it."""
        tail = _NAME_TAIL.match(text, pos)
        end = tail.end() if tail else pos
        if end >= len(text) or text[end] in _NOT_ASSIGNED:
            return  # used, not assigned: token.value, get_token(, (token)
        after = text[end]
        start = pos
        floor = pos - 80 if pos > 80 else 0
        while start > floor and text[start - 1] in _NAME_CHARS:
            start -= 1
        if start < end and text[start] in "-.":
            if text.startswith("--", start) and after in " \t":
                m = _FLAG_VALUE.match(text, end)
                if m is not None:
                    self._judge(text, low, m, text[start + 2 : end], out, GENERIC, stated=_FLAG)
                return
            start += len(text[start:end]) - len(text[start:end].lstrip("-."))
        name = text[start:end]
        if names.strength(name) is Strength.NONE or text.endswith(("://", "::"), 0, start):
            return  # not a credential name; the user of scheme://user:password@host; a type (AWS::IAM::AccessKey)
        before = text[start - 1] if start else "\n"
        if before == ":" and after == ":":
            return  # a segment of a colon path: arn:aws:secretsmanager:…:secret:name
        if after == ":" and _SELECTOR_TAIL.match(text, end) is not None:
            return  # a CSS selector: .special-token:empty::before{, a.api-key:hover {
        if before == "<" and after == ">":
            m = _XML_VALUE.match(text, end)
        elif before == '"' and low.endswith("key=", 0, start - 1) and after == '"':
            m = _NUGET_VALUE.match(text, end)
        else:
            m = _OP_VALUE.match(text, end)
        if m is not None and "close" in m.re.groupindex and "]" in m.group("close") and m.group("close")[0] not in "\"'`":
            return  # row[x - pw] = …: the name is an index, not a key
        if m is not None:
            rule = GENERIC
            if m.re is _OP_VALUE and m.group("op") == "|":
                if not _table_row(text, start):
                    return  # a pipe in code or a regex, not a Markdown table row
                rule = TABLE
            query = before in "?&"
            stated = _ALWAYS if query or m.re is not _OP_VALUE else _OPERATOR if rule == GENERIC else _NEVER_STATED
            self._judge(text, low, m, name, out, rule, query=query, stated=stated)
            return
        m = _PROSE_TAIL.match(text, end)
        if m is not None:
            prev = _PREV_WORD.search(low, max(0, start - 16), start)
            if prev is not None:  # "secret key is …", "bot token is …": the phrase names it
                name = prev.group(1) + "_" + name
            self._judge(text, low, m, name, out, PROSE)
            return
        if before in "| \t" and after in "| \t":
            self._table_column(text, low, start, end, name, out)

    def netrc(self, text: str, low: str, pos: int, out: list[Candidate]) -> None:
        """A netrc line starting at ``pos`` (``machine HOST login USER password PASS``)."""
        end = low.find("\n", pos)
        m = _NETRC.search(low, pos, len(low) if end < 0 else end)
        if m is not None:
            value = _NETRC_VALUE.match(text, m.end())
            if value is not None:
                # a netrc line states the password; "machine" in a sentence or a comment
                # ("a:machine a:id password filename") may not
                line = max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1
                stated = _ALWAYS if not text[line:pos].strip() else _NEVER_STATED
                self._judge(text, low, value, "password", out, NETRC, stated=stated)

    def _table_column(self, text: str, low: str, start: int, end: int, name: str, out: list[Candidate]) -> None:
        """A Markdown table whose header names a credential column: the cells under it."""
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        if line_end < 0 or not _table_row(text, start):
            return
        column = text.count("|", line_start, start)
        sep_end = text.find("\n", line_end + 1)
        if sep_end < 0 or not _TABLE_SEPARATOR.fullmatch(text, line_end + 1, sep_end):
            return
        row = sep_end + 1
        while row < len(text):
            row_end = text.find("\n", row)
            row_end = len(text) if row_end < 0 else row_end
            if not text[row:row_end].lstrip().startswith("|"):
                break
            cell = _cell(text, row, row_end, column)
            if cell is not None:
                a, b = cell
                value = text[a:b]
                power = names.strength(name)
                ok = allow.plausible_password(value, quoted=False) if power is Strength.STRONG \
                    else power is Strength.WEAK and allow.plausible_key(value, hex_ok=names.key_material(name))  # fmt: skip
                if ok:
                    out.append((a, b, GENERIC_TIER, TABLE))
            row = row_end + 1

    def _judge(self, text: str, low: str, m: re.Match[str], name: str, out: list[Candidate], rule: str, *,
               query: bool = False, stated: str = _NEVER_STATED) -> None:  # fmt: skip
        found = _value(m)
        if found is None:
            return
        value, vstart, vend, quoted = found
        code = quoted and m.re.groupindex.get("bq") is not None and m.start("bq") >= 0  # `code` in Markdown
        # words someone chose, where the syntax states the value — not a word that spells the
        # name again ('pass': 'bandpass', a filter's kind)
        chosen = names.chosen_by_people(name)
        words = allow.NOT_STATED
        if chosen is not None and names.words(name)[-1] not in value.lower():
            words = _states_value(text, m, name, (vstart, vend), quoted, stated, secret=chosen == "secret")
        if _in_code(text, m, name, value, vend, quoted):
            return
        if query:
            cut = value.find("&")
            if cut >= 0:
                vend = vstart + cut
                value = value[:cut]
        power = names.strength(name)
        if power is Strength.NONE or _echoes(name, value):
            return
        floor = vstart - _CONTEXT_SPAN if vstart > _CONTEXT_SPAN else 0
        # "Datadog API key", "DD_API_KEY", "dd-api-key": one spelling for the provider names
        phrase = names.CAMEL.sub("_", text[floor:vstart]).lower().replace(" ", "_").replace("-", "_")
        hit = {i for m in self._context_words.finditer(phrase) for i in self._rules_by_word[m.group()]}
        for check in (self.context_rules[i] for i in sorted(hit)):
            if (not check.also or any(a in phrase for a in check.also)) and check.value.fullmatch(value) \
                    and allow.entropy(value) >= check.entropy and not allow.is_placeholder(value) \
                    and not allow.is_public_shape(value, uuid_ok=True):  # fmt: skip
                out.append((vstart, vend, SPECIFIC, check.id))
                return
        if query:
            ok = allow.plausible_password(value, quoted=quoted, data=True, words=words) if power is Strength.STRONG else \
                allow.plausible_key(value, hex_ok=True, min_length=12, min_entropy=3.0)  # fmt: skip
            if ok:
                out.append((vstart, vend, GENERIC_TIER, QUERY))
            return
        if power is Strength.STRONG:
            if allow.plausible_password(value, quoted=quoted and not code, uuid_ok=True, words=words):
                out.append((vstart, vend, GENERIC_TIER, rule))
            return
        if allow.plausible_key(value, hex_ok=names.key_material(name)):
            label = rule if rule in (PROSE, TABLE) else ENTROPY_RULE_PREFIX + names.short_name(name)
            out.append((vstart, vend, GENERIC_TIER, label))


def _states_value(text: str, m: re.Match[str], name: str, span: tuple[int, int], quoted: bool, how: str, *,
                  secret: bool) -> str:  # fmt: skip
    """How far the syntax says the value *is* the credential, so that words in it are a
    password someone chose (``DB_PASSWORD=blueberry``), not prose — ``allow.NOT_STATED``,
    ``STATED``, ``ENV_STATED`` or ``IN_BLOCK`` (``allow.word_password`` reads them):

    * stated: a URL query value, netrc and XML always; a quoted value given by any operator
      (``password: "correct horse battery staple"``); ``NAME=value`` with an environment
      variable's name and no blanks (.env, shell, compose) or with any name when the value
      ends there (``Password=…;`` in a connection string, ``password=…`` at the end of a
      line — in code a keyword argument is followed by ``,`` or ``)`` and names a
      variable); ``NAME: value`` with an environment variable's name and nothing else on
      the line (compose's ``environment:``); ``--password value`` where the command line
      goes on with an option, a pipe or ends;
    * env-stated, where a Capitalised word counts too: an environment variable's
      ``NAME=Value``, quoted or with the value ending at a blank, a quote or the line's end
      (``DB_PASSWORD=Blueberry``, ``export DB_PASSWORD="Blueberry"``; not
      ``f(DB_PASSWORD=Answer)``);
    * in a block: a line of a config file that holds only ``name = value`` or ``name:
      value`` (``_config_line``): INI's ``password = blueberry`` under a ``[section]``,
      YAML's unquoted ``password: blueberry`` among sibling keys. A status list reads the
      same (``password: rotated``), so ``word_password`` asks more of the words there.

    Prose ("the token: required for …"), a lone ``password: …`` line, ``name = value``
    in code (``password = answer``) and tables keep words as prose. A ``secret`` names a
    stored secret as often as it holds one (``secret: "tls-certs"``, ``--secret
    app-config``): there only an environment variable or a quoted phrase (``secret:
    'keyboard cat'``; names have no blanks) count."""
    vstart, vend = span
    if how == _ALWAYS:
        return allow.STATED
    if how == _FLAG:
        flag = not secret and (quoted or (_AFTER_FLAG.match(text, vend) is not None and _command_before(text, m.start())))
        return allow.STATED if flag else allow.NOT_STATED
    if how != _OPERATOR:
        return allow.NOT_STATED
    op = m.group("op")
    env = _ENV_NAME.fullmatch(name.lstrip("$")) is not None
    tight = m.start("op") == m.start() and text[m.end("op") : vstart].strip("\"'") == ""
    if quoted:
        if op == "=" and env and tight and not secret:
            return allow.ENV_STATED  # export DB_PASSWORD="Blueberry"
        return allow.STATED if op != "|" and (not secret or " " in text[vstart:vend]) else allow.NOT_STATED
    if op in ("=", "?=", ":=") and tight:
        ends = _AFTER_TIGHT.match(text, vend) is not None
        if env:
            return allow.ENV_STATED if ends and not secret and op == "=" else allow.STATED
        if not secret and ends:
            return allow.STATED
    # NAME: value with nothing after it — but NAME: Incomplete is a constant's type (.pyi)
    if op == ":" and env and not text[vstart].isupper() and _LINE_END.match(text, vend) is not None:
        return allow.STATED
    if not secret and op in ("=", ":") and _config_line(text, m.start() - len(name), m, span):
        return allow.IN_BLOCK
    return allow.NOT_STATED


def _config_line(text: str, start: int, m: re.Match[str], span: tuple[int, int]) -> bool:
    """The name at ``start`` opens a line of a config file and its value closes it: INI's
    ``password = blueberry`` with only settings, comments and blank lines between it and a
    ``[section]`` header above (code has statements between), or YAML's ``password:
    blueberry`` beside a sibling key (a key at the same column, or the parent key just
    above) — a JavaScript object's keys end in commas, a Python class body's in types. A
    value that other lines nearby give too is the file's vocabulary, not a password
    (nsswitch.conf's ``passwd: files`` beside ``group: files``)."""
    vstart, vend = span
    line = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
    lead = text[line:start]
    if _YAML_LEAD.fullmatch(lead) is None or _repeated(text, line, text[vstart:vend]):
        return False
    if not lead.endswith("- ") and _CONFIG_END.match(text, vend) is not None and _ini_section_above(text, line):
        return True  # INI (configparser takes both = and :; comments start with ; or #)
    tight = m.group("op") == ":" and m.start("op") == m.start()
    return tight and _LINE_END.match(text, vend) is not None and _yaml_sibling(text, line, len(lead))


def _repeated(text: str, line: int, value: str) -> bool:
    """Another line of the ten above or below the one at ``line`` gives ``value`` too."""
    lo = line
    for _ in range(10):
        lo = text.rfind("\n", 0, lo - 1) + 1 if lo > 0 else 0
    hi = line
    for _ in range(11):
        hi = text.find("\n", hi + 1)
        if hi < 0:
            hi = len(text)
            break
    end = text.find("\n", line)
    own = range(line, len(text) if end < 0 else end)
    pattern = re.compile(r"[=:][ \t]*" + re.escape(value) + r"[ \t]*\r?$", re.MULTILINE)
    return any(hit.start() not in own for hit in pattern.finditer(text, lo, hi))


def _ini_section_above(text: str, line: int) -> bool:
    """Back from ``line``: settings, comments and blank lines, then a ``[section]`` header."""
    for _ in range(200):
        if line == 0:
            return False
        end = line - 1
        line = text.rfind("\n", 0, end) + 1
        row = text[line:end].rstrip("\r")
        if _INI_SECTION.fullmatch(row) is not None:
            return True
        if _INI_ROW.fullmatch(row) is None:
            return False
    return False


def _yaml_sibling(text: str, line: int, column: int) -> bool:
    """The line before or after the one at ``line`` is a YAML key at the same ``column``, or
    the one before is the parent key (``database:``, less indented, nothing after it)."""
    end = text.find("\n", line)
    after = text[end + 1 : text.find("\n", end + 1) if text.find("\n", end + 1) >= 0 else len(text)] if end >= 0 else ""
    before = text[text.rfind("\n", 0, line - 1) + 1 : line - 1] if line > 0 else ""
    for row, above in ((before, True), (after, False)):
        key = _YAML_KEY.fullmatch(row.rstrip("\r"))
        if key is None:
            continue
        col = len(key.group("lead"))
        if col == column and not (key.group("value") or "").rstrip().endswith((",", ";", "{", "(", "[", "\\")):
            return True
        if above and col < column and not key.group("value"):
            return True
    return False


def _command_before(text: str, flag: int) -> bool:
    """The words before a flag, back to where its command starts, are a command's (``mysql
    --user root``, ``docker login -u bob``), not a sentence's: no function word ("provided
    via the --username and --password options")."""
    line = max(text.rfind("\n", 0, flag), text.rfind("\r", 0, flag)) + 1
    starts = [m.end() for m in _COMMAND_START.finditer(text, line, flag)]
    segment = text[starts[-1] if starts else line : flag]
    return not any(w.lower() in allow.FUNCTION_WORDS for w in _BARE_WORD.findall(segment))


def _echoes(name: str, value: str) -> bool:
    """The value is an identifier that spells the name again — in another case, with words
    around it (``PKCS8_PRIV_KEY_INFO = pkcs8_priv_key_info_st``, ``apiKey: API_KEY``): a
    symbol named after the key, not a secret. Added words must be letters only; a number
    (``password = Password2024``) is what a person adds to a password."""
    if _IDENT_VALUE.fullmatch(value) is None:
        return False
    key, spelled = names.words(name.rsplit(".", 1)[-1]), names.words(value)
    for i in range(len(spelled) - len(key) + 1):
        if key and spelled[i : i + len(key)] == key:
            return all(w.isalpha() for w in spelled[:i] + spelled[i + len(key) :])
    return False


def _table_row(text: str, pos: int) -> bool:
    """The line around ``pos`` is a Markdown table row: it starts and ends with ``|``."""
    line_end = text.find("\n", pos)
    line = text[text.rfind("\n", 0, pos) + 1 : len(text) if line_end < 0 else line_end].strip()
    return len(line) > 2 and line[0] == "|" and line[-1] == "|"


def _cell(text: str, row: int, row_end: int, column: int) -> tuple[int, int] | None:
    """The stripped span of cell ``column`` (counted in ``|`` before it) of a table row."""
    pos = row
    for _ in range(column):
        pos = text.find("|", pos, row_end)
        if pos < 0:
            return None
        pos += 1
    stop = text.find("|", pos, row_end)
    if stop < 0:
        return None
    while pos < stop and text[pos] in " \t`":
        pos += 1
    while stop > pos and text[stop - 1] in " \t`":
        stop -= 1
    return (pos, stop) if stop > pos else None
