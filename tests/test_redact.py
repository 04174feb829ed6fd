"""Tests for openmemex.redact (D14: mask secrets in place, never refuse the write).

Every fake token is built by concatenation so this file does not itself look like a leak.
"""

from __future__ import annotations

import itertools

import pytest

from openmemex.redact import RULE_IDS, Finding, RedactResult, find_secrets, mask_value, redact

BODY = "A1b2" * 9  # 36 mixed alphanumerics
PEM_BEGIN = "-----BEGIN " + "RSA PRIVATE KEY-----"
PEM_END = "-----END " + "RSA PRIVATE KEY-----"
PEM = PEM_BEGIN + "\n" + "MIIEow" + "IBAAKCAQEA" + "\n" + "q7W3e9R2t5Y8" + "\n" + PEM_END
AWS_SECRET = "A1b2/C3d4+" * 4  # 40 base64 chars
GENERIC_VALUE = "Zx9Qw8Er7" + "Ty6Ui5Op4"
RANDOM_VALUE = "aB3dE5fG7hJ9kL1m" + "N2pQ4rS6tU8vW0xY"  # 32 distinct chars: 5 bits/char
JWT = "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "A1b2" * 5

# rule id -> (text, the raw secret that must disappear from the output)
SAMPLES: dict[str, tuple[str, str]] = {
    "private-key-block": ("key:\n" + PEM + "\nend", "MIIEow"),
    "anthropic-api-key": ("use sk-ant-" + "api03-" + BODY, "api03-" + BODY),
    "openai-admin-key": ("use sk-admin-" + BODY, BODY),
    "openai-key": ("use sk-proj-" + BODY + " here", BODY),
    "openai-session-key": ("cookie sm_" + BODY, BODY),
    "github-pat": ("token ghp_" + BODY, BODY),
    "github-oauth-token": ("token gho_" + BODY, BODY),
    "github-user-token": ("token ghu_" + BODY, BODY),
    "github-app-token": ("token ghs_" + BODY, BODY),
    "github-refresh-token": ("token ghr_" + BODY, BODY),
    "github-fine-grained-pat": ("pat github_pat_" + BODY + "_" + BODY, BODY),
    "aws-access-key-id": ("id AKIA" + "Q7W3E9R2T5Y8U1I4", "Q7W3E9R2T5Y8U1I4"),
    "slack-token": ("slack xoxb-" + "1234567890-abcdefXYZ", "1234567890-abcdefXYZ"),
    "google-api-key": ("maps AIza" + BODY, BODY),
    "npm-token": ("npm npm_" + BODY, BODY),
    "gitlab-pat": ("gl glpat-" + BODY[:24], BODY[:24]),
    "stripe-secret-key": ("stripe sk_live_" + BODY, BODY),
    "stripe-restricted-key": ("stripe rk_test_" + BODY, BODY),
    "stripe-webhook-secret": ("hook whsec_" + BODY, BODY),
    "jwt": ("jwt " + JWT, JWT[4:]),
    "bearer-token": ("curl -H 'Authorization: Bearer " + BODY + "'", BODY),
    "url-credentials": ("db postgres://admin:" + "hunter2pass" + "@db:5432/app", "hunter2pass"),
    "aws-secret-access-key": ('aws_secret_access_key = "' + AWS_SECRET + '"', AWS_SECRET),
    "generic-secret-assignment": ('api_key = "' + GENERIC_VALUE + '"', GENERIC_VALUE),
}


def test_every_builtin_rule_has_a_sample() -> None:
    assert len(RULE_IDS) == len(set(RULE_IDS))
    assert set(SAMPLES) == set(RULE_IDS)


@pytest.mark.parametrize(("rule_id", "sample"), SAMPLES.items(), ids=list(SAMPLES))
def test_builtin_rule_fires_and_masks(rule_id: str, sample: tuple[str, str]) -> None:
    text, raw = sample
    result = redact(text)
    assert result.rules == (rule_id,)
    assert result.masked
    assert raw not in result.text
    assert len(result.text) == len(text)


