"""D80 curated expansion groups, indexed in their own column (D83).

A memory that says "deploy" is also found by "ship", "release" or 部署: each group is one
concept, and a memory whose text, tags or aliases use any member carries the group's
concept token (``ωxg`` and a number named by the members) in the index's ``expansions`` column (weighted below aliases),
at most 32 per memory. A query that uses any member asks for the same token. One token per
concept rather than every member word keeps the words a memory really says at their own
rarity for bm25 (a word that is also some group's member no longer looks common), keeps the
index small, and bridges English and Chinese in one step. The work is done at index time
(and once per query), and a hit found this way is attributed ``(synonym: …)`` with the
query's words that reached it. Users add groups with the ``searchExpansions`` config key;
the index keeps a hash of the map in force and re-derives the column when it changes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import sqlite3
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from .text import CJK_RUN, CONCEPT_LETTER

MAX_EXPANSIONS = 32
RULES_VERSION = 5  # part of the map's hash: a change to how the column is derived re-derives it (5: ω first; 4: tokens named by members)
MEMO_WORDS = 50_000  # distinct words whose group lookup is kept (a full rebuild meets each word many times)
# + a number named by the group's members: one FTS term per concept. A Greek letter first
# (``text.CONCEPT_LETTER``): ``text.build_query`` keeps a query word that starts with it from
# the expansions column, so no typed word or prefix ("om", "ω", "ωxg") reaches a token and the
# other words need no column filter.
TOKEN = f"{CONCEPT_LETTER}xg"
_WORD = re.compile(r"[a-z0-9][a-z0-9+#]*")

# Each group is one concept in the words developers use for it, English and Chinese.
# Generic engineering vocabulary only: project words belong in aliases (D61) or the
# alias/target registry (D81).
GROUPS: tuple[tuple[str, ...], ...] = (
    ("deploy", "deployment", "ship", "release", "rollout", "部署", "发布", "上线"),
    ("rollback", "roll back", "revert", "回滚", "回退"),
    ("auth", "authentication", "login", "log in", "sign in", "sso", "single sign-on", "登录", "认证", "单点登录"),
    ("db", "database", "数据库"),
    ("k8s", "kubernetes", "kube", "eks", "gke", "aks"),
    ("rate limit", "rate limiting", "throttle", "throttling", "429", "限流"),
    ("snapshot test", "golden file", "golden", "screenshot test", "visual regression", "快照", "截图对比", "基准图"),
    ("test", "testing", "测试"),
    ("config", "configuration", "settings", "配置", "设置"),
    ("secret", "credential", "password", "api key", "密钥", "凭证", "密码"),
    ("cache", "caching", "缓存"),
    ("log", "logs", "logging", "日志"),
    ("error", "exception", "failure", "错误", "异常", "报错"),
    ("crash", "crashes", "崩溃", "闪退"),
    ("timeout", "time out", "timed out", "超时"),
    ("retry", "retries", "backoff", "重试"),
    ("backup", "back up", "备份"),
    ("restore", "recovery", "恢复", "还原"),
    ("retention", "retain", "保留", "保存期限"),
    ("delete", "remove", "wipe", "purge", "erase", "删除", "清空", "清除"),
    ("performance", "perf", "latency", "slow", "性能", "延迟", "卡顿"),
    ("memory", "ram", "oom", "内存"),
    ("disk", "storage", "volume", "磁盘", "存储"),
    ("network", "networking", "网络"),
    ("permission", "access", "rbac", "forbidden", "permission denied", "权限"),
    ("account", "user", "用户", "账号"),
    ("payment", "billing", "charge", "支付", "付款", "计费"),
    ("refund", "退款"),
    ("order", "订单"),
    ("invoice", "receipt", "发票", "收据"),
    ("email", "e-mail", "mail", "邮件", "邮箱"),
    ("notification", "push", "通知", "推送"),
    ("alert", "alerting", "page", "paging", "告警", "报警"),
    ("monitoring", "metrics", "observability", "dashboard", "监控"),
    ("ci", "continuous integration", "build pipeline", "持续集成"),
    ("build", "compile", "构建", "编译", "打包"),
    ("dependency", "dependencies", "deps", "library", "依赖"),
    ("upgrade", "update", "bump", "升级", "更新"),
    ("migration", "migrate", "schema change", "迁移"),
    ("api", "endpoint", "接口"),
    ("webhook", "callback", "回调"),
    ("queue", "message queue", "broker", "队列", "消息队列"),
    ("container", "docker", "容器"),
    ("frontend", "front end", "web app", "前端"),
    ("backend", "back end", "server side", "后端", "服务端"),
    ("mobile", "mobile app", "移动端", "手机"),
    ("production", "prod", "生产环境", "线上", "正式环境"),
    ("staging", "preprod", "pre-production", "预发布", "预发布环境", "测试环境"),
    ("environment", "env", "环境"),
    ("documentation", "docs", "文档"),
    ("code review", "review", "pull request", "评审", "审查", "代码评审"),
    ("branch", "分支"),
    ("merge", "合并"),
    ("commit", "提交"),
    ("owner", "owns", "ownership", "负责", "负责人"),
    ("privacy", "gdpr", "pii", "personal data", "隐私", "个人信息"),
    ("anonymize", "anonymization", "pseudonymize", "pseudonymized", "脱敏", "匿名化"),
    ("security", "vulnerability", "cve", "安全", "漏洞"),
    ("certificate", "cert", "tls", "ssl", "证书"),
    ("scheduler", "cron", "orchestration", "orchestrate", "调度", "定时任务"),
    ("autoscaling", "autoscaler", "scale up", "scaling", "扩容", "扩缩容"),
    ("node", "machine", "instance", "节点", "机器"),
    ("duplicate", "dedupe", "double", "重复"),
    ("flaky", "intermittent", "unstable", "不稳定"),
    ("translation", "i18n", "localization", "l10n", "国际化", "翻译", "多语言"),
    ("feature flag", "feature toggle", "功能开关"),
    ("shell", "ssh", "terminal", "终端"),
    ("debug", "debugging", "troubleshoot", "diagnose", "调试", "排查"),
    ("decline", "refuse", "reject", "opt out", "拒绝"),
    ("upload", "上传"),
    ("download", "下载"),
    ("image", "picture", "photo", "图片", "照片"),
    ("version", "版本"),
    ("customer", "客户"),
    ("timezone", "time zone", "utc", "时区"),
    ("shutdown", "shut down", "terminate", "sigterm", "graceful", "关闭", "停止"),
    ("health check", "healthcheck", "probe", "liveness", "readiness", "健康检查"),
    ("local development", "local dev", "dev server", "本地开发"),
)


_SUFFIXES = (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("d", ""), ("ing", ""), ("ing", "e"))


@functools.lru_cache(maxsize=8192)
def _forms(token: str) -> tuple[str, ...]:
    """A word, then the base forms it may come from ("deploys", "released", "caching"), so
    a group member written as a base form matches its inflections in memory text."""
    out = [token]
    for suffix, repl in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            base = token[: len(token) - len(suffix)] + repl
            out.append(base)
            if suffix in ("ed", "ing") and base[-1] == base[-2] and base[-1] not in "lsz":
                out.append(base[:-1])  # "shipped", "shipping" → "ship"
    return tuple(dict.fromkeys(out))


# Every byte that is not a word character of _WORD as a space: a word is then a run of the
# rest, less any leading "+" or "#" (what _WORD.findall finds, at a third of the cost).
_BLANK = bytes(c if chr(c) in "abcdefghijklmnopqrstuvwxyz0123456789+#" else 0x20 for c in range(256))


def _words(text: str) -> list[str]:
    """``_WORD.findall(text.lower())``: the ASCII words, split in C (every byte of a
    non-ASCII character's UTF-8 becomes a space, as the character ends a word in the
    pattern too)."""
    runs = text.lower().encode("utf-8", "surrogatepass").translate(_BLANK).decode("ascii").split()
    if "+" in text or "#" in text:
        return [w for w in (r.lstrip("+#") for r in runs) if w]
    return runs


def _inflections(base: str) -> set[str]:
    """Every word whose ``_forms`` may include ``base`` (``_forms`` inverted): the base, a
    suffix on it or on its stem, a doubled last letter before "ed"/"ing". Some do not
    reach it (the length rule); ``Expander._ensure`` keeps only those that do."""
    out = {base, base + base[-1:] + "ed", base + base[-1:] + "ing"}
    for suffix, repl in _SUFFIXES:
        if base.endswith(repl):
            out.add(base[: len(base) - len(repl)] + suffix)
    return out


@dataclass
class Expander:
    """An expansion map ready to apply: single words, phrases (matched on consecutive
    words) and CJK members (matched as substrings).

    ``digest`` is worked out at once (attaching a connection compares it with the index's);
    the lookup tables on the first method that needs them (``_ensure``): they take ~13 ms,
    and a hook's session start, ``list`` or ``show`` never expands anything."""

    groups: tuple[tuple[str, ...], ...]
    digest: str = ""
    # derived from ``groups`` by ``_ensure``: not compared and not shown, as ``digest`` stands for them
    _words: dict[str, list[int]] = field(default_factory=dict, compare=False, repr=False)
    _phrases: dict[str, list[tuple[tuple[str, ...], int]]] = field(default_factory=dict, compare=False, repr=False)
    _cjk: list[tuple[str, int, str]] = field(default_factory=list, compare=False, repr=False)  # (lowercase, group, as written)
    _tokens: list[str] = field(default_factory=list, compare=False, repr=False)
    _codes: list[bytes] = field(default_factory=list, compare=False, repr=False)
    _reach: frozenset[str] = field(default=frozenset(), compare=False, repr=False)  # the words that reach a member word or start a phrase
    _heads: frozenset[str] = field(default=frozenset(), compare=False, repr=False)  # the words of _reach that may start a phrase
    _cjk_by_first: dict[str, list[int]] = field(default_factory=dict, compare=False, repr=False)  # first character → places in _cjk
    _memo: dict[str, tuple[tuple[str, ...], tuple[int, ...], tuple[tuple[tuple[str, ...], int], ...]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _built: bool = field(default=False, compare=False, repr=False)  # the tables above are derived

    def __post_init__(self) -> None:
        # CJK members with cased letters (a user's "API网关") match in any case since they did
        # not: only such a map's hash changes with it (the built-in map has none: no re-derive)
        cased = any(not m.isascii() and m.lower() != m for g in self.groups for m in g)  # (no regex at import)
        canonical = json.dumps([RULES_VERSION, [list(g) for g in self.groups], *(["cjk any case"] if cased else [])],
                               ensure_ascii=False)  # fmt: skip
        self.digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]

    def _ensure(self) -> None:
        """Derive the lookup tables, once. Built aside and put in place before ``_built``
        is set, so a thread that reads them meanwhile sees none or all (two threads racing
        both derive equal tables, which is harmless)."""
        if self._built:
            return
        tokens = [token(group) for group in self.groups]
        words: dict[str, list[int]] = {}
        phrases: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        cjk: list[tuple[str, int, str]] = []
        cjk_by_first: dict[str, list[int]] = {}
        for gi, group in enumerate(self.groups):
            for member in group:
                if CJK_RUN.search(member):
                    cjk.append((member.lower(), gi, member))
                    continue
                parts = tuple(_words(member))
                if len(parts) == 1:
                    words.setdefault(parts[0], []).append(gi)
                elif parts:
                    phrases.setdefault(parts[0], []).append((parts, gi))
        for at, (member, _, _) in enumerate(cjk):
            cjk_by_first.setdefault(member[0], []).append(at)
        keys = set(words) | set(phrases)
        reach = frozenset(w for k in keys for w in _inflections(k) if any(f in keys for f in _forms(w)))
        self._heads = frozenset(w for w in reach if any(f in phrases for f in _forms(w)))
        self._reach = reach
        self._tokens = tokens
        self._codes = [compact(t) for t in tokens]
        self._words, self._phrases, self._cjk, self._cjk_by_first = words, phrases, cjk, cjk_by_first
        self._built = True

    def matched_groups(self, text: str, has_cjk: bool | None = None) -> list[int]:
        """Groups with a member in ``text``, in order of first appearance (what indexing
        needs, once per memory: ``matched_members`` without naming the members).
        ``has_cjk``: whether ``text`` has CJK characters, when the caller knows."""
        self._ensure()
        found: dict[int, None] = {}
        words = _words(text)
        reach = self._reach  # most words reach nothing: one set lookup each, in C
        hits = dict.fromkeys([w for w in words if w in reach])  # in order of first appearance
        if self._heads.isdisjoint(hits):  # no phrase can start here: each word's first place is enough
            for word in hits:
                for gi in self._lookup(word)[1]:
                    found.setdefault(gi, None)
        else:
            for i in [i for i, w in enumerate(words) if w in hits]:
                _, groups, phrases = self._lookup(words[i])
                for gi in groups:
                    found.setdefault(gi, None)
                for phrase, gi in phrases:
                    if gi not in found and all(
                        i + k < len(words) and phrase[k] in _forms(words[i + k]) for k in range(1, len(phrase))
                    ):
                        found[gi] = None
        if self._cjk and (CJK_RUN.search(text) is not None if has_cjk is None else has_cjk):
            # only the members whose first character the text has, in the map's order
            first = self._cjk_by_first
            low = text.lower()  # CJK members match in any case (their Latin letters: "API网关")
            for at in sorted(at for c in set(low).intersection(first) for at in first[c]):
                member, gi, _ = self._cjk[at]
                if gi not in found and member in low:
                    found[gi] = None
        return list(found)

    def _lookup(self, word: str) -> tuple[tuple[str, ...], tuple[int, ...], tuple[tuple[tuple[str, ...], int], ...]]:
        """A word's forms, the groups a single-word member of which it is, and the phrases
        it may start — worked out once per distinct word."""
        hit = self._memo.get(word)
        if hit is None:
            self._ensure()  # (a word is in _memo only once the tables are)
            forms = _forms(word)
            groups = tuple(dict.fromkeys(gi for f in forms for gi in self._words.get(f, ())))
            phrases = tuple(p for f in forms for p in self._phrases.get(f, ()))
            if len(self._memo) >= MEMO_WORDS:
                self._memo.clear()
            hit = self._memo[word] = (forms, groups, phrases)
        return hit

    def matched_members(self, text: str) -> dict[int, list[str]]:
        """The members ``text`` uses (as words, inflected or not, or as CJK substrings), by
        group, groups in order of first appearance."""
        self._ensure()
        found: dict[int, list[str]] = {}
        words = _words(text)
        forms = [_forms(w) for w in words]
        for i, wf in enumerate(forms):
            here: set[int] = set()  # one member per word and group: the word as written first
            for form in wf:
                for gi in self._words.get(form, ()):
                    if gi not in here:
                        here.add(gi)
                        _note(found, gi, self._member_of(gi, form))
                for phrase, gi in self._phrases.get(form, ()):
                    if all(i + k < len(forms) and phrase[k] in forms[i + k] for k in range(1, len(phrase))):
                        _note(found, gi, self._member_of(gi, " ".join(phrase)))
        if CJK_RUN.search(text):
            low = text.lower()
            for member, gi, written in self._cjk:
                if member in low:
                    _note(found, gi, written)
        return found

    def _member_of(self, gi: int, words: str) -> str:
        for member in self.groups[gi]:
            if " ".join(_words(member)) == words:
                return member
        return words

    def token_of(self, gi: int) -> str:
        self._ensure()
        return self._tokens[gi]

    def tokens(self, text: str) -> list[str]:
        """The concept tokens of the groups ``text`` touches (at most ``MAX_EXPANSIONS``):
        the ``expansions`` column of a memory, and what a query asks that column for."""
        return [self._tokens[gi] for gi in self.matched_groups(text)[:MAX_EXPANSIONS]]

    def stored(self, text: str, has_cjk: bool | None = None) -> tuple[bytes, str]:
        """The ``expansions`` column of a memory as stored (``compact``) and as indexed
        (the spelled tokens), worked out once."""
        found = self.matched_groups(text, has_cjk)[:MAX_EXPANSIONS]
        return b"".join([self._codes[gi] for gi in found]), " ".join([self._tokens[gi] for gi in found])

    def reached(self, asked: dict[int, list[str]], column: str, memory_text: str) -> list[str]:
        """The query's own words that found a memory through a concept it does not put in
        those words (the ``(synonym: …)`` attribution): of the groups both use (``asked`` is
        ``matched_members`` of the query, worked out once per search), the members the query
        says and the memory does not."""
        self._ensure()
        theirs = column.split()
        common = [gi for gi in asked if self._tokens[gi] in theirs]
        if not common:
            return []
        forms = {f for w in _words(memory_text) for f in _forms(w)}
        low = memory_text.lower()
        out: list[str] = []
        for gi in common:
            for member in asked[gi]:
                said = member.lower() in low if CJK_RUN.search(member) else all(w in forms for w in _words(member))
                if not said and member not in out:
                    out.append(member)
        return out


def token(group: Sequence[str]) -> str:
    """A group's concept token, named by its members (digits after the prefix, so porter
    leaves it whole): the same group is the same token under every map, so a process still
    holding an older map (another process re-derived the index with a new one) never
    writes or asks for a token that means another concept there."""
    digest = hashlib.sha256(json.dumps([m.casefold() for m in group], ensure_ascii=False).encode("utf-8")).digest()
    return f"{TOKEN}{int.from_bytes(digest[:5], 'big')}"


CODE_BYTES = 5  # a token's number is 40 bits (``token``)


def compact(tokens: str) -> bytes:
    """Spelled concept tokens (``ωxg516778669907 …``) as stored in the index's row: each
    token's number in 5 bytes, big-endian (a third of the spelled bytes). ``spell`` is its
    inverse: the numbers are below 2**40 and have no leading zeros spelled, so both are exact."""
    return b"".join([int(w.removeprefix(TOKEN)).to_bytes(CODE_BYTES, "big") for w in tokens.split()])


_SPELLED: dict[bytes, str] = {}


def spell(codes: bytes) -> str:
    """The stored ``expansions`` column as FTS5 indexes it and a query asks for it."""
    out = []
    for at in range(0, len(codes), CODE_BYTES):
        code = codes[at : at + CODE_BYTES]
        word = _SPELLED.get(code)
        if word is None:
            if len(code) != CODE_BYTES:
                raise ValueError(f"not a concept token code: {codes!r}")
            word = _SPELLED[code] = f"{TOKEN}{int.from_bytes(code, 'big')}"
        out.append(word)
    return " ".join(out)


def _note(found: dict[int, list[str]], gi: int, member: str) -> None:
    got = found.setdefault(gi, [])
    if member not in got:
        got.append(member)


def check_groups(value: object) -> list[list[str]]:
    """``searchExpansions``: a list of groups, each a list of two or more words. A member is
    matched as ASCII words (``_words``, as memory text is cut for groups) or, holding
    Chinese/Japanese/Korean, as a substring: one with other letters (``café``, ``отпуск``)
    would be cut into fragments that match the wrong words, so it is refused, as is one with
    no word at all or with a lone surrogate (which no file can hold)."""
    if not isinstance(value, list) or not all(
        isinstance(g, list) and len(g) >= 2 and all(isinstance(w, str) and w.strip() for w in g) for g in value
    ):
        raise ValueError('expected a list of groups, each a list of two or more words, e.g. [["pto", "vacation"]]')
    members = sum(len(g) for g in value)
    if len(value) > MAX_USER_GROUPS or members > MAX_USER_MEMBERS:
        raise ValueError(f"{len(value)} groups of {members} members: at most {MAX_USER_GROUPS} groups and "
                         f"{MAX_USER_MEMBERS} members (every process derives its lookup tables from them)")  # fmt: skip
    for group in value:
        if len(group) > MAX_GROUP_MEMBERS:
            raise ValueError(f"a group of {len(group)} members: at most {MAX_GROUP_MEMBERS} ({group[0]!r} …)")
        for member in group:
            _check_member(member.strip())
    return [[w.strip() for w in g] for g in value]


# User groups: the built-in map is 78 groups of at most 10 members; tens of thousands of
# members cost every process seconds (the tables are derived per process) and phrases
# sharing a first word cost each memory that word's count times theirs.
MAX_USER_GROUPS, MAX_USER_MEMBERS, MAX_GROUP_MEMBERS = 200, 1000, 32
MAX_MEMBER_CHARS, MAX_MEMBER_WORDS = 60, 5


def _check_member(member: str) -> None:
    try:
        member.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"the expansion member {member!r} is not valid text (a lone surrogate)") from None
    if len(member) > MAX_MEMBER_CHARS or len(_words(member)) > MAX_MEMBER_WORDS:
        shown = repr(member[:40]) + ("…" if len(member) > 40 else "")
        raise ValueError(f"the expansion member {shown} is too long: at most {MAX_MEMBER_CHARS} characters and "
                         f"{MAX_MEMBER_WORDS} words")  # fmt: skip
    if CJK_RUN.search(member):
        return
    if any(not c.isascii() and unicodedata.category(c)[0] in "LN" for c in member):
        folded = "".join(c for c in unicodedata.normalize("NFKD", member) if not unicodedata.combining(c))
        hint = f" — write it as {folded!r}" if folded.isascii() and _words(folded) else ""
        raise ValueError(f"the expansion member {member!r} has letters other than a-z: groups match ASCII words "
                         f"and Chinese/Japanese/Korean text{hint}")  # fmt: skip
    if not _words(member):
        raise ValueError(f"the expansion member {member!r} has no word to match (letters a-z, digits, or CJK)")


BUILTIN = Expander(GROUPS)
_current: Expander = BUILTIN
_cache: dict[str, Expander] = {}


def current() -> Expander:
    """The map the index is being written with (set per data root by ``attach``)."""
    return _current


def for_config(user_groups: list[list[str]] | None, enabled: bool = True) -> Expander:
    """Built-in groups plus the user's; ``enabled=False`` (benchmark ablation) is no map."""
    key = json.dumps([enabled, user_groups or []], ensure_ascii=False)
    if key not in _cache:
        groups = (GROUPS if enabled else ()) + tuple(tuple(g) for g in (user_groups or []))
        _cache[key] = BUILTIN if groups == GROUPS else Expander(groups)
    return _cache[key]


def ablated(flag: str) -> bool:
    """Benchmark-only switches (``OPEN_MEMEX_SEARCH_ABLATE=no-expansions,no-aliases,…``):
    the retrieval eval measures what each layer contributes through the real CLI."""
    return flag in os.environ.get("OPEN_MEMEX_SEARCH_ABLATE", "").split(",")


def attach_config(conn: sqlite3.Connection, values: dict[str, object]) -> int:
    """``attach`` the map a data root's config asks for."""
    user = values.get("searchExpansions")
    groups = user if isinstance(user, list) else None
    return attach(conn, for_config(groups, enabled=not ablated("no-expansions")))


def attach(conn: sqlite3.Connection, expander: Expander) -> int:
    """Use ``expander`` for rows written through ``conn``'s process, and re-derive the
    column of every row if the index was built with another map (returns how many rows).
    The memory files are not read again: text, tags and aliases are in the row."""
    global _current
    _current = expander
    row = conn.execute("SELECT value FROM index_info WHERE key = 'expansions'").fetchone()
    if row is not None and row[0] == expander.digest:
        return 0
    from .index import split_tags, transaction

    with transaction(conn):
        row = conn.execute("SELECT value FROM index_info WHERE key = 'expansions'").fetchone()
        if row is not None and row[0] == expander.digest:
            return 0  # another process did it meanwhile
        rows = conn.execute("SELECT rowid, content, tags, aliases FROM memories").fetchall()
        updates = []
        for rowid, content, tags, aliases in rows:
            codes, _ = expander.stored(" ".join([content, *split_tags(tags), *split_tags(aliases)]))
            updates.append((codes, "", rowid))
        conn.executemany("UPDATE memory_rows SET expansions = ?, cjk_expansions = ? WHERE rowid = ?", updates)
        conn.execute(
            "INSERT INTO index_info(key, value) VALUES ('expansions', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (expander.digest,),
        )
    return len(rows)
