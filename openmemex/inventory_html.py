"""The inventory as one self-contained HTML page (D68, D70): a person opens it from disk
and reads what is remembered, in plain words.

Memory text is data from anywhere (an imported bundle, a teammate's pull, a pasted web
page), and under ``file://`` an unescaped ``<script>`` would run in the user's own
browser, so every stored string is escaped — and shown terminal-safe, so control and
bidi characters cannot make it read differently from what it is. The page's "no network
requests" is enforced, not promised: a ``default-src 'none'`` Content-Security-Policy
that allows only our own inline style and filter script, each by its sha256 hash; no
style attributes, no links, no images, no fonts. The filter box is plain show/hide over
the rendered entries (no innerHTML), and appears only when the script runs. Read-only:
forgetting stays a confirmed conversation, and the page says how.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape

from .ids import format_time
from .inventory import counts
from .listing import Entry, Listing, Section, provenance, review_words
from .terminal import safe

FOLD_THRESHOLD = 50  # more current memories than this: sections start folded

STYLE = """
:root { color-scheme: light dark; --bg: #fdfdfb; --fg: #1b1b1b; --muted: #5c5c5c; --line: #e2ded3;
  --card: #f3f0e7; --chip: #e9e5d9; --accent: #1f5fbf; --warn: #8a4b00; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #15171b; --fg: #e7e6e2; --muted: #a6a6a1; --line: #2d3038; --card: #1e2229;
    --chip: #2a2f38; --accent: #8db4ff; --warn: #f0b25a; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 50rem; padding: 1.5rem 1rem 3rem; background: var(--bg); color: var(--fg);
  font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size: 1.45rem; margin: 0 0 0.2rem; }