@pytest.mark.parametrize(
    ("text", "expected_rules"),
    [
        ("sk-" + BODY, ("openai-key",)),
        ("GITHUB_TOKEN=ghp_" + BODY, ("github-pat",)),  # specific rule wins over generic
        ('api_key = "sk-' + BODY + '"', ("openai-key",)),
        ("ASIA" + "Q7W3E9R2T5Y8U1I4", ("aws-access-key-id",)),
        ("AWS_SECRET_ACCESS_KEY=" + AWS_SECRET, ("aws-secret-access-key",)),
        ('{"password": "' + GENERIC_VALUE + '"}', ("generic-secret-assignment",)),
        ("DB_PASSWORD=" + GENERIC_VALUE, ("generic-secret-assignment",)),
        ("clientSecret: " + GENERIC_VALUE, ("generic-secret-assignment",)),
        ("access_token := '" + GENERIC_VALUE + "'", ("generic-secret-assignment",)),
        ("secret = " + "3f786850e387550f" + "dab836ed7e6dc881", ("generic-secret-assignment",)),
        ('deploy_key = "' + RANDOM_VALUE + '"', ("high-entropy-secret:deploy_key",)),
        ("deploy-key: " + RANDOM_VALUE, ("high-entropy-secret:deploy-key",)),
        ("settings.signing_salt=" + RANDOM_VALUE, ("high-entropy-secret:signing_salt",)),
        (
            "a ghp_" + BODY + " b AKIA" + "Q7W3E9R2T5Y8U1I4" + " c ghp_" + BODY[::-1],
            ("github-pat", "aws-access-key-id"),
        ),
    ],
)
def test_rules_reported(text: str, expected_rules: tuple[str, ...]) -> None:
    assert redact(text).rules == expected_rules


