"""Keyword capture (reference scenarios 53–60; design §8, D65–D67): which sentences are
statements to the store, where they go, and which matches are dropped and why."""

from __future__ import annotations

from typing import Any

import pytest

from openmemex.capture import scan


def one(text: str) -> tuple[str, bool]:
    found = scan(text)
    assert len(found.hits) == 1, (text, found)
    return found.hits[0].body, found.hits[0].personal


def nothing(text: str) -> None:
    found = scan(text)
    assert found.hits == [], (text, found.hits)


# 53
def test_english_project_triggers() -> None:
    assert one("remember that this repo uses Bun, not Node") == ("this repo uses Bun, not Node", False)
    assert one("TIL: pytest -x stops at the first failure")[0] == "pytest -x stops at the first failure"
    assert one("Please note that the staging API is v2") == ("the staging API is v2", False)
    nothing("hello world")


# 54
@pytest.mark.parametrize(("text", "body", "personal"), [
    ("帮我记住：周五不发布", "周五不发布", True),
    ("请记住我喜欢用制表符", "喜欢用制表符", True),
    ("请记住：周五不发布", "周五不发布", False),
    ("帮我们记住：周五不发布", "周五不发布", False),
])  # fmt: skip
def test_chinese_routing_by_person(text: str, body: str, personal: bool) -> None:
    assert one(text) == (body, personal)


# 55
def test_remember_to_and_toronto() -> None:
    assert one("Remember to run the tests before pushing")[0] == "run the tests before pushing"
    assert one("remember Toronto office closes at 6pm")[0] == "Toronto office closes at 6pm"


# 56
def test_help_me_family() -> None:
    assert one("请帮我记住这个端口是 8443") == ("这个端口是 8443", True)
    assert one("帮我记录一下：周五不发布") == ("周五不发布", True)
    assert one("替我记录一下：周五不发布") == ("周五不发布", True)
    nothing("帮我记得带伞")
    assert one("Help me remember: my locker is 42") == ("my locker is 42", True)


# 57
def test_bare_verb_boundary() -> None:
    assert one("帮我记一下这个配置") == ("这个配置", True)
    assert one("帮我记住这个配置") == ("这个配置", True)
    assert one("替我记一下我住在杭州") == ("我住在杭州", True)
    assert one("帮我们记一下这个约定") == ("这个约定", False)
    nothing("替我记着这个配置")
    nothing("帮我们记得这个约定")
    assert one("帮我记：周五不发布") == ("周五不发布", True)


# 58
@pytest.mark.parametrize("text", [
    "别忘了带伞", "Don't forget the wifi password", "记得带伞", "remind me to call the vendor",
    "I always forget to run migrations", "save this file and run the tests", "I remember when we used Jenkins",
])  # fmt: skip
def test_narration_is_not_a_trigger(text: str) -> None:
    nothing(text)


@pytest.mark.parametrize(("text", "body"), [
    ("别忘了：周五不发布", "周五不发布"), ("别忘了,周五不发布", "周五不发布"),
    ("Don't forget that the cache is per region", "the cache is per region"),
    ("don't forget: rotate the signing keys", "rotate the signing keys"),
    ("note the API is v2", "the API is v2"),
    ("save this: deploys need the VPN", "deploys need the VPN"),
])  # fmt: skip
def test_marked_forms_capture_to_the_project(text: str, body: str) -> None:
    assert one(text) == (body, False)


# 59
def test_length_floor_is_reported_not_silent() -> None:
    found = scan("记住：这个")
    assert found.hits == [] and [(d.body, d.reason) for d in found.dropped] == [("这个", "too-short")]
    assert one("记住：这个配置") == ("这个配置", False)
    found = scan("记住我：OK")
    assert found.hits == [] and [(d.body, d.reason) for d in found.dropped] == [("OK", "too-short")]
    long = scan("remember that " + "x" * 2100)
    assert long.hits == [] and long.dropped[0].reason == "too-long"


def test_lines_are_scanned_separately_and_each_pattern_fires_once() -> None:
    found = scan("remember that builds use Bazel.\nremember that CI runs nightly!\n我觉得 tabs 更好")
    assert [(h.pattern, h.body) for h in found.hits] == [("remember", "builds use Bazel"), ("我觉得", "我觉得 tabs 更好")]


def test_statement_forms_keep_their_verb() -> None:
    assert one("我们决定使用 pnpm") == ("我们决定使用 pnpm", False)
    assert one("我喜欢简短的提交信息") == ("我喜欢简短的提交信息", True)


# 60
def test_dry_run_cli(cli: Any) -> None:
    result = cli("capture", "--dry-run", "remember: we deploy on Fridays. token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8")
    assert result.rc == 0
    assert "pattern: remember" in result.out and "we deploy on Fridays" in result.out
    assert "secret hit: yes" in result.out and "a1B2c3D4e5F6" not in result.out
    dropped = cli("capture", "--dry-run", "记住我：OK")
    assert dropped.rc == 0 and "NOT captured" in dropped.out and "floor: 3" in dropped.out
    assert "nothing would be captured" in cli("capture", "--dry-run", "hello there").out
    assert cli("capture", "remember x").rc == 2


@pytest.mark.parametrize("text", [
    "  note: This error originates from a subprocess, and is likely not a problem with pip.",
    "\tremember that this is indented tool output",
    "```\nremember that this is inside a pasted block\n```",
    "remember me on this device checkbox is broken",
    "til the build passes, keep retrying",
    "我觉得这个方案不太好，你再想想",
])  # fmt: skip
def test_pasted_material_and_talk_to_the_agent_do_not_trigger(text: str) -> None:
    nothing(text)


def test_text_after_a_closed_fence_still_triggers() -> None:
    assert one("```\nlog line\n```\nremember that the log rotates daily") == ("the log rotates daily", False)
