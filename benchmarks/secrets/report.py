#!/usr/bin/env python
"""Accuracy and speed of open-memex's secret scanner on the seeded corpus, beside detect-secrets.

    python benchmarks/secrets/report.py                 # the full report (about 2 minutes)
    python benchmarks/secrets/report.py --no-baseline   # ours only (seconds)
    python benchmarks/secrets/report.py --misses        # list every miss and false positive
    python benchmarks/secrets/report.py --profile       # cProfile the bulk scan
    python benchmarks/secrets/report.py --scan-dir DIR  # findings on real files (false positives)

A positive counts as **masked** when every character of each planted secret after its
first four is masked in the output (the protocol keeps four); **flagged** when a finding
touches the secret's line (enough for a CI gate, not for the write path). A negative is a
**false positive** when anything in it is reported. detect-secrets (1.5, all default
plugins and filters) scans the same texts as files with the same extensions; its "masked"
column masks the values it reports, the way a redactor built on it would.

Never run by the test suite; detect-secrets is a benchmark-only dependency
(``pip install detect-secrets``).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import Sample, build, bulk
from formats import FORMATS
from gen import Gen

from openmemex.redact import find_secrets, mask_value

Spans = list[tuple[int, int]]  # masked spans of one sample


@dataclass
class Score:
    name: str
    masked: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    flagged: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    false_pos: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    misses: list[tuple[str, str]] = field(default_factory=list)
    mb_s: float | None = None

    def recall(self, table: dict[str, list[bool]]) -> float:
        values = [v for vs in table.values() for v in vs]
        return sum(values) / len(values)

    def fp_rate(self) -> float:
        values = [v for vs in self.false_pos.values() for v in vs]
        return sum(values) / len(values)

    def formats_caught(self) -> int:
        return sum(all(vs) for vs in self.masked.values())


def _line_span(text: str, pos: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, len(text) if end < 0 else end


def judge(score: Score, sample: Sample, spans: Spans) -> None:
    """Record what a scanner that masks ``spans`` of ``sample.text`` achieved."""
    if not sample.secrets:
        score.false_pos[sample.kind].append(bool(spans))
        if spans:
            score.misses.append(("false positive " + sample.kind, sample.text))
        return
    out = list(sample.text)
    for start, end in spans:
        out[start:end] = mask_value(sample.text[start:end])
    masked = True
    starts = []
    for secret in sample.secrets:
        at = sample.text.find(secret)
        assert at >= 0, (sample.kind, secret)
        starts.append(at)
        if any(out[i] not in "x\r\n" for i in range(at + 4, at + len(secret))):
            masked = False
    # flagged: a finding on the secret's line; for a multi-line key, anywhere from its BEGIN
    # line (the line before its first body line) to the line after its last
    low, high = _line_span(sample.text, min(starts))[0], _line_span(sample.text, max(starts))[1]
    if len(sample.secrets) > 1:
        low = sample.text.rfind("\n", 0, max(low - 1, 0)) + 1
        high = _line_span(sample.text, min(high + 1, len(sample.text)))[1]
    flagged = any(a <= high and low <= b for a, b in spans)
    score.masked[sample.kind].append(masked)
    score.flagged[sample.kind].append(flagged)
    if not masked:
        score.misses.append((f"miss {sample.kind} ({sample.style})", sample.text))


def ours(sample: Sample) -> Spans:
    return [(f.start, f.end) for f in find_secrets(sample.text)]


def detect_secrets_scanner() -> Callable[[Sample], Spans] | None:
    """detect-secrets with its default plugins and filters, on a real file per sample."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    tmp = Path(tempfile.mkdtemp(prefix="ds-bench-"))

    def scan(sample: Sample) -> Spans:
        path = tmp / f"sample{sample.ext if sample.ext != '.env' else ''}"
        if sample.ext == ".env":
            path = tmp / ".env"
        path.write_text(sample.text)
        with default_settings():
            found = SecretsCollection()
            found.scan_file(str(path))
        spans: Spans = []
        lines = sample.text.split("\n")
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line) + 1)
        for _, secret in found:
            row = secret.line_number - 1
            value = secret.secret_value or ""
            line = lines[row] if 0 <= row < len(lines) else ""
            at = line.find(value) if value else -1
            # a finding whose value is not on its line still flags that line
            spans.append((offsets[row] + at, offsets[row] + at + len(value)) if at >= 0 else (offsets[row], offsets[row]))
        os.unlink(path)
        return spans

    return scan


def evaluate(name: str, scan: Callable[[Sample], Spans], samples: Iterable[Sample]) -> Score:
    score = Score(name)
    for sample in samples:
        judge(score, sample, scan(sample))
    return score


def throughput(files: list[tuple[str, str]], scan: Callable[[str], object], repeat: int = 3) -> float:
    total = sum(len(text.encode()) for _, text in files)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()  # CPU time: a busy neighbour on 2 cores does not count
        for _, text in files:
            scan(text)
        best = min(best, time.process_time() - t0)
    return total / 1e6 / best