BENIGN = [
    "We decided to keep memories as Markdown files and review them through git.",
    "See https://example.com/path?x=1 for details.",
    "url: https://example.com/some/really/long/path/with/Segment123/and/More",
    "see https://cdn.example.com/app.js?v=" + RANDOM_VALUE + " for the bundle",
    "commit = 3f786850e387550fdab836ed7e6dc881de23001b",
    "sha256: " + "9f86d081884c7d659a2feaa0c55ad015" + "a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "integrity: sha512-" + RANDOM_VALUE + RANDOM_VALUE,
    "version: 1.2.3",
    "password: " + "a" * 24,
    'password = "' + "x" * 20 + '"',
    "token: abc",
    "max_tokens: 4096",
    "api_key: <your key here>",
    "password: ${DB_PASSWORD}",
    "note: " + "abcabcabcabcabcabcabcabc",  # long but low entropy
    "We need a task-management-system-for-the-whole-team and a scheduler.",
    "Rotate via disk-encryption-key-rotation-procedure-v2 weekly.",
    "Attach the risk-assessment-matrix-for-the-quarter.",
    "xghp_" + BODY,
    "mask-" + BODY,
    "sm_long_variable_name_here_ok",
    "Bearer tokens are described in the authentication-overview document.",
    "git@github.com:owner/repo.git and ssh://git@host:22/repo",
    "我们决定使用 SQLite 作为存储；密钥：见团队保险库。请记住：不要提交 .env 文件。",
    "",
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_passes_untouched(text: str) -> None:
    result = redact(text)
    assert result == RedactResult(text, (), 0)
    assert not result.masked
    assert find_secrets(text) == []


@pytest.mark.parametrize(
    ("text", "expected_output"),
    [
        ('api_key = "' + GENERIC_VALUE + '"', 'api_key = "Zx9Q' + "x" * 14 + '"'),
        ("DB_PASSWORD=" + GENERIC_VALUE, "DB_PASSWORD=Zx9Q" + "x" * 14),
        (
            'aws_secret_access_key: "' + AWS_SECRET + '"',
            'aws_secret_access_key: "A1b2' + "x" * 36 + '"',
        ),
        ("deploy_key = " + RANDOM_VALUE, "deploy_key = aB3d" + "x" * 28),
        ("id CUSTOM12345 end", "id CUSTOM12345 end"),  # no user pattern given
        ("token ghp_" + BODY + ".", "token ghp_" + "x" * 36 + "."),
        ("password: " + GENERIC_VALUE + ".", "password: Zx9Q" + "x" * 14 + "."),
        (
            "x " + PEM + "\ny",
            "x ----" + "x" * 27 + "\n" + "x" * 16 + "\n" + "x" * 12 + "\n" + "x" * 29 + "\ny",
        ),
    ],
)
def test_masking_output(text: str, expected_output: str) -> None:
    assert redact(text).text == expected_output


def test_several_secrets_all_masked_and_surroundings_intact() -> None:
    text = (
        "Deploy notes\n"
        "- gh: ghp_" + BODY + "\n"
        "- docs: https://example.com/path?x=1\n"
        '- api_key = "' + GENERIC_VALUE + '"\n'
        "- aws AKIA" + "Q7W3E9R2T5Y8U1I4" + " done\n"
    )
    result = redact(text)
    assert result.rules == ("github-pat", "generic-secret-assignment", "aws-access-key-id")
    assert len(result.text) == len(text)
    assert result.text.count("\n") == text.count("\n")
    assert "https://example.com/path?x=1" in result.text
    assert 'api_key = "Zx9Q' in result.text
    for raw in (BODY, GENERIC_VALUE, "Q7W3E9R2T5Y8U1I4"):
        assert raw not in result.text
    assert result.text.startswith("Deploy notes\n- gh: ghp_xxxx")


def test_pem_block_masked_whole() -> None:
    text = "before\n" + PEM + "\nafter"
    findings = find_secrets(text)
    assert [(f.rule, f.start, f.end, f.line) for f in findings] == [
        ("private-key-block", 7, 7 + len(PEM), 2)
    ]
    out = redact(text).text
    assert out.startswith("before\n----xxxxx")
    assert out.endswith("x\nafter")
    assert "BEGIN" not in out and "END" not in out


def test_truncated_pem_masked_to_end_of_text() -> None:
    text = "before\n" + PEM_BEGIN + "\nMIIEow" + "IBAAKCAQEA\nq7W3e9R2t5Y8\nnotes that follow"
    findings = find_secrets(text)
    assert [(f.rule, f.end) for f in findings] == [("private-key-block", len(text))]
    out = redact(text).text
    assert out.startswith("before\n----")
    assert set(out[len("before\n----") :]) <= {"x", "\n"}


@pytest.mark.parametrize(
    ("text", "expected_output", "spans"),
    [
        ("a <private>my home address</private> b", "a [REDACTED] b", 1),
        ("keep <private>everything\nafter this", "keep [REDACTED]", 1),
        ("<PRIVATE>x</Private> and <Private>y</PRIVATE>", "[REDACTED] and [REDACTED]", 2),
        ("a\n<private>\nline 1\nline 2\n</private>\nb", "a\n[REDACTED]\nb", 1),
        ("no tags </private> here", "no tags </private> here", 0),
    ],
)
def test_private_spans(text: str, expected_output: str, spans: int) -> None:
    result = redact(text)
    assert result.text == expected_output
    assert result.private_spans == spans
    assert not result.masked


def test_secret_inside_private_is_neither_reported_nor_counted() -> None:
    result = redact("x <private>ghp_" + BODY + "</private> y")
    assert result == RedactResult("x [REDACTED] y", (), 1)
    assert not result.masked


def test_private_and_secret_together() -> None:
    result = redact("<private>home</private> ghp_" + BODY)
    assert result.text == "[REDACTED] ghp_" + "x" * 36
    assert result.rules == ("github-pat",)
    assert result.private_spans == 1
    assert result.masked


def test_find_secrets_ignores_private_tags() -> None:
    text = "<private>ghp_" + BODY + "</private>"
    assert [f.rule for f in find_secrets(text)] == ["github-pat"]


def test_user_pattern_masks_and_reports_verbatim() -> None:
    result = redact("id CUSTOM12345 end", [r"CUSTOM\d+"])
    assert result.text == "id CUSTxxxxxxx end"
    assert result.rules == (r"CUSTOM\d+",)


@pytest.mark.parametrize("patterns", [["(unclosed"], ["[z-a]", "*oops"], ["a{99999999999}"]])
def test_invalid_user_pattern_is_ignored(patterns: list[str]) -> None:
    result = redact("id CUSTOM12345 end", patterns)
    assert result == RedactResult("id CUSTOM12345 end", (), 0)


def test_invalid_user_pattern_does_not_block_valid_ones() -> None:
    result = redact("id CUSTOM12345 end", ["(bad", r"CUSTOM\d+"])
    assert result.text == "id CUSTxxxxxxx end"
    assert result.rules == (r"CUSTOM\d+",)


def test_user_pattern_with_empty_matches_is_harmless() -> None:
    assert redact("plain text", ["x*"]) == RedactResult("plain text", (), 0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ""),
        ("a", "x"),
        ("abcd", "xxxx"),
        ("abcde", "abcdx"),
        ("sk-abcdefgh", "sk-axxxxxxx"),
        ("CUSTOM12345", "CUSTxxxxxxx"),
        ("ab\ncdef\nghi", "ab\ncxxx\nxxx"),  # line breaks kept
    ],
)
def test_mask_value(value: str, expected: str) -> None:
    assert mask_value(value) == expected
    assert len(mask_value(value)) == len(value)


