"""``open-memex demo``: a narrated tour in a throw-away sandbox.

Every step is a real command run in-process against a temporary data root and project
folder, so what you see is exactly what the tool does. Your own data root is never touched:
the sandbox is set up before the first command and removed at the end.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path

_ID = re.compile(r"\b[0-7][0-9A-HJKMNP-TV-Z]{25}\b")
FAKE_TOKEN = "ghp_" + "Demo0Token1Not2Real3Secret4Value5xyz"[:36]


@contextmanager
def sandbox() -> Iterator[Path]:
    """A temp data root + project folder; env, cwd and the folder are restored/removed."""
    base = Path(tempfile.mkdtemp(prefix="open-memex-demo-"))
    saved_env = {k: os.environ.get(k) for k in ("OPEN_MEMEX_HOME", "OPEN_MEMEX_CONFIG", "MY_O_MEMORY_HOME")}
    saved_cwd = Path.cwd()
    project = base / "payments-service"
    project.mkdir()
    os.environ["OPEN_MEMEX_HOME"] = str(base / "data")
    os.environ.pop("OPEN_MEMEX_CONFIG", None)
    os.environ.pop("MY_O_MEMORY_HOME", None)
    os.chdir(project)
    try:
        yield base
    finally:
        os.chdir(saved_cwd)
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(base, ignore_errors=True)


class Tour:
    def __init__(self) -> None:
        self.step = 0

    def say(self, text: str) -> None:
        self.step += 1
        print(f"\n── {self.step}. {text}")

    def run(self, *args: str, expect: int = 0) -> str:
        from .app import run

        print(f"$ open-memex {shlex.join(args)}")
        buffer = StringIO()
        real_out = sys.stdout
        sys.stdout = buffer
        try:
            rc = run(list(args))
        finally:
            sys.stdout = real_out
        output = buffer.getvalue()
        for line in output.rstrip("\n").splitlines():
            print(f"  {line}")
        if rc != expect:
            raise SystemExit(f"demo step failed (exit {rc}): open-memex {shlex.join(args)}")
        return output


def demo() -> int:
    """A guided tour in a throw-away sandbox (never touches your data)."""
    tour = Tour()
    print("open-memex demo — everything below runs in a temporary sandbox that is deleted at the end.")
    with sandbox() as base:
        print(f"sandbox: {base}")
        tour.say("An agent saves what it learned. Project memories start as drafts in a local outbox.")
        tour.run("add", "Payments API retries must use idempotency keys; never retry a POST without one.",
                 "--type", "gotcha", "--tags", "payments,retries")  # fmt: skip
        first = _ID.findall(tour.run("add", "We deploy on Thursdays after the regression suite is green.",
                                     "--type", "decision", "--tags", "deploy", "--aliases", "release day;ship day"))[0]  # fmt: skip
        tour.say("Secrets never reach the file: they are masked in place (first 4 characters kept).")
        tour.run("add", f"The staging CI token is {FAKE_TOKEN} (rotate monthly)", "--type", "fact")
        tour.say("Personal memories never leave this machine. Chinese works too (bigram search).")
        tour.run("add", "我喜欢简洁的提交信息，中文注释也可以。", "--scope", "personal", "--type", "preference")
        tour.say("Search in plain words — question words are dropped, stems match.")
        tour.run("search", "when do we ship releases?")
        tour.run("search", "提交信息")
        tour.say("Facts change. Supersede keeps history and search answers with the newest version.")
        tour.run("supersede", first, "We deploy on Wednesdays now; Thursdays were too close to the weekend.")
        tour.run("search", "deploy day", "--explain")
        tour.say("Everything remembered, numbered across scopes, nothing truncated silently.")
        tour.run("list", "--scope", "both")
        tour.say("What the stored file looks like (plain Markdown with YAML frontmatter):")
        masked = _ID.findall(tour.run("search", "staging token", "--limit", "1"))[0]
        tour.run("show", masked)
        from .demo_team import team_tour

        team_tour(tour, base)
    print("\nDone — the sandbox is gone. Next: `open-memex add \"…\"` in your own repository, "
          "then `open-memex search …`.")  # fmt: skip
    return 0