def scan_dir(root: Path) -> None:
    """Findings on real files under ``root`` (no secrets expected: every finding is worth a look)."""
    files = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".md", ".json", ".yaml", ".yml", ".toml", ".txt", ".js", ".ts", ".go"):
            try:
                files.append((str(path.relative_to(root)), path.read_text("utf-8")))
            except (OSError, UnicodeDecodeError):
                continue
    size = sum(len(t.encode()) for _, t in files)
    rules: dict[str, int] = defaultdict(int)
    shown = 0
    for name, text in files:
        for f in find_secrets(text):
            rules[f.rule] += 1
            if shown < 40:
                shown += 1
                print(f"  {name}:{f.line}:{f.col} {f.rule} {f.masked(text)[:40]!r}")
    found = sum(rules.values())
    print(f"{root}: {len(files)} files, {size / 1e6:.1f} MB, {found} findings {dict(rules)}, "
          f"{throughput(files, find_secrets, 1):.1f} MB/s")  # fmt: skip


def families(scores: list[Score]) -> None:
    """Recall by provider family: the table in README.md."""
    family = {f.id: f.family for f in FORMATS}
    print("\n| family | formats | samples | " + " | ".join(f"{s.name} masked" for s in scores) + " | detect-secrets flagged |")
    print("|---" * (len(scores) + 4) + "|")
    for fam in sorted(set(family.values())):
        kinds = [k for k in scores[0].masked if family[k] == fam]
        n = sum(len(scores[0].masked[k]) for k in kinds)
        cells = [f"{sum(sum(s.masked[k]) for k in kinds) / n:.2f}" for s in scores]
        flagged = f"{sum(sum(scores[-1].flagged[k]) for k in kinds) / n:.2f}" if len(scores) > 1 else "-"
        print(f"| {fam} | {len(kinds)} | {n} | " + " | ".join(cells) + f" | {flagged} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=20260901)
    ap.add_argument("--bulk-mb", type=float, default=10.0)
    ap.add_argument("--no-baseline", action="store_true", help="skip detect-secrets")
    ap.add_argument("--misses", action="store_true", help="print every miss and false positive")
    ap.add_argument("--profile", action="store_true", help="cProfile our bulk scan, top 25 by own time")
    ap.add_argument("--scan-dir", type=Path, help="instead: scan real files under DIR and list what is found")
    args = ap.parse_args(argv)
    if args.scan_dir is not None:
        scan_dir(args.scan_dir)
        return 0

    pos, neg = build(args.seed)
    formats = len({s.kind for s in pos})
    print(f"corpus: {len(pos)} positives over {formats} formats, {len(neg)} hard negatives "
          f"({len({s.kind for s in neg})} kinds), seed {args.seed}")  # fmt: skip
    files = bulk(Gen(args.seed + 1), int(args.bulk_mb * 1e6), pos[::7] + neg[::5])
    size = sum(len(t.encode()) for _, t in files)
    print(f"bulk: {len(files)} files, {size / 1e6:.1f} MB (notes, code, lockfiles)")

    scores = [evaluate("open-memex", ours, pos + neg)]
    if args.profile:
        prof = cProfile.Profile()
        prof.enable()
        for _, text in files:
            find_secrets(text)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    scores[0].mb_s = throughput(files, find_secrets)
    baseline = None if args.no_baseline else detect_secrets_scanner()
    if baseline is not None:
        ds = evaluate("detect-secrets 1.5", baseline, pos + neg)
        sub = files[: max(1, len(files) // 20)]  # ~0.5 MB: it runs at about 0.1 MB/s
        ds.mb_s = throughput([(n, t) for n, t in sub], lambda text: baseline(Sample("bulk", "file", ".txt", text, ())), 1)
        scores.append(ds)

    print()
    header = "| | " + " | ".join(s.name for s in scores) + " |"
    print(header)
    print("|---" * (len(scores) + 1) + "|")
    rows = [
        ("recall, masked", [f"{s.recall(s.masked):.3f}" for s in scores]),
        ("recall, flagged", [f"{s.recall(s.flagged):.3f}" for s in scores]),
        ("false positives", [f"{s.fp_rate():.1%}" for s in scores]),
        ("formats fully masked", [f"{s.formats_caught()} / {formats}" for s in scores]),
        ("bulk MB per CPU second", [f"{s.mb_s:.1f}" if s.mb_s else "-" for s in scores]),
    ]
    for label, cells in rows:
        print(f"| {label} | " + " | ".join(cells) + " |")

    families(scores)
    print("\nper format (samples masked; flagged for detect-secrets):")
    for kind in sorted(scores[0].masked):
        cells = [f"{sum(s.masked[kind])}/{len(s.masked[kind])}" for s in scores[:1]]
        cells += [f"{sum(s.masked[kind])}/{len(s.masked[kind])} (flag {sum(s.flagged[kind])})" for s in scores[1:]]
        print(f"  {kind:34} " + "   ".join(cells))
    print("\nfalse positives by kind:")
    for kind in sorted(scores[0].false_pos):
        cells = [f"{sum(s.false_pos[kind])}/{len(s.false_pos[kind])}" for s in scores]
        if any(sum(s.false_pos[kind]) for s in scores):
            print(f"  {kind:34} " + "   ".join(cells))
    if args.misses:
        for what, text in scores[0].misses:
            print(f"\n--- {what}\n{text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