def test_finding_lines_and_spans() -> None:
    token = "ghp_" + BODY
    key = "AKIA" + "Q7W3E9R2T5Y8U1I4"
    text = "line one\nline two " + token + "\n\nline four " + key + "\n"
    findings = find_secrets(text)
    assert findings == [
        Finding("github-pat", text.index(token), text.index(token) + len(token), 2),
        Finding("aws-access-key-id", text.index(key), text.index(key) + len(key), 4),
    ]


def test_name_value_finding_covers_only_the_value() -> None:
    text = "first\nAPI_KEY=" + GENERIC_VALUE
    (finding,) = find_secrets(text)
    assert finding.rule == "generic-secret-assignment"
    assert text[finding.start : finding.end] == GENERIC_VALUE
    assert finding.line == 2


def test_findings_sorted_and_non_overlapping() -> None:
    text = 'token = "ghp_' + BODY + '" then sk-' + BODY + " and ghp_" + BODY
    findings = find_secrets(text)
    assert [f.rule for f in findings] == ["github-pat", "openai-key", "github-pat"]
    for a, b in itertools.pairwise(findings):
        assert a.end <= b.start


def test_overlap_keeps_earliest_then_longest() -> None:
    text = "key AKIA" + "Q7W3E9R2T5Y8U1I4"
    findings = find_secrets(text, [r"key AKIA", r"AKIA\w+"])
    assert [(f.rule, f.start) for f in findings] == [("key AKIA", 0)]
    same_start = find_secrets(text, [r"AKIA"])  # same start: the longer built-in span wins
    assert [(f.rule, f.start, f.end) for f in same_start] == [("aws-access-key-id", 4, len(text))]


@pytest.mark.parametrize(
    "text",
    [sample[0] for sample in SAMPLES.values()]
    + [
        "mixed <private>p</private> ghp_" + BODY + "\n" + 'password: "' + GENERIC_VALUE + '"',
        "deploy_key = " + RANDOM_VALUE + "\nid CUSTOM12345",
    ],
)
def test_redaction_is_idempotent(text: str) -> None:
    once = redact(text, [r"CUSTOM\d+"])
    assert once.masked
    twice = redact(once.text, [r"CUSTOM\d+"])
    assert twice == RedactResult(once.text, (), 0)


def test_placeholder_tokens_are_not_reported() -> None:
    text = "example: ghp_" + "x" * 36 + " and sk-" + "x" * 24
    assert find_secrets(text) == []