.sub { color: var(--muted); font-size: 0.9rem; margin: 0 0 0.6rem; }
.howto { background: var(--card); border-radius: 8px; padding: 0.75rem 1rem; font-size: 0.92rem; margin: 1rem 0; }
input[type="search"] { width: 100%; padding: 0.55rem 0.7rem; font-size: 1rem; margin: 0.6rem 0 0.2rem;
  border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
details.group { margin: 1.4rem 0 0; border-top: 2px solid var(--line); }
summary { cursor: pointer; padding: 0.6rem 0 0.2rem; font-size: 1.12rem; font-weight: 600; }
.count { color: var(--muted); font-weight: normal; font-size: 0.9em; margin-left: 0.3rem; }
.blurb { color: var(--muted); font-size: 0.9rem; margin: 0.2rem 0 0.6rem; }
ol.entries { list-style: none; margin: 0; padding: 0; }
.entry { border-top: 1px solid var(--line); padding: 0.7rem 0; }
.head { margin: 0 0 0.3rem; font-size: 0.85rem; color: var(--muted); }
.num { font-weight: 700; color: var(--fg); margin-right: 0.4rem; }
.chip { display: inline-block; background: var(--chip); border-radius: 4px; padding: 0 0.4rem; margin-right: 0.3rem; }
.chip.inferred { color: var(--warn); }
.body { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0 0 0.35rem; }
.meta { color: var(--muted); font-size: 0.83rem; margin: 0; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.82rem; }
.empty { color: var(--muted); font-style: italic; }
.history .entry { opacity: 0.8; }
footer { margin-top: 2rem; color: var(--muted); font-size: 0.85rem; }
""".strip()

SCRIPT = """
(function () {
  var input = document.getElementById('filter');
  var status = document.getElementById('filter-status');
  var entries = document.querySelectorAll('.entry');
  var groups = document.querySelectorAll('details.group');
  input.hidden = false;
  input.addEventListener('input', function () {
    var q = input.value.trim().toLowerCase();
    var shown = 0;
    for (var i = 0; i < entries.length; i++) {
      var hit = q === '' || entries[i].textContent.toLowerCase().indexOf(q) !== -1;
      entries[i].hidden = !hit;
      if (hit) { shown++; }
    }
    for (var j = 0; j < groups.length; j++) {
      if (q !== '' && groups[j].querySelector('.entry:not([hidden])')) { groups[j].open = true; }
    }
    status.textContent = q === '' ? '' : shown + ' of ' + entries.length + ' memories match';
  });
})();
""".strip()

BLURBS = {
    "personal": "These describe you, apply in every project, and never leave this machine.",
    "project": "Project memories that are in the repository: the team sees them once they are pushed.",
    "outbox": "Drafts that exist only on this machine. They reach the repo through review "
              "(open-memex submit ID), never automatically.",
}  # fmt: skip
HOWTO = (
    "<strong>Checking my work:</strong> every entry says where it came from and when. Entries marked "
    "<em>inferred by your agent</em> were written from context, not from your words — those are the ones "
    "to check. To remove one, run <code>open-memex forget ID</code> (<code>--soft</code> only hides it) or "
    "tell your agent <em>“forget the memory about …”</em>: it reads the entry back before deleting, and "
    "deletion is permanent. A memory in a repository is gone for the team only once the deletion is "
    "committed and pushed."
)


def csp_hash(text: str) -> str:
    """The CSP source for an inline element whose content is exactly ``text``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CSP = (
    f"default-src 'none'; style-src {csp_hash(STYLE)}; script-src {csp_hash(SCRIPT)}; "
    "base-uri 'none'; form-action 'none'"
)


def _text(value: str) -> str:
    """Stored text as HTML: control and bidi characters made visible, then escaped."""
    return escape(safe(value), quote=True)


def _entry(number: int | None, entry: Entry, now: float) -> str:
    chips = [f'<span class="chip">{_text(entry.type)}</span>']
    if entry.status != "active":
        chips.append(f'<span class="chip">{_text(entry.status)}</span>')
    if entry.source == "inference":
        chips.append('<span class="chip inferred">inferred — check me</span>')
    num = f'<span class="num">{number}.</span>' if number is not None else ""
    meta = [_text(provenance(entry, now))]
    review = review_words(entry)
    if review:
        meta.append(_text(review))
    if entry.scope != "personal":
        meta.append("in the repo" if entry.location == "repo" else "not in the repo yet")
    if entry.tags:
        meta.append("tags: " + _text(", ".join(entry.tags)))
    if entry.superseded_by and entry.status == "superseded":
        meta.append(f"replaced by <code>{_text(entry.superseded_by)}</code>")
    meta.append(f"id <code>{_text(entry.id)}</code>")
    value = f' value="{number}"' if number is not None else ""
    return (
        f'<li class="entry"{value}>\n<p class="head">{num}{"".join(chips)}</p>\n'
        f'<p class="body">{_text(entry.body)}</p>\n<p class="meta">{" · ".join(meta)}</p>\n</li>'
    )


def _section(section: Section, numbered: list[tuple[int, Entry]], now: float, open_: bool) -> str:
    items = "\n".join(_entry(n, e, now) for n, e in numbered) or '<li class="empty">(nothing remembered)</li>'
    more = f'<p class="blurb">… and {section.not_shown} more not shown</p>' if section.not_shown else ""
    return (
        f'<details class="group"{" open" if open_ else ""}>\n<summary>{_text(section.title)}'
        f'<span class="count">{section.total}</span></summary>\n'
        f'<p class="blurb">{_text(BLURBS.get(section.kind, ""))}</p>\n<ol class="entries">\n{items}\n</ol>{more}\n</details>'
    )


def render_html(listing: Listing) -> str:
    now = listing.generated_at
    n = counts(listing)
    total = sum(n.values())
    fold = total > FOLD_THRESHOLD
    numbered = listing.numbered()
    parts: list[str] = []
    opened = False
    for section in listing.sections:
        mine = [(num, e) for num, s, e in numbered if s is section]
        open_ = not fold or (not opened and bool(mine))
        opened = opened or open_
        parts.append(_section(section, mine, now, open_))
    history = listing.history
    if history.total:
        rows = "\n".join(_entry(None, e, now) for e in history.entries)
        parts.append(
            f'<details class="group history">\n<summary>Replaced &amp; hidden history<span class="count">{history.total}'
            f'</span></summary>\n<p class="blurb">Older versions and withdrawn memories ({history.superseded} superseded, '
            f"{history.retracted} retracted, {history.archived} archived), kept so you can see how a fact changed; "
            f'none of them is used for recall.</p>\n<ol class="entries">\n{rows}\n</ol>\n</details>'
        )
    summary = (f"Generated {format_time(now)} · {total} memories ({n['personal']} personal, {n['project']} in the "
               f"repo, {n['outbox']} in the outbox)")  # fmt: skip
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>What open-memex remembers</title>
<style>{STYLE}</style>
</head>
<body>
<header>
<h1>What open-memex remembers</h1>
<p class="sub">{_text(summary)}. A read-only report made on this machine; it loads nothing from the network.</p>
<input type="search" id="filter" placeholder="Filter memories…" aria-label="Filter memories" autocomplete="off" hidden>
<p class="sub" id="filter-status" aria-live="polite"></p>
</header>
<div class="howto">{HOWTO}</div>
{chr(10).join(parts)}
<footer>open-memex inventory · {_text(format_time(now))}</footer>
<script>{SCRIPT}</script>
</body>
</html>
"""
