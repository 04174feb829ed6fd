"""Secret detection and in-place masking for every memory write (D14).

D14: a write that contains a secret is not refused. The secret is masked in place (first 4
characters kept, the rest ``x``, same length) and ``<private>…</private>`` becomes
``[REDACTED]``, so the stored Markdown never holds the raw value while the note stays
readable.

The pipeline, in the order gitleaks uses: the keyword prefilter (``prefilter``) finds the
places worth a look in a few cheap passes; provider rules run only there; the generic
parser runs only where a credential word is given a value; then allowlists (the user's
``redactAllowlist`` and the inline ``open-memex:allow`` marker); then overlaps are
resolved (provider rules first, the user's patterns next, generic rules last). Everything is
compiled on first use, so importing this module stays cheap for the CLI and hooks.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from functools import cache
from itertools import pairwise

from openmemex.redact import (
    allow,
    assign,
    keys,
    prefilter,
    rules_apps,
    rules_cloud,
    rules_context,
    rules_dev,
    urls,
)
from openmemex.redact.assign import ContextCheck, Parser
from openmemex.redact.findings import GENERIC_TIER, SPECIFIC, USER, Candidate, Finding, RedactResult
from openmemex.redact.masking import apply_masks, is_masked
from openmemex.redact.rules import TokenRule
from openmemex.redact.user import ALLOW_MARKER, USER_TIMEOUT_S, UserRules, compile_user, timed_out

PRIVATE_REPLACEMENT = "[REDACTED]"
# A closed pair, or an unclosed opening tag that swallows the rest of the text.
_PRIVATE = re.compile(r"<private\s*>(?:.*?</private\s*>|.*)", re.IGNORECASE | re.DOTALL)

TOKEN_RULES: tuple[TokenRule, ...] = rules_cloud.RULES + rules_dev.RULES + rules_apps.RULES + keys.RULES
CONTEXT_RULES = rules_context.RULES

# Credential words: where one is given a value (``DB_PASSWORD=…``, "the token is …"), the
# generic parser reads the name and the value around it. EN and ZH, as keyword capture.
ASSIGN_KEYWORDS = ("pass", "pw", "secret", "token", "key", "auth", "cred", "salt", "signature", "pat",
                   "contrase", "密码", "口令", "密钥", "令牌")  # fmt: skip
_WINDOW_BACK = 240  # a long line is read around the keyword: names and prose phrases before it
_WINDOW_AHEAD = 2400  # … and the value after it (values are capped at 2,000 characters)
_TOKEN_AHEAD = 600


@cache
def _compiled() -> tuple[prefilter.KeywordIndex, Parser]:
    """Compile every rule once, on first use."""
    parser = Parser(tuple(ContextCheck(r.id, r.names, r.also, re.compile(r.value), r.entropy) for r in CONTEXT_RULES))
    entries: list[tuple[str, str, prefilter.Trigger]] = []
    for rule in TOKEN_RULES:
        trigger = prefilter.TokenTrigger(rule)
        entries += [(w, prefilter.group_of(w, rule.boundary), trigger) for w in rule.keywords]
    for word, handler in keys.BLOCK_KEYWORDS.items():
        entries.append((word, prefilter.group_of(word, False), prefilter.AtTrigger(handler)))
    at, netrc = prefilter.AtTrigger(parser.at), prefilter.AtTrigger(parser.netrc)
    header, curl = prefilter.LineTrigger(urls.header_window), prefilter.LineTrigger(urls.curl_window)
    entries += [(w, prefilter.CREDENTIAL, at) for w in (*ASSIGN_KEYWORDS, "--")]
    entries += [("machine", prefilter.CREDENTIAL, netrc), ("://", prefilter.CREDENTIAL, prefilter.LineTrigger(urls.url_window)),
                ("authorization", prefilter.CREDENTIAL, header), ("bearer", prefilter.CREDENTIAL, header),
                ("basic", prefilter.CREDENTIAL, header), ("curl", prefilter.CREDENTIAL, curl)]  # fmt: skip
    return prefilter.build(entries), parser


def rule_ids() -> tuple[str, ...]:
    """Every built-in rule id (weak-name findings use ``high-entropy-secret:<name>`` instead)."""
    generic = (keys.PEM, keys.PUTTY, urls.SENTRY, *_GENERIC_ORDER)
    return tuple(r.id for r in TOKEN_RULES) + tuple(r.id for r in CONTEXT_RULES) + generic


def _lower(text: str) -> str:
    """Lower-cased with offsets unchanged (only U+0130 grows when lower-cased)."""
    low = text.lower()
    if len(low) != len(text):
        low = text.replace("\u0130", "i").lower()
    return low


def _token(text: str, pos: int, trigger: prefilter.TokenTrigger, out: list[Candidate]) -> None:
    """A provider token at (or, for ``back`` > 0, around) the keyword at ``pos``."""
    rule = trigger.rule
    if rule.back == 0:
        m = trigger.regex.match(text, pos)
    else:
        m = trigger.regex.search(text, max(0, pos - rule.back), min(len(text), pos + _TOKEN_AHEAD))
        if m is not None and not m.start() <= pos < m.end():
            return  # another occurrence: its own keyword reports it
    if m is None:
        return
    value = m.group("s")
    if is_masked(value) or allow.entropy(value) < rule.entropy or (rule.check is not None and not rule.check(value)):
        return
    start, end = m.start("s"), m.end("s")
    if _glued(text, start, end) and not random_past_keyword(value, rule.keywords):
        return
    out.append((start, end, SPECIFIC, rule.id))


def _glued(text: str, start: int, end: int) -> bool:
    """Whether a name runs into the token (``CI_TOKEN_ghp_…``, ``ghp_…-old``)."""
    return (start > 0 and text[start - 1] in "_-") or (end < len(text) and text[end] in "_-")


def random_past_keyword(value: str, keywords: tuple[str, ...]) -> bool:
    """Whether a glued token looks random past its keyword — a digit, or (a format of
    letters only) three places where two capitals meet. Provider tokens are random (36
    random letters and digits lack a digit once in 600); names built of words are not
    (``deploy-glpat-token-expiry-job``, ``run_npm_installWithFrozenLockfile``)."""
    low = value.lower()
    body = value[max((len(k) for k in keywords if low.startswith(k)), default=4) :]
    if any(ch.isdigit() for ch in body):
        return True
    return sum(1 for a, b in pairwise(body) if a.isupper() and b.isupper()) >= 3



def _candidates(text: str, low: str) -> list[Candidate]:
    """Everything the built-in rules find, before allowlists and overlap resolution."""
    index, _ = _compiled()
    out: list[Candidate] = []
    size = len(text)
    seen: set[tuple[object, int]] = set()
    for at, fired in index.hits(low):
        for trigger in fired:
            if type(trigger) is prefilter.TokenTrigger:
                _token(text, at, trigger, out)
            elif type(trigger) is prefilter.AtTrigger:
                trigger.handler(text, low, at, out)
            elif type(trigger) is prefilter.LineTrigger:
                floor = at - _WINDOW_BACK if at > _WINDOW_BACK else 0
                nl = text.rfind("\n", floor, at)
                start = nl + 1 if nl >= 0 else floor
                key = (trigger.handler, start)
                if key in seen:
                    continue
                seen.add(key)
                end = text.find("\n", at, at + _WINDOW_AHEAD)
                if end < 0:
                    end = min(size, at + _WINDOW_AHEAD)
                trigger.handler(text, low, start, end, out)
    return out


def _user_candidates(text: str, patterns: Sequence[str], out: list[Candidate]) -> None:
    """The user's ``redactPatterns``, each under the time limit (``user.USER_TIMEOUT_S``):
    past it the command stops with one line naming the pattern. A pattern that is no regular
    expression is left out (config loading said so): it must never break a write."""
    for pattern in patterns:
        compiled = compile_user(pattern)
        if compiled is None:
            continue
        try:
            for m in compiled.finditer(text, timeout=USER_TIMEOUT_S):
                if m.end() > m.start() and not is_masked(m.group()):
                    out.append((m.start(), m.end(), USER, pattern))
        except TimeoutError:  # an OSError: never let a caller's `except OSError` take it for a file's fault
            raise timed_out("redactPatterns", pattern, len(text)) from None


# Generic rules on the same span: the one that knows most about it names the finding.
_GENERIC_ORDER = (urls.HEADER, urls.BASIC, urls.BEARER, urls.CURL, urls.URL, assign.QUERY, assign.GENERIC,
                  assign.TABLE, assign.NETRC, assign.PROSE)  # fmt: skip


@cache
def _order() -> dict[str, int]:
    ids = [rule.id for rule in TOKEN_RULES] + [rule.id for rule in CONTEXT_RULES] + list(_GENERIC_ORDER)
    return {rule: i for i, rule in enumerate(ids)}


def _priority(rule: str) -> int:
    """Equal spans: the rule listed first wins (``sk-ant-…`` is Anthropic's before it is an
    ``sk-…`` key)."""
    return _order().get(rule, len(_order()))


# Where a line ends, for the ``open-memex:allow`` marker and for findings' line numbers alike:
# LF, CR LF, a lone CR (old Mac files, a ``\r`` an editor shows as a break), NEL, and the
# Unicode line and paragraph separators. Narrowing the marker's reach is the safe side: a
# marker must never exempt a secret a reader sees on another line. (VT and FF are not breaks:
# a page break in GNU sources sits inside a line for git, grep and editors.)
_BREAK = re.compile("\r\n?|[\n\x85\u2028\u2029]")
_UNUSUAL_BREAKS = ("\x85", "\u2028", "\u2029")


def _plain_breaks(text: str) -> bool:
    """Whether every line of ``text`` ends in LF or CR LF, so counting LF counts lines."""
    return text.count("\r") == text.count("\r\n") and not any(ch in text for ch in _UNUSUAL_BREAKS)


def _line_starts(text: str) -> list[int]:
    """The offset where each line after the first starts (``_BREAK``)."""
    return [m.end() for m in _BREAK.finditer(text)]


def _allowed_lines(text: str, low: str) -> list[tuple[int, int]]:
    """The lines carrying the inline ``open-memex:allow`` marker: from the break before it to
    the break after it — a file whose lines end in CR alone is not one line to the marker."""
    spans = []
    plain = _plain_breaks(text)
    starts = None if plain else _line_starts(text)
    at = low.find(ALLOW_MARKER)
    while at >= 0:
        if starts is None:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end < 0 else end
        else:
            i = bisect_right(starts, at)
            start = starts[i - 1] if i else 0
            following = _BREAK.search(text, at)
            end = len(text) if following is None else following.start()
        spans.append((start, end))
        at = low.find(ALLOW_MARKER, at + 1)
    return spans


def _in_allowed(allowed: list[tuple[int, int]], at: int) -> bool:
    """Whether ``at`` lies on an ``open-memex:allow`` line (the spans are sorted, disjoint)."""
    i = bisect_right(allowed, (at, float("inf"))) - 1  # the last line starting at or before it
    return i >= 0 and allowed[i][0] <= at <= allowed[i][1]


def _select(text: str, low: str, candidates: list[Candidate], allowlist: Callable[[str], bool] | None) -> list[Finding]:
    """Drop allowlisted candidates, then keep non-overlapping ones by tier, start, length."""
    allowed = _allowed_lines(text, low) if ALLOW_MARKER in low else []
    chosen: list[tuple[int, int, str]] = []
    # the spans taken so far, sorted: they never overlap, so only the two around a new one
    # can (a scan of all of them made an env file of 20,000 secrets take half a minute)
    starts: list[int] = []
    ends: list[int] = []
    for tier in (SPECIFIC, USER, GENERIC_TIER):
        ranked = sorted({c for c in candidates if c[2] == tier}, key=lambda c: (c[0], c[0] - c[1], _priority(c[3])))
        for start, end, _, rule in ranked:
            at = bisect_right(starts, start)
            if (at > 0 and ends[at - 1] > start) or (at < len(starts) and starts[at] < end):
                continue
            if _in_allowed(allowed, start):
                continue
            if allowlist is not None and allowlist(text[start:end]):
                continue
            starts.insert(at, start)
            ends.insert(at, end)
            chosen.append((start, end, rule))
    chosen = _widened(text, candidates, chosen, allowed, allowlist)
    chosen.sort()
    findings: list[Finding] = []
    if not _plain_breaks(text):
        starts = _line_starts(text)
        for start, end, rule in chosen:
            i = bisect_right(starts, start)
            findings.append(Finding(rule, start, end, i + 1, start - (starts[i - 1] if i else 0) + 1))
        return findings
    line, line_pos, line_start = 1, 0, 0
    for start, end, rule in chosen:
        newlines = text.count("\n", line_pos, start)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", line_pos, start) + 1
        line_pos = start
        findings.append(Finding(rule, start, end, line, start - line_start + 1))
    return findings


def _widened(text: str, candidates: list[Candidate], chosen: list[tuple[int, int, str]],
             allowed: list[tuple[int, int]], allowlist: Callable[[str], bool] | None) -> list[tuple[int, int, str]]:  # fmt: skip
    """A value given to a credential name that holds a provider token (``DB_PASSWORD=
    Zq8!vT2#pL-AKIA…``, a URL password ``Rg7xQ2mZ-ghp_…``) is masked whole, as it is when it
    holds none: the token's finding grows to the value and keeps its rule id. The chosen
    findings do not overlap, so sorted by start they are sorted by end too (bisect: an env
    file of 5,000 such lines took 1.7 s with a scan per value)."""
    chosen = sorted(chosen)
    starts = [f[0] for f in chosen]
    for gs, ge, _, _ in sorted((c for c in candidates if c[2] == GENERIC_TIER), key=lambda c: c[0] - c[1]):
        i, j = bisect_left(starts, gs), bisect_left(starts, ge)
        inside = chosen[i:j]
        if not inside or inside[-1][1] > ge or (i > 0 and chosen[i - 1][1] > gs):
            continue  # holds no finding, or would overlap one it does not hold
        if len(inside) == 1 and inside[0][:2] == (gs, ge):
            continue
        if _in_allowed(allowed, gs) or (allowlist is not None and allowlist(text[gs:ge])):
            continue
        chosen[i:j] = [(gs, ge, inside[0][2])]
        starts[i:j] = [gs]
    return chosen


def find_secrets(text: str, user_patterns: Sequence[str] = (), *, allowlist: Sequence[str] = ()) -> list[Finding]:
    """Detect secrets (no ``<private>`` handling): sorted by start, non-overlapping.

    ``user_patterns`` are extra regexes (config ``redactPatterns``), reported verbatim;
    ``allowlist`` holds exact values or regexes (config ``redactAllowlist``) that are never
    reported. A ``UserRules`` passed as ``user_patterns`` brings its own allowlist. A value
    that is already masked is not reported, so redacting redacted text is a no-op.
    """
    patterns, allow_entries = UserRules.split(user_patterns, allowlist)
    low = _lower(text)
    candidates = _candidates(text, low)
    _user_candidates(text, patterns, candidates)
    if not candidates:
        return []
    return _select(text, low, candidates, UserRules.matcher(allow_entries))


def _strip_private(text: str) -> tuple[str, int]:
    """Replace ``<private>`` spans first, so secrets inside them are never reported."""
    if "<" not in text:
        return text, 0
    return _PRIVATE.subn(PRIVATE_REPLACEMENT, text)


def redact(text: str, user_patterns: Sequence[str] = (), *, allowlist: Sequence[str] = ()) -> RedactResult:
    """Return the text as it must be stored: private spans replaced, secrets masked (D14)."""
    cleaned, private_spans = _strip_private(text)
    findings = find_secrets(cleaned, user_patterns, allowlist=allowlist)
    if not findings:
        return RedactResult(cleaned, (), private_spans)
    masked = apply_masks(cleaned, ((f.start, f.end) for f in findings))
    rules = tuple(dict.fromkeys(f.rule for f in findings))
    return RedactResult(masked, rules, private_spans)
