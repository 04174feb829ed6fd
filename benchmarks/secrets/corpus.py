"""The seeded evaluation corpus: positives, hard negatives and a ~10 MB bulk mix.

Positives embed every format the way people write them: ``.env`` lines, shell exports,
YAML, JSON, TOML, Python, JavaScript, Go, docker-compose, Markdown notes with inline
code, and plain prose, either as a small config file of that kind or inside a Markdown
memory note. Each positive knows the exact substrings that must come out masked.

The bulk corpus (throughput only) mixes memory notes, source code and lockfiles in the
proportions a memory repo next to its project sees, with a few planted samples.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from formats import FORMATS, Format, Planted
from gen import WORDS, Gen
from negatives import negatives


@dataclass(frozen=True)
class Sample:
    """One evaluation text: ``secrets`` empty for a negative."""

    kind: str  # the format id, or the negative kind
    style: str
    ext: str  # the file extension a scanner sees
    text: str
    secrets: tuple[str, ...]


_STYLES = ("env", "export", "yaml", "yaml-quoted", "json", "toml", "python", "js", "go", "compose", "md-inline",
           "prose-named", "prose-unnamed", "cli")  # fmt: skip
_EXT = {"env": ".env", "export": ".sh", "yaml": ".yaml", "yaml-quoted": ".yaml", "json": ".json", "toml": ".toml",
        "python": ".py", "js": ".js", "go": ".go", "compose": ".yaml", "md-inline": ".md", "prose-named": ".md",
        "prose-unnamed": ".md", "cli": ".sh"}  # fmt: skip
_FENCE = {".env": "dotenv", ".sh": "sh", ".yaml": "yaml", ".json": "json", ".toml": "toml", ".py": "python",
          ".js": "js", ".go": "go"}  # fmt: skip


def _camel(name: str) -> str:
    head, *rest = name.lower().split("_")
    return head + "".join(p.capitalize() for p in rest)


def _sentence(g: Gen) -> str:
    words = g.words(g.rng.randint(6, 14))
    return words[0].upper() + words[1:] + "."


def embed(g: Gen, fmt: Format, value: str, style: str) -> str:
    """``value`` given its usual name, written in ``style``."""
    name = g.choice(fmt.names)
    human = fmt.human or name.lower().replace("_", " ")
    q = "'" if '"' in value else '"'
    match style:
        case "env":
            return f"{name}={value}"
        case "export":
            return f"export {name}={q}{value}{q}"
        case "yaml":
            return f"{name.lower()}: {value}" if not re.search(r"[:#{}\[\],&*!|>'\"%@`]|^-", value) else f"{name.lower()}: '{value}'"
        case "yaml-quoted":
            return f'{name.lower()}: "{value}"' if '"' not in value else f"{name.lower()}: '{value}'"
        case "json":
            return json.dumps({name.lower(): value, "region": "eu-west-1"}, indent=2)
        case "toml":
            return f"[service]\n{name.lower()} = {json.dumps(value)}"
        case "python":
            return f"{name} = {q}{value}{q}"
        case "js":
            return f"const {_camel(name)} = {q}{value}{q};"
        case "go":
            return f"{_camel(name)} := {json.dumps(value)}"
        case "compose":
            return f"services:\n  api:\n    environment:\n      - {name}={value}"
        case "md-inline":
            return f"- `{name}`: `{value}`"
        case "prose-named":
            return g.choice([f"The {human} for prod is {value}.", f"Our {human} is {value} (rotate it after the demo).",
                             f"FYI: the {human} is {value}, don't share it."])  # fmt: skip
        case "prose-unnamed":
            return g.choice([f"Use {value} to call the API from CI.", f"I pasted {value} into the runner settings.",
                             f"Working key: {value}"])  # fmt: skip
        case _:  # cli
            return f"mytool login --token {value}"


def _wrap(g: Gen, body: str, ext: str, as_note: bool) -> tuple[str, str]:
    """Surround ``body`` with realistic text: a small file of its kind, or a memory note."""
    if not as_note and ext != ".md":
        if ext in (".py", ".js", ".go"):
            lead = {".py": "import os\n\n", ".js": "import fetch from 'node-fetch';\n\n", ".go": "package main\n\n"}[ext]
            return lead + body + "\n", ext
        if ext == ".json":
            return body + "\n", ext
        return f"# {_sentence(g)}\n{body}\nLOG_LEVEL=info\n" if ext in (".env", ".sh") else f"# {_sentence(g)}\n{body}\n", ext
    fence = _FENCE.get(ext)
    middle = f"```{fence}\n{body}\n```" if fence else body
    title = g.words(3).capitalize()
    return f"## {title}\n\n{_sentence(g)}\n\n{middle}\n\n{_sentence(g)}\n", ".md"


def positives(g: Gen, per_format: int) -> list[Sample]:
    out: list[Sample] = []
    for fmt in FORMATS:
        styles = [s for s in fmt.styles or _STYLES if fmt.names and (fmt.prefixed or s not in ("prose-unnamed", "cli"))]
        g.rng.shuffle(styles)
        for i in range(per_format):
            made = fmt.make(g)
            if isinstance(made, Planted):
                style = g.choice(["note", "file"] if "\n" in made.text else ["note", "file", "prose"])
                if style == "prose":
                    body, ext = f"{_sentence(g)} {made.text} {_sentence(g)}", ".md"
                else:
                    body, ext = made.text, ".json" if made.text.lstrip().startswith("{") else ".txt"
                text, ext = _wrap(g, body, ext, style != "file")
                out.append(Sample(fmt.id, style, ext, text, made.secrets))
                continue
            style = styles[i % len(styles)]
            text, ext = _wrap(g, embed(g, fmt, made, style), _EXT[style], g.rng.random() < 0.5)
            out.append(Sample(fmt.id, style, ext, text, (made,)))
    return out


def hard_negatives(g: Gen, per_kind: int) -> list[Sample]:
    out = []
    for kind, snippet in negatives(g, per_kind):
        as_note = g.rng.random() < 0.5
        text, ext = _wrap(g, snippet, ".md" if as_note else ".txt", as_note)
        out.append(Sample(kind, "note" if as_note else "file", ext, text, ()))
    return out


# ---------------------------------------------------------------------------------------------
# bulk: memory notes, code, lockfiles

def _note(g: Gen) -> str:
    paras = "\n\n".join(" ".join(_sentence(g) for _ in range(g.rng.randint(2, 6))) for _ in range(g.rng.randint(1, 4)))
    code = ""
    if g.rng.random() < 0.5:
        code = "\n\n```yaml\n" + "\n".join(f"{g.choice(WORDS)}_{g.choice(WORDS)}: {g.choice(WORDS)}" for _ in range(6)) + "\n```"
    if g.rng.random() < 0.3:
        code += "\n\n```sh\nexport GITHUB_TOKEN=${GITHUB_TOKEN}\ncurl -H \"Authorization: Bearer $GITHUB_TOKEN\" https://api.github.com/user\n```"
    return (f"---\nid: {g.ulid()}\nschema_version: 2\nscope: project\nscope_key: project__acme__{g.hex(12)}\n"
            f"type: {g.choice(['fact', 'decision', 'gotcha', 'howto'])}\ntags: [{g.choice(WORDS)}, {g.choice(WORDS)}]\n"
            f"created_at: \"2026-0{g.rng.randint(1, 9)}-1{g.rng.randint(0, 9)}T10:00:00.000Z\"\nreview_state: draft\n---\n\n"
            f"{paras}{code}\n")  # fmt: skip


def _python(g: Gen) -> str:
    funcs = []
    for _ in range(g.rng.randint(4, 12)):
        a, b = g.choice(WORDS), g.choice(WORDS)
        funcs.append(
            f"def {a}_{b}(token: str, key: str | None = None) -> dict[str, str]:\n"
            f'    """{_sentence(g)}"""\n'
            f"    password = os.environ.get(\"{a.upper()}_PASSWORD\", \"\")\n"
            f"    headers = {{\"Authorization\": f\"Bearer {{token}}\", \"X-Request-Id\": str(uuid.uuid4())}}\n"
            f"    cache_key = hashlib.sha256(key.encode()).hexdigest() if key else None\n"
            f"    for {a} in {b}s:\n        if {a}.{b}_id == key:\n            return {{\"{a}\": {a}.name, \"key\": cache_key}}\n"
            f"    raise KeyError(f\"no {a} for {{key}}\")\n"
        )  # fmt: skip
    return "import hashlib\nimport os\nimport uuid\n\n\n" + "\n\n".join(funcs)


def _js(g: Gen) -> str:
    parts = []
    for _ in range(g.rng.randint(4, 12)):
        a, b = g.choice(WORDS), g.choice(WORDS)
        parts.append(
            f"export async function {a}{b.capitalize()}(client, opts = {{}}) {{\n"
            f"  const token = process.env.{a.upper()}_TOKEN;\n"
            f"  const res = await client.get(`/api/{a}/${{opts.id}}`, {{ headers: {{ Authorization: `Bearer ${{token}}` }} }});\n"
            f"  if (!res.ok) throw new Error('{_sentence(g)}');\n"
            f"  return res.json().then((d) => d.{b}s.map((x) => ({{ key: x.key, {a}: x.{a} }})));\n}}\n"
        )  # fmt: skip
    return "\n".join(parts)


def _package_lock(g: Gen, n: int) -> str:
    deps = {}
    for _ in range(n):
        name = f"{g.choice(WORDS)}-{g.choice(WORDS)}"
        deps[f"node_modules/{name}"] = {"version": f"{g.rng.randint(0, 9)}.{g.rng.randint(0, 30)}.{g.rng.randint(0, 9)}",
                                        "resolved": f"https://registry.npmjs.org/{name}/-/{name}-1.0.0.tgz",
                                        "integrity": f"sha512-{g.b64(86)}==", "dev": g.rng.random() < 0.5}  # fmt: skip
    return json.dumps({"name": "acme-web", "lockfileVersion": 3, "packages": deps}, indent=2)


def _yarn_lock(g: Gen, n: int) -> str:
    return "\n".join(
        f'"{(w := g.choice(WORDS))}@^1.0.0":\n  version "1.{g.rng.randint(0, 9)}.0"\n'
        f'  resolved "https://registry.yarnpkg.com/{w}/-/{w}-1.0.0.tgz#{g.hex(40)}"\n  integrity sha512-{g.b64(86)}==\n'
        for _ in range(n)
    )  # fmt: skip


def _go_sum(g: Gen, n: int) -> str:
    return "".join(f"github.com/{g.choice(WORDS)}/{g.choice(WORDS)} v1.{g.rng.randint(0, 20)}.0 h1:{g.b64(43)}=\n"
                   f"github.com/{g.choice(WORDS)}/{g.choice(WORDS)} v1.{g.rng.randint(0, 20)}.0/go.mod h1:{g.b64(43)}=\n"
                   for _ in range(n))  # fmt: skip


def _poetry_lock(g: Gen, n: int) -> str:
    return "\n".join(f'[[package]]\nname = "{g.choice(WORDS)}"\nversion = "2.{g.rng.randint(0, 9)}.1"\nfiles = [\n'
                     f'    {{file = "a-2.0.1-py3-none-any.whl", hash = "sha256:{g.hex(64)}"}},\n'
                     f'    {{file = "a-2.0.1.tar.gz", hash = "sha256:{g.hex(64)}"}},\n]\n' for _ in range(n))  # fmt: skip


def bulk(g: Gen, target_bytes: int, plants: list[Sample]) -> list[tuple[str, str]]:
    """(name, text) files adding up to about ``target_bytes``: 40 % memory notes, 35 % code,
    25 % lockfiles; the planted samples are spread among the notes."""
    files: list[tuple[str, str]] = []
    size = 0
    makers = [("note", 0.40), ("code", 0.35), ("lock", 0.25)]
    budget = {kind: share * target_bytes for kind, share in makers}
    planted = iter(plants)
    i = 0
    while size < target_bytes:
        kind = max(budget, key=lambda k: budget[k])
        if kind == "note":
            text = _note(g)
            if g.rng.random() < 0.15:
                sample = next(planted, None)
                if sample is not None:
                    text += "\n" + sample.text
            name = f"notes/{i}.md"
        elif kind == "code":
            text, name = (_python(g), f"src/m{i}.py") if g.rng.random() < 0.6 else (_js(g), f"web/m{i}.js")
        else:
            pick = g.rng.random()
            if pick < 0.4:
                text, name = _package_lock(g, 150), f"lock/{i}/package-lock.json"
            elif pick < 0.6:
                text, name = _yarn_lock(g, 150), f"lock/{i}/yarn.lock"
            elif pick < 0.8:
                text, name = _go_sum(g, 200), f"lock/{i}/go.sum"
            else:
                text, name = _poetry_lock(g, 100), f"lock/{i}/poetry.lock"
        budget[kind] -= len(text)
        size += len(text)
        files.append((name, text))
        i += 1
    return files


def build(seed: int = 20260901, per_format: int = 3, per_negative_kind: int = 5) -> tuple[list[Sample], list[Sample]]:
    """The positives and the hard negatives for ``seed``."""
    g = Gen(seed)
    return positives(g, per_format), hard_negatives(g, per_negative_kind)
