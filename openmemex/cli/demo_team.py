"""The team half of ``open-memex demo``: two teammates, one bare remote, real git.

Alice and Bob each have their own clone and their own data root. Git commands a person
would type themselves (clone, commit, merge) are run with the user's ``git`` and shown as
such; everything open-memex does is the real command, in-process.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from .demo import Tour

_ENV = ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_TERMINAL_PROMPT", "OPEN_MEMEX_HOME")  # fmt: skip


class Teammate:
    def __init__(self, tour: Tour, name: str, clone: Path, home: Path) -> None:
        self.tour, self.name, self.clone, self.home = tour, name, clone, home

    def _enter(self) -> None:
        os.chdir(self.clone)
        os.environ.update({
            "OPEN_MEMEX_HOME": str(self.home), "GIT_AUTHOR_NAME": self.name, "GIT_COMMITTER_NAME": self.name,
            "GIT_AUTHOR_EMAIL": f"{self.name.lower()}@example.com", "GIT_COMMITTER_EMAIL": f"{self.name.lower()}@example.com",
        })  # fmt: skip

    def memex(self, *args: str, expect: int = 0) -> str:
        self._enter()
        print(f"[{self.name}] ", end="")
        return self.tour.run(*args, expect=expect)

    def git(self, *args: str, show: bool = True, check: bool = True) -> str:
        self._enter()
        if show:
            print(f"[{self.name}] $ git {shlex.join(args)}")
        proc = subprocess.run(["git", *args], capture_output=True, text=True)
        if show:
            for line in (proc.stdout + proc.stderr).strip().splitlines()[:6]:
                print(f"  {line}")
        if check and proc.returncode != 0:
            raise SystemExit(f"demo step failed: git {shlex.join(args)}\n{proc.stderr}")
        return proc.stdout


def team_tour(tour: Tour, base: Path) -> None:
    import re

    if shutil.which("git") is None:
        print("\n(git is not installed: skipping the team part of the tour)")
        return
    saved = {k: os.environ.get(k) for k in _ENV}
    quiet = base / "gitconfig"
    quiet.write_text("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n")
    os.environ.update({"GIT_CONFIG_GLOBAL": str(quiet), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"})
    try:
        remote = base / "team.git"
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
        alice = Teammate(tour, "Alice", base / "alice" / "payments", base / "alice" / "data")
        bob = Teammate(tour, "Bob", base / "bob" / "payments", base / "bob" / "data")
        for person in (alice, bob):
            person.clone.parent.mkdir(parents=True)
        os.chdir(alice.clone.parent)
        subprocess.run(["git", "clone", "-q", str(remote), "payments"], check=True, capture_output=True)
        (alice.clone / "README.md").write_text("# payments\n")
        alice.git("add", "README.md", show=False)
        alice.git("commit", "-q", "-m", "initial", show=False)
        alice.git("push", "-q", "origin", "main", show=False)
        os.chdir(bob.clone.parent)
        subprocess.run(["git", "clone", "-q", str(remote), "payments"], check=True, capture_output=True)

        tour.say("The team flow. Alice and Bob each cloned the same repository and have their own data root.")
        memory = re.findall(r"\b[0-7][0-9A-HJKMNP-TV-Z]{25}\b", alice.memex(
            "add", "Refunds over 500 EUR need a second approver.", "--type", "constraint", "--tags", "refunds"))[0]  # fmt: skip
        tour.say("Alice submits the draft: one commit on her branch with only the memory file, then pushes.")
        alice.memex("submit", memory)
        alice.memex("push")
        tour.say("Bob pulls (fetch + fast-forward only) and his agent now finds Alice's lesson.")
        bob.memex("pull")
        bob.memex("search", "refund approver")
        tour.say("Both review the same memory at once: Alice approves it, Bob rejects it.")
        alice.memex("promote", memory)
        alice.git("commit", "-q", "-am", "approve refunds memory")
        alice.memex("push")
        bob.memex("promote", memory, "--reject", "--note", "the limit is 1000 EUR since March")
        bob.git("commit", "-q", "-am", "reject refunds memory")
        tour.say("Bob's pull refuses to merge for him: histories diverged, nothing is touched.")
        bob.memex("pull", expect=1)
        tour.say("Bob merges with git as usual; the memory file conflicts.")
        bob.git("merge", "origin/main", check=False)
        bob.memex("resolve")
        tour.say("open-memex resolves it field by field: the rejection is kept, both review entries survive.")
        bob.memex("resolve", memory)
        bob.git("commit", "-q", "--no-edit")
        bob.memex("push")
        alice.memex("pull")
        alice.memex("show", memory)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
