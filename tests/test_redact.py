"""Tests for openmemex.redact (D14: mask secrets in place, never refuse the write).

The generic rules (credentials given to a name, in prose, in URLs and headers), PEM keys,
what is never a secret, masking, the user's patterns and allowlist, and the write path
end to end. Per-provider rules are in test_redact_rules.py. Every value is generated.
"""

from __future__ import annotations

import base64
import itertools
import json
import random
import string
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from openmemex.redact import (
    RULE_IDS,
    Finding,
    RedactResult,
    UserRules,
    find_secrets,
    find_secrets_in_memory_file,
    mask_value,
    redact,
)

RNG = random.Random(20260901)
AN = string.ascii_letters + string.digits


@pytest.fixture(autouse=True)
def _seeded(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test draws its own values, whatever ran before it."""
    RNG.seed(zlib.crc32(request.node.nodeid.encode()))
    yield


def rand(n: int, alphabet: str = AN) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def password() -> str:
    """How people make passwords: a word, leetspeak, digits, punctuation."""
    word = RNG.choice(["dragon", "Summer", "falcon", "Winter", "orange", "Marble"]).replace("o", "0")
    return word + RNG.choice("!@#$%&*?_-+=~^") + rand(RNG.randint(2, 4), string.digits)


GITHUB = "ghp_" + rand(36)


def masked_at(text: str, raw: str) -> str:
    """The output of redact() where ``raw`` stood."""
    at = text.index(raw)
    return redact(text).text[at : at + len(raw)]


def assert_masked(text: str, raw: str) -> None:
    out = masked_at(text, raw)
    assert out == mask_value(raw), (text, redact(text).text)


def assert_untouched(text: str) -> None:
    assert find_secrets(text) == [], [(f.rule, f.value(text)) for f in find_secrets(text)]
    assert redact(text) == RedactResult(text, (), 0)


# ---------------------------------------------------------------------------------------------
# masking: the protocol's shape, only the secret, idempotent


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


def test_only_the_secret_is_masked_and_the_name_stays_readable() -> None:
    secret = password()
    text = f"DB_PASSWORD={secret}\nDB_HOST=db.internal"
    assert redact(text).text == f"DB_PASSWORD={mask_value(secret)}\nDB_HOST=db.internal"


def test_several_secrets_all_masked_and_surroundings_intact() -> None:
    text = (
        "Deploy notes\n"
        f"- gh: {GITHUB}\n"
        "- docs: https://example.com/path?x=1\n"
        '- api_key = "Zk39sLq8Xw72mNp4Rt6Y"\n'
        "- aws AKIA" + rand(16, string.ascii_uppercase) + " done\n"
    )
    result = redact(text)
    assert result.rules == ("github-pat", "generic-secret-assignment", "aws-access-key-id")
    assert len(result.text) == len(text) and result.text.count("\n") == text.count("\n")
    assert "https://example.com/path?x=1" in result.text
    assert 'api_key = "Zk39xxxxxxxxxxxxxxxx"' in result.text
    assert result.text.startswith("Deploy notes\n- gh: ghp_xxxx")


def test_redaction_is_idempotent_on_a_mixed_note() -> None:
    text = "\n".join(
        [
            f"token {GITHUB}",
            f"PGPASSWORD={password()} psql -h db",
            f"postgres://app:{rand(14)}@db:5432/app",
            f"Authorization: Bearer {rand(40)}",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE" + rand(60) + "\n" + rand(60) + "\n-----END RSA PRIVATE KEY-----",
            f'{{"private_key": "-----BEGIN PRIVATE KEY-----\\n{rand(64)}\\n-----END PRIVATE KEY-----\\n"}}',
            f"the token for staging is {rand(32)}.",
            f"deploy_key = {rand(40)}",
        ]
    )
    once = redact(text)
    assert len(once.rules) >= 7
    twice = redact(once.text)
    assert twice == RedactResult(once.text, (), 0)
    assert find_secrets(once.text) == []


def test_sentence_punctuation_is_not_part_of_the_value() -> None:
    secret = "hunter" + rand(3, string.digits)
    for text in (f"the password is {secret}.", f"pw is {secret}, ok?", f"(password: {secret})", f"password: {secret};"):
        (finding,) = find_secrets(text)
        assert finding.value(text) == secret, text


# ---------------------------------------------------------------------------------------------
# generic rules: a credential given to a name, in every syntax people use

STRONG_NAMES = ["DB_PASSWORD", "PGPASSWORD", "password", "dbPassword", "smtp_pass", "db.pw", "client_secret",
                "ACCESS_TOKEN", "apiKey", "x-api-key", "credentials", "passphrase", "SECRET_KEY"]  # fmt: skip
SYNTAXES: dict[str, Callable[[str, str], str]] = {
    "dotenv": lambda n, v: f"{n}={v}",
    "export": lambda n, v: f"export {n}='{v}'",
    "yaml": lambda n, v: f"db:\n  {n}: {v}\n  host: db.internal",
    "yaml-quoted": lambda n, v: f'{n}: "{v}"',
    "json": lambda n, v: json.dumps({n: v, "host": "db.internal"}),
    "toml": lambda n, v: f'[db]\n{n} = "{v}"',
    "ini": lambda n, v: f"[db]\n{n} = {v}",
    "python": lambda n, v: f'{n} = "{v}"',
    "python-typed": lambda n, v: f'{n}: str = "{v}"',
    "python-kwarg": lambda n, v: f'connect(host="db", {n}="{v}")',
    "python-dict": lambda n, v: f"config['{n}'] = '{v}'",
    "js": lambda n, v: f"const config = {{ {n}: '{v}' }};",
    "go": lambda n, v: f'{n} := "{v}"',
    "php": lambda n, v: f"'{n}' => '{v}',",
    "makefile": lambda n, v: f"{n} ?= {v}",
    "compose": lambda n, v: f"    environment:\n      - {n}={v}",
    "powershell": lambda n, v: f'$env:{n} = "{v}"',
    "cli-flag": lambda n, v: f"mytool login --{n} {v}",
    "cli-flag-eq": lambda n, v: f"mytool login --{n}={v}",
    "xml-attribute": lambda n, v: f'<datasource {n}="{v}" />',
    "markdown": lambda n, v: f"- **{n}**: `{v}`",
    "markdown-table": lambda n, v: f"| {n} | {v} |",
}


@pytest.mark.parametrize("syntax", sorted(SYNTAXES))
def test_generic_assignment_in_every_syntax(syntax: str) -> None:
    for name in STRONG_NAMES:
        if syntax.startswith("cli-flag") and not name.replace("-", "").isalnum():
            continue
        secret = password()
        text = SYNTAXES[syntax](name, secret)
        assert_masked(text, secret)
        assert name in redact(text).text  # the name stays readable


@pytest.mark.parametrize(
    "value",
    ["hunter2", "Tr0ub4dor&3horse", "S3cr3t!Pa55w0rd#2024", "Avatar-2039", "p@ss w0rd with spaces!",
     "django-insecure-7x$k#m2!q9z@w8e&r4t%y6u*i1o(p)a3s5d7f9", "Xy9!kLm2", "554003d3-9973-40b0-bd6f-9e61ca7525db"],
)  # fmt: skip
def test_values_with_punctuation_and_short_passwords(value: str) -> None:
    quoted = json.dumps({"password": value})
    assert_masked(quoted, value)
    if " " not in value:
        assert_masked(f"DB_PASSWORD={value}", value)
        assert_masked(f"password: {value}", value)


@pytest.mark.parametrize(
    ("template", "rule"),
    [
        ("The password for the staging database is {v}.", "generic-secret-prose"),
        ("FYI the deploy token is {v}, it expires Friday.", "generic-secret-prose"),
        ("pw is {v}", "generic-secret-prose"),
        ("password: {v}", "generic-secret-assignment"),
        ("Password for prod: {v}", "generic-secret-prose"),
        ("the secret key for prod is `{v}`", "generic-secret-prose"),
        ("the admin password was reset to **{v}** yesterday", "generic-secret-prose"),
        ("测试环境数据库密码是 {v} ，别外传。", "generic-secret-prose"),
        ("密码：{v}", "generic-secret-assignment"),
        ("machine api.acme.dev login deploy-bot password {v}", "netrc-password"),
        ("<password>{v}</password>", "generic-secret-assignment"),
        ('<add key="ClearTextPassword" value="{v}" />', "generic-secret-assignment"),
        ("https://api.example.com/v1/items?format=csv&access_token={v}&page=2", "url-query-secret"),
        ("jdbc:mysql://db:3306/app?user=app&password={v}&useSSL=true", "url-query-secret"),
        ("Server=tcp:acme.database.windows.net;User Id=sa;Password={v};Encrypt=true;", "generic-secret-assignment"),
    ],
)
def test_credentials_in_prose_and_other_forms(template: str, rule: str) -> None:
    secret = password().replace("&", "!")
    text = template.format(v=secret)
    assert_masked(text, secret)
    assert rule in redact(text).rules, redact(text).rules


def test_markdown_table_column_of_passwords() -> None:
    secrets = [password().replace("|", "!") for _ in range(3)]
    rows = "\n".join(f"| svc{i} | admin | {s} |" for i, s in enumerate(secrets))
    text = f"| service | user | password |\n|---|---|:---:|\n{rows}\n\nafter the table"
    result = redact(text)
    for secret in secrets:
        assert_masked(text, secret)
    assert "| service | user | password |" in result.text and "svc2 | admin |" in result.text


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ('deploy_key = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY"', "high-entropy-secret:deploy_key"),
        ("deploy-key: aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY", "high-entropy-secret:deploy-key"),
        ("settings.signing_salt=aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY", "high-entropy-secret:signing_salt"),
        ("WEBHOOK_SIGNING_SALT=" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "high-entropy-secret:WEBHOOK_SIGNING_SALT"),
        ("ENCRYPTION_KEY=" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "generic-secret-assignment"),
        ("APP_KEY=base64:" + base64.b64encode(b"k" * 7 + bytes(range(25))).decode(), "high-entropy-secret:APP_KEY"),
        ('"auth": "' + base64.b64encode(b"ci-bot:" + rand(20).encode()).decode() + '"', "high-entropy-secret:auth"),
    ],
)  # fmt: skip
def test_weak_names_need_machine_made_values(text: str, rule: str) -> None:
    assert redact(text).rules == (rule,)


@pytest.mark.parametrize(
    "text",
    [
        "key: value", "primary_key: id", "cache_key = 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
        "sort_key: created_at", "public_key = \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\"",
        "keyboard_layout: dvorak", "deploy_key = project__omx__3973e808fbe5", "salt: pepper",
    ],
)  # fmt: skip
def test_weak_names_with_ordinary_values(text: str) -> None:
    assert_untouched(text)


# ---------------------------------------------------------------------------------------------
# URLs, headers, curl


@pytest.mark.parametrize(
    ("url", "password_"),
    [
        ("postgres://app_user:{p}@db.internal:5432/app", None),
        ("redis://:{p}@cache:6379/0", None),
        ("mongodb+srv://admin:{p}@cluster0.x1y2z.mongodb.net/prod", None),
        ("amqps://orders:{p}@mq.internal/vhost", None),
        ("https://oauth2:{p}@gitlab.example.com/group/repo.git", None),
    ],
)
def test_url_credentials_mask_only_the_password(url: str, password_: str | None) -> None:
    secret = rand(20)
    text = "DATABASE_URL=" + url.format(p=secret)
    out = redact(text).text
    assert_masked(text, secret)
    assert out.replace(mask_value(secret), secret) == text  # nothing else changed
    assert "url-credentials" in redact(text).rules


def test_sentry_dsn_and_token_as_url_user() -> None:
    key = rand(32, "0123456789abcdef")
    dsn = f"SENTRY_DSN=https://{key}@o123456.ingest.sentry.io/1234567"
    assert redact(dsn).rules == ("sentry-dsn",)
    assert_masked(dsn, key)
    assert_masked(f"git clone https://{GITHUB}@github.com/acme/api.git", GITHUB)


@pytest.mark.parametrize(
    ("text", "raw", "rule"),
    [
        ("Authorization: Basic {b}", "{b}", "authorization-header"),
        ("curl -H 'Authorization: Bearer {t}' https://api.example.com", "{t}", "authorization-header"),
        ('headers = {{"Authorization": "token {t}"}}', "{t}", "authorization-header"),
        ("use Bearer {t} for the service call", "{t}", "bearer-token"),
        ("curl -u admin:{p} https://jenkins.internal/api/json", "{p}", "curl-basic-auth"),
        ("curl --user 'deploy:{p}' https://jenkins.internal", "{p}", "curl-basic-auth"),
    ],
)
def test_http_auth(text: str, raw: str, rule: str) -> None:
    values = {"b": base64.b64encode(f"admin:{password()}".encode()).decode(), "t": rand(40), "p": password().replace("'", "")}
    text, raw = text.format(**values), raw.format(**values)
    assert_masked(text, raw)
    assert rule in redact(text).rules


# ---------------------------------------------------------------------------------------------
# private keys


def _pem_body(lines: int = 6) -> str:
    return "\n".join(rand(64, AN + "+/") for _ in range(lines)) + "\n" + rand(20, AN + "+/") + "=="


@pytest.mark.parametrize("kind", ["RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ", "", "PGP "])
def test_pem_private_key_body_masked_whole_header_kept(kind: str) -> None:
    block = " BLOCK" if kind == "PGP " else ""
    body = ("Version: GnuPG v2\n\n" if kind == "PGP " else "") + _pem_body()
    head, tail = f"-----BEGIN {kind}PRIVATE KEY{block}-----", f"-----END {kind}PRIVATE KEY{block}-----"
    text = f"key for the bastion:\n{head}\n{body}\n{tail}\nrotate yearly"
    (finding,) = find_secrets(text)
    assert finding.rule == "private-key-block" and finding.line == 3
    assert finding.value(text) == body
    out = redact(text).text
    assert head in out and tail in out and out.endswith("rotate yearly")
    assert out.count("\n") == text.count("\n")
    assert set(out[text.index(body) + 4 : text.index(body) + len(body)]) <= {"x", "\n"}


def test_pem_json_escaped_indented_and_truncated() -> None:
    lines = [rand(64) for _ in range(4)]
    escaped = json.dumps({"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"})
    out = redact(escaped).text
    assert all(line[4:] not in out for line in lines) and "-----END PRIVATE KEY-----" in out
    assert json.loads(out)["type"] == "service_account"
    indented = "key: |\n  -----BEGIN EC PRIVATE KEY-----\n  " + "\n  ".join(lines) + "\n  -----END EC PRIVATE KEY-----\nname: x"
    assert all(line[4:] not in redact(indented).text for line in lines)
    truncated = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n\nnotes that follow stay readable"
    out = redact(truncated).text
    assert all(line[4:] not in out for line in lines) and out.endswith("notes that follow stay readable")


def test_putty_and_age_keys() -> None:
    private = "\n".join(rand(64) for _ in range(3))
    putty = f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPublic-Lines: 1\n{rand(60)}\nPrivate-Lines: 3\n{private}\nPrivate-MAC: {rand(64, '0123456789abcdef')}"
    assert_masked(putty, private)
    age = "AGE-SECRET-KEY-1" + rand(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L")
    assert redact(f"SOPS_AGE_KEY={age}").rules == ("age-secret-key",)


# ---------------------------------------------------------------------------------------------
# never masked

NEVER = [
    # hashes, digests, ids
    "Fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b.",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "checksum = " + rand(128, "0123456789abcdef"),
    "image: ghcr.io/acme/api@sha256:" + rand(64, "0123456789abcdef"),
    "golang.org/x/text v0.3.0 h1:g61tztE5qeGQ89tm6NTjjM9VPIm088od1l6aSorWRWG8=",
    '"integrity": "sha512-' + rand(86, AN + "+/") + '=="',
    "  integrity sha1-" + rand(27, AN + "+/") + "=",
    'hash = "sha256:' + rand(64, "0123456789abcdef") + '"',
    "id: 01M8NT07KSJQ3E9XDPFZ3H6BG2",
    "Superseded by 01HZX3KQ7B2M4N6P8R0T2V4X6Z yesterday.",
    '"request_id": "554003d3-9973-40b0-bd6f-9e61ca7525db"',
    "trace_id=554003d3-9973-40b0-bd6f-9e61ca7525db",
    # public keys
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rand(43) + " dev@laptop",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + rand(200, AN + "+/") + " ci@runner",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A" + rand(30) + "\n" + rand(64) + "\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE" + rand(44) + "\n" + rand(64) + "\n-----END CERTIFICATE-----",
    # base64 JSON that is not a JWT
    "next_cursor: " + base64.urlsafe_b64encode(b'{"page": 2, "after": "01HZX"}').decode().rstrip("="),
    # public client ids and publishable keys, documentation keys
    "GOOGLE_CLIENT_ID=123456789012-abcdefghijklmnopqrstuvwxyz012345.apps.googleusercontent.com",
    "STRIPE_PUBLISHABLE_KEY=pk_live_" + rand(40),
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    # prose that mentions credentials
    "the secret: remember_to_rotate_keys_monthly",
    "Never commit the password to git; use the vault.",
    "Passwords must be at least 12 characters long.",
    "The token expires after one hour, so refresh it.",
    "password: see the 1Password item 'Prod DB'",
    "token: required for private repos",
    "The secret is stored in AWS Secrets Manager under prod/db.",
    "secret_name: prod-db-credentials",
    "密钥：见团队保险库。请记住：不要提交 .env 文件。",
    '"password": "Enter your password"',
    "We need a task-management-system-for-the-whole-team and a scheduler.",
    # configuration about secrets
    "max_tokens: 4096", "token_type: bearer", "password_min_length: 12", "auth_method: oauth2",
    "PASSWORD_FILE=/run/secrets/db_password", "tokenizer: cl100k_base", "token: abc", "version: 1.2.3",
    "password_hash: $2b$12$" + rand(53, AN + "./"),
    "secretKeyRef:\n  name: db-credentials\n  key: password",
    # code that references a secret kept elsewhere
    "password = new_password", "if token == expected_token:", "auth = HTTPBasicAuth(user, password)",
    "git@github.com:acme/api.git", "ssh://git@gitlab.acme.dev:2222/infra.git", "https://ci-bot@bitbucket.org/acme/web.git",
    "contact: ops@acme.dev", "",
]  # fmt: skip


@pytest.mark.parametrize("text", NEVER)
def test_never_masked(text: str) -> None:
    assert_untouched(text)


# Look-alikes found by scanning 127 MB of installed Python packages: code about credentials
CODE = [
    "def sign(self, msg: bytes, key: Ed25519PrivateKey | Ed448PrivateKey) -> bytes:",
    "    private_key: ed25519.Ed25519PrivateKey, f_priv: _FragList,",
    'def convert(data: dict, token: "Token | None" = None):',
    "        self._token: Attribute[str] = NotSet",
    "    password: SecretStr",
    "    ACCESS_KEY = 'AWSAccessKeyId'",
    '    WaitForTaskToken = "waitForTaskToken"',
    '    "fail_on_invalid_token": InvalidNextTokenException,',
    '      "secretsmanager:GetSecretValue",',
    '    "Resource": "arn:aws:secretsmanager:*:*:secret:AmazonSageMaker-*",',
    '    "AWS::SecretsManager::Secret": "c85175a4ebcce361",',
    "    credentials = '%s:%s' % (unquote(user), unquote(password))",
    '_INIT_FACTORY_PAT = "__attr_factory_%s"',
    'SALT_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"',
    "        token_query: Final[int] = 0x0008",
    '        pad_token: Union[str, AddedToken] = "[PAD]",',
    "        Token.String: '#ansiyellow',",
    '        Token:                      "#d8dee9",',
    "        new_buffer_row[x + xpos - pw] = char2",
    "            namespace = self.whoami(token=token)[\"name\"]",
    "        authorization = self._get_param(\"authorization\")",
    '            f"Algorithm=HmacSHA256,Signature={encoded_signature.decode(\'utf-8\')}"',
    '        creds = " --username=" + auth',
    '        password = ":****"',
    'CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"',
    "EMRFS_SSE_KEY = 'fs.s3.enableServerSideEncryption'",
    "sos2zpk_signature = sos2tf_signature",
    '    signature="float64|complex64"',
    "    # cached token: `get_token()` may refresh it",
    '    verify_token="eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9...",',
    '    "--token": "Use a User Access Token. Prefer setting `HF_TOKEN` env var instead of passing `--token`.",',
    "    mhu = MultiHostUrl('https://foo.com:123,foo:bar@bar.com/path')",
    "    - 'github://org:repo@sha/path'",
    '    url = httpx.URL("HTTPS://jo%40email.com:a%20secret@example.com:1234/pa%20th?search=ab#anchorlink")',
    '    _regex = r"(?:key|token|secret|password|pass|pwd)[a-z_ -]*"',
    "| id | entry | language | pass_filenames |\n|---|---|---|---|\n| `gitleaks-system` | same as `gitleaks` | `system` | (default true) |",
    "| slack-token | `xox[baprs]-` + 10 or more `[A-Za-z0-9-]` |",
    "| 17_git_credential_bridge.py | pygit2 creds via the git credential helper |",
    '_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----")\n_END = re.compile(r"-----END PRIVATE KEY-----")',
    "    `AccountKey=[a-zA-Z0-9+\\/=]{88}`",
    "'https://x-access-token:TOKEN@github.com/acme/widgets.git'",
    "The project key is ``project__<name>__<12 hex of sha256>``.",
    "        + 'Credential=' + access_key + '/' + credential_scope",
    "    headers = {'x-amz-date': timestamp, 'Authorization': v4auth_header}",
    "    def get_test_files(self, dir, pat='test_*.py'):",
    "    pat = a*cos(b)*cos(c) + d*sin(e)",
    '    "output_token": "CloudFrontOriginAccessIdentityList.NextMarker",',
    '    "output_token": "NextContinuationToken || NextKeyMarker",',
    '    "CustomerMasterKeySpec": "RSA_2048",',
    '        (f"CI uses GITHUB_TOKEN=ghp_{pick(36)} until the rotation", "github"),',
    # each stands for a kind: a type annotation with an abbreviation, a grammar (RFC 7230's
    # ABNF), a CSS selector, a symbol spelling its name again, a $-rooted expression
    "fnmatch takes (name: AnyStr, pat: AnyStr) and returns bool",
    "    def connect(self, token: StrOrBytes, password: OptStr = None) -> None:",
    "Per RFC 7230: token = 1*tchar",
    "    auth-scheme = token\n    token68 = 1*( ALPHA / DIGIT )\n    credentials = 1*SP",
    "Style the marker with .special-token:empty::before{ content: \"\" }",
    "input.api-key:focus, .token:not(.x) > span {",
    "Set PKCS8_PRIV_KEY_INFO = pkcs8_priv_key_info_st in the binding",
    "    signature_cache1 = signature_cache1",
    "const apiKey = API_KEY_HEADER;",
    'API Gateway uses "ApiKeySelectionExpression": "$request.header.x-api-key"',
    '"token_path": "$.auth.access_token"',
]  # fmt: skip

# ... and near misses of those kinds, which are still credentials
STILL_SECRETS = [
    ("password: AnyStr", "AnyStr"),  # not in a parameter list: YAML, where random letters are a password
    ("password: StrPtr9x", "StrPtr9x"),
    ("password = Password2024", "Password2024"),
    ("token = 1*Tchar9x", "1*Tchar9x"),
    (".api-token: Zq8vT2pLmN4x", "Zq8vT2pLmN4x"),
    ('"password": "$ecret.Pa55word!"', "$ecret.Pa55word!"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "raw"), STILL_SECRETS)
def test_near_misses_of_code_shapes_are_still_masked(text: str, raw: str) -> None:
    assert_masked(text, raw)


@pytest.mark.parametrize("text", CODE)
def test_code_about_credentials_is_not_a_credential(text: str) -> None:
    assert_untouched(text)


PLACEHOLDERS = [
    "<YOUR_KEY>", "<password>", "${DB_PASSWORD}", "$DB_PASSWORD", "{{ secret }}", "{{ .Values.db.password }}",
    "${{ secrets.DB_PASSWORD }}", "%(password)s", "%DB_PASSWORD%", "xxxxxxxxxxxxxxxx", "****", "changeme",
    "REDACTED", "[REDACTED]", "...", "your_api_key_here", "YOUR_API_KEY", "ghp_" + "x" * 36, "hunt" + "x" * 6,
]  # fmt: skip
REFERENCES = [
    "os.environ['DB_PASSWORD']", "os.getenv('API_KEY')", "process.env.GITHUB_TOKEN", "settings.OAUTH_CLIENT_SECRET",
    "get_random_secret_key()", "config.db.password", "$this->secret", "Config::get('app.key')", "getpass.getpass()",
    "!vault |", "*db_password",
]  # fmt: skip


@pytest.mark.parametrize("value", PLACEHOLDERS + REFERENCES)
def test_placeholders_and_references(value: str) -> None:
    for text in (f"DB_PASSWORD={value}", f"password: {value}", f"api_key = {value}", f"token: {value}"):
        assert_untouched(text)
    if value not in REFERENCES:
        assert_untouched(json.dumps({"password": value}))
        assert_untouched(f"postgres://app:{value}@db:5432/app")
        assert_untouched(f"Authorization: Bearer {value}")


# ---------------------------------------------------------------------------------------------
# passwords made of words: a password where the syntax states the value, prose elsewhere

# Each of these was stored verbatim: words without digits counted as prose wherever they stood.
WORD_PASSWORDS = [
    ("DB_PASSWORD=blueberry", "blueberry"),
    ("ADMIN_PASSWORD=letmein", "letmein"),
    ("DB_PASSWORD=correct-horse-battery-staple", "correct-horse-battery-staple"),
    ('password: "correct horse battery staple"', "correct horse battery staple"),
    ('{"password": "correct horse battery staple", "host": "db.internal"}', "correct horse battery staple"),
    ("export ADMIN_PASSWORD='letmein'", "letmein"),
    ("export DB_PASSWORD=correct_horse_battery_staple", "correct_horse_battery_staple"),
    ("PGPASSWORD=blueberry psql -h db.internal", "blueberry"),
    ("services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: blueberry\n", "blueberry"),
    ("    environment:\n      - POSTGRES_PASSWORD=blueberry", "blueberry"),
    ('smtp_pass = "blueberry"', "blueberry"),
    ("os.environ['DB_PASSWORD'] = 'letmein'", "letmein"),
    ("mysql --user root --password letmein -h db.internal", "letmein"),
    ("docker login -u deploy --password letmein \\", "letmein"),
    ("run `mytool login --password=blueberry` once", "blueberry"),
    ("postgres://app:blueberry@db.internal:5432/app", "blueberry"),
    ("curl -u admin:letmein https://jenkins.internal/api/json", "letmein"),
    ("https://api.example.com/login?user=bob&password=blueberry", "blueberry"),
    ("machine api.acme.dev login deploy password blueberry", "blueberry"),
    ("<password>blueberry</password>", "blueberry"),
    ('<add key="ClearTextPassword" value="letmein" />', "letmein"),
    ("Server=tcp:db;User Id=sa;Password=blueberry;Encrypt=true;", "blueberry"),
    ("password=blueberry", "blueberry"),
    ("SESSION_SECRET=keyboard-cat", "keyboard-cat"),
    ("app.use(session({ secret: 'keyboard cat' }))", "keyboard cat"),
    ('wifi_passphrase: "correct horse battery staple"', "correct horse battery staple"),
]  # fmt: skip

# Stored verbatim before: a Capitalised word in an environment variable, and lower-case words
# on a line of an INI section or a YAML mapping — the syntax of the file states the value
CONFIG_WORD_PASSWORDS = [
    ("DB_PASSWORD=Blueberry", "Blueberry"),
    ("ADMIN_PASSWORD=Letmein\nLOG_LEVEL=info", "Letmein"),
    ("DB_PASSWORD=Correct-Horse-Battery-Staple", "Correct-Horse-Battery-Staple"),
    ("SMTP_PASSWORD=Correct_horse_battery", "Correct_horse_battery"),
    ('export ADMIN_PASSWORD="Blueberry"', "Blueberry"),
    ("PGPASSWORD=Blueberry psql -h db.internal", "Blueberry"),
    ("    environment:\n      - POSTGRES_PASSWORD=Blueberry", "Blueberry"),
    ("[database]\nhost = db.internal\nuser = app\npassword = blueberry\n", "blueberry"),
    ("[client]\n; ~/.my.cnf\nuser = root\n\npassword = correct-horse-battery-staple ; rotate monthly\n",
     "correct-horse-battery-staple"),
    ("[pypi]\nusername: fred\npassword: sekrit\n", "sekrit"),
    ("```ini\n[smtp]\nserver = mail.internal\nsmtp_pass = letmein\n```", "letmein"),
    ("database:\n  host: db.internal\n  password: blueberry\n", "blueberry"),
    ("smtp:\n  password: letmein\n", "letmein"),
    ("user: admin\npassword: blueberry  # rotate monthly\n", "blueberry"),
    ("- name: staging\n  db_password: correct-horse-battery-staple\n", "correct-horse-battery-staple"),
    ("Staging login:\n\n```yaml\nauth:\n  username: deploy\n  password: correct_horse_battery\n```\n",
     "correct_horse_battery"),
]  # fmt: skip

# … and their look-alikes: status words, types, references, templates and code on the same lines
CONFIG_WORDS_NOT_PASSWORDS = [
    "password: rotated", "password: required", "Password: Incomplete", "PASSWORD=SECRET", "PASSWORD=Required",
    "return true if -debug-pass=Executions", "password = None", "[database]\nuser = app\npassword = None",
    "password = getpass()", "[database]\nuser = app\npassword = getpass()", "Password: see the vault",
    "db:\n  user: app\n  password: !vault |\n    $ANSIBLE_VAULT;1.1;AES256", "db:\n  user: app\n  password: ${DB_PASSWORD}",
    "[db]\nuser = app\npassword = %(pw)s", "[db]\npassword = {{ db_password }}",
    "database:\n  user: app\n  password: rotated", "database:\n  user: app\n  password: pending",
    "database:\n  user: app\n  password: expired", "database:\n  user: app\n  password: hashing",
    "user: app\npassword: stored in the vault", "[db]\npassword = blueberry for now, rotate it",
    "- User: admin\n- Password: see the vault", "def connect(user, password):\n    password = answer\n",
    "class Login:\n    user: str\n    password: float\n", "const creds = {\n  user: name,\n  password: answer\n}",
    "f(DB_PASSWORD=Answer)", "PASSWORD=Wachtwoord", "ADMIN_PASSWORD=Admin", '"PASSWORD": "Parola"',
    "[pypi]\nusername:me\npassword:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "APP_SECRET=Tls-certs", "password: Blueberry",
    "- name: add the deploy user\n  user:\n    name: deploy\n    update_password: always",
    "auth:\n  hasher: sha256\n  password: bcrypt", "lv:\n  login:\n    username: lietotājs\n    password: parole", "policy:\n  password: alphanumeric\n  rotation: monthly",
    "rules:\n  username: lowercase\n  password: mixedcase", "steps:\n  login: manual\n  password: rotate",
    "policy:\n  username: lowercase\n  password: uppercase", "[credential]\nhelper = store\npassword = cache",
    "ldap:\n  bind: cn\n  password: anonymous", "db:\n  user: app\n  password: envvar",
]  # fmt: skip

# … and words that stay: prose, placeholders, references, descriptions, types, labels and
# code, the false alarms the prose rule exists for, near each syntax that now takes words
WORDS_NOT_PASSWORDS = [
    # prose and placeholders
    "password: required", "password: optional", "token = none", "secret: see the vault", 'secret: "see the vault"',
    "API_KEY=your-api-key-here", "password: <your password>", "PASSWORD=changeme", "DB_PASSWORD=required",
    "DB_PASSWORD=none", "ADMIN_PASSWORD=prompt", "DB_PASSWORD=example", "DB_PASSWORD=your_password",
    "DB_PASSWORD=default_password", "MYSQL_ROOT_PASSWORD=root", "DB_PASSWORD=SECRET", 'password: "plain text"',
    '"password": "dummy value"', 'password = "hidden field"', "DB_PASSWORD: stored in the vault", "DB_PASSWORD: rotated",
    "Password: unchanged", "password: rotated", "token: required for private repos",
    # references
    'password = os.environ["DB_PASSWORD"]', "token: ${{ secrets.GH_TOKEN }}", "DB_PASSWORD=$DB_PASS",
    "auth: bearer", 'existingSecret: "grafana"',
    # labels (i18n), types, validation rules, code
    '"password": "Enter your password"', '"password": "Mot de passe"', '"password": "Kennwort"', '"token": "Token"',
    '"password": "hidden"', "'password' => 'confirmed',", "password: string", "password: SecretStr",
    "PR_EMS_AB_AUTHORIZED_PASSWORD: Incomplete", "connect(host=h, password=answer)", "    password=answer,",
    "password = new_password", "             'pass': 'bandpass',", "return true if -debug-pass=Executions",
    # command-line help and prose about flags
    "--password PASSWORD", "  --password TEXT   the password to use", "  --password string   the password",
    "--password <pw>", "--password prompts for it on a terminal",
    "information can be provided via the --username and --password options",
    'raise CLIError("--registry-password requires --registry-username.")',
    # URLs and netrc in docs
    'export http_proxy="http://proxyuser:proxypass@proxyhost:port"', "postgresql://scott:tiger@localhost/test",
    "http://foo:bar@example.com", '  " mipf : a:machine a:id password filename   Use ftp',
    # a secret named, not given (a stored secret's name has no blanks)
    'secret: "tls-certs"', '"secret": "kubernetes"', "docker build --secret app-config .", "client_secret=rotated",
]  # fmt: skip
WORDS = ["blueberry", "harbor", "lantern", "meadow", "walnut", "copper", "thimble", "orchid", "glacier", "saddle"]
# the names of credentials people choose: a password, a passphrase (a shared secret takes
# words in fewer places: it names a stored secret as often, see SECRET_NAMES_A_SECRET)
CHOSEN_NAMES = ["DB_PASSWORD", "PGPASSWORD", "password", "dbPassword", "smtp_pass", "db.pw", "passphrase"]
# syntaxes that state the value: quoted, NAME=value, a flag on a command line, Markdown code
STATED = ["dotenv", "export", "yaml-quoted", "json", "toml", "python", "python-typed", "python-kwarg", "python-dict",
          "js", "go", "php", "compose", "powershell", "cli-flag", "cli-flag-eq", "xml-attribute", "markdown"]  # fmt: skip


def passphrase(sep: str) -> str:
    """Diceware-style: three or four words from a list, joined by ``sep``."""
    return sep.join(RNG.sample(WORDS, RNG.randint(3, 4)))


@pytest.mark.parametrize(("text", "raw"), WORD_PASSWORDS)
def test_a_password_made_of_words_is_masked_where_the_syntax_states_it(text: str, raw: str) -> None:
    assert_masked(text, raw)


@pytest.mark.parametrize("syntax", STATED)
def test_words_given_to_a_password_in_every_syntax_that_states_the_value(syntax: str) -> None:
    for name in CHOSEN_NAMES:
        if syntax.startswith("cli-flag") and not name.replace("-", "").isalnum():
            continue
        if syntax == "compose" and not name.isupper():
            continue  # `- password=…` in a compose list: an environment variable's name is upper case
        for secret in (RNG.choice(WORDS), passphrase("-"), passphrase("_")):
            assert_masked(SYNTAXES[syntax](name, secret), secret)


@pytest.mark.parametrize("text", WORDS_NOT_PASSWORDS)
def test_words_that_describe_refer_or_label_are_not_passwords(text: str) -> None:
    assert_untouched(text)


@pytest.mark.parametrize(("text", "raw"), CONFIG_WORD_PASSWORDS)
def test_a_config_file_states_a_password_of_words(text: str, raw: str) -> None:
    assert_masked(text, raw)


@pytest.mark.parametrize("syntax", ["yaml", "ini", "dotenv", "export", "compose"])
def test_words_given_to_a_password_in_a_config_block_or_an_environment_variable(syntax: str) -> None:
    """YAML's ``password: word`` among sibling keys and INI's ``password = word`` under a
    section take lower-case words; an environment variable's ``NAME=Value`` Capitalised ones."""
    for name in CHOSEN_NAMES:
        if syntax in ("dotenv", "export", "compose") and not name.isupper():
            continue
        for secret in (RNG.choice(WORDS), passphrase("-"), passphrase("_")):
            if syntax in ("dotenv", "export", "compose"):
                secret = "-".join(w.capitalize() for w in secret.split("-"))
            assert_masked(SYNTAXES[syntax](name, secret), secret)


@pytest.mark.parametrize("text", CONFIG_WORDS_NOT_PASSWORDS)
def test_config_lines_whose_words_are_not_a_password(text: str) -> None:
    assert_untouched(text)


def test_words_given_to_an_issued_credential_or_in_prose_stay_prose() -> None:
    """Tokens and API keys are machine-made by the service that issues them: a word given to
    one is a placeholder (``API_KEY=demo``). A lone unquoted ``password: word`` line, with no
    sibling key to make it YAML, reads as a status as often as a password ("password:
    rotated"); quoting it says it is the value."""
    word = RNG.choice(WORDS)
    for text in (f"GITHUB_TOKEN={word}", f"API_KEY={passphrase('-')}", f"password: {word}",
                 f"the password for staging is {word}", f"| password | {word} |"):  # fmt: skip
        assert_untouched(text)
    assert_masked(f'password: "{word}"', word)


# ---------------------------------------------------------------------------------------------
# <private>, user patterns, allowlist, inline marker


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
    assert redact(f"x <private>{GITHUB}</private> y") == RedactResult("x [REDACTED] y", (), 1)
    result = redact(f"<private>home</private> {GITHUB}")
    assert result.text == "[REDACTED] ghp_" + "x" * 36 and result.rules == ("github-pat",) and result.masked


def test_user_pattern_masks_and_reports_verbatim() -> None:
    result = redact("id CUSTOM12345 end", [r"CUSTOM\d+"])
    assert result.text == "id CUSTxxxxxxx end"
    assert result.rules == (r"CUSTOM\d+",)
    assert redact(result.text, [r"CUSTOM\d+"]) == RedactResult(result.text, (), 0)


@pytest.mark.parametrize("patterns", [["(unclosed"], ["[z-a]", "*oops"], ["a{99999999999}"], ["x*"]])
def test_invalid_or_empty_user_patterns_are_harmless(patterns: list[str]) -> None:
    assert redact("id CUSTOM12345 end", patterns) == RedactResult("id CUSTOM12345 end", (), 0)
    assert redact("id CUSTOM12345 end", ["(bad", r"CUSTOM\d+"]).rules == (r"CUSTOM\d+",)


def test_allowlist_exact_values_and_regexes() -> None:
    secret = password()
    text = f"DB_PASSWORD={secret}\nAPI_TOKEN={GITHUB}"
    assert [f.rule for f in find_secrets(text, allowlist=[secret])] == ["github-pat"]
    assert find_secrets(text, allowlist=[secret, r"ghp_[A-Za-z0-9]{36}"]) == []
    assert find_secrets(text, allowlist=["ghp_"]) != []  # a regex must match the whole value
    assert [f.rule for f in find_secrets(text, allowlist=["(unclosed"])] == ["generic-secret-assignment", "github-pat"]
    # UserRules (what Config.redact_patterns returns) carries the allowlist to every caller
    rules = UserRules([r"CUSTOM\d+"], [secret])
    assert redact(text + "\nid CUSTOM12345", rules).rules == ("github-pat", r"CUSTOM\d+")


def test_inline_marker_exempts_its_line_only() -> None:
    text = f"example key for the docs: {GITHUB}  # open-memex:allow\nreal one: ghp_{rand(36)}"
    (finding,) = find_secrets(text)
    assert finding.line == 2
    assert redact(text).text.startswith(f"example key for the docs: {GITHUB}")


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r", "\x85", "\u2028", "\u2029"], ids=["lf", "crlf", "cr", "nel", "ls", "ps"])
def test_inline_marker_exempts_its_line_only_whatever_ends_the_line(eol: str) -> None:
    """A file whose lines end in CR alone (or NEL, U+2028, U+2029) was one line to the marker,
    so one ``open-memex:allow`` exempted every secret in it. Line numbers count the same breaks."""
    real = f"ghp_{rand(36)}"
    text = f"intro{eol}example key for the docs: {GITHUB}  # open-memex:allow{eol}real one: {real}{eol}"
    (finding,) = find_secrets(text)
    assert (finding.value(text), finding.line, finding.col) == (real, 3, 11)
    assert redact(text).text == text.replace(real, mask_value(real))


# ---------------------------------------------------------------------------------------------
# findings: positions for a scan command


def test_finding_lines_columns_and_values() -> None:
    key = "AKIA" + rand(16, string.ascii_uppercase)
    text = f"line one\nline two {GITHUB}\n\n  four {key}\n"
    findings = find_secrets(text)
    assert findings == [
        Finding("github-pat", text.index(GITHUB), text.index(GITHUB) + len(GITHUB), 2, 10),
        Finding("aws-access-key-id", text.index(key), text.index(key) + len(key), 4, 8),
    ]
    assert findings[0].value(text) == GITHUB
    assert findings[0].masked(text) == "ghp_" + "x" * 36


def test_findings_sorted_non_overlapping_specific_rule_wins() -> None:
    text = f'GITHUB_TOKEN="{GITHUB}" then api_key = sk-{rand(40)} and "password": "{GITHUB}"'
    findings = find_secrets(text)
    assert [f.rule for f in findings] == ["github-pat", "openai-key", "github-pat"]
    for a, b in itertools.pairwise(findings):
        assert a.end <= b.start
    anthropic = "sk-ant-api03-" + rand(93, AN + "-_") + "AA"
    assert [f.rule for f in find_secrets(anthropic)] == ["anthropic-api-key"]


def test_rule_ids_are_unique_and_cover_the_families() -> None:
    assert len(RULE_IDS) == len(set(RULE_IDS)) and len(RULE_IDS) >= 150
    for rule in ("generic-secret-assignment", "generic-secret-prose", "url-credentials", "private-key-block", "jwt"):
        assert rule in RULE_IDS


def test_memory_file_scan_skips_generated_values_only() -> None:
    ulid = "01M8NT07KSJQ3E9XDPFZ3H6BG2"
    text = f"---\nid: {ulid}\ncreated_at: \"2026-01-01T00:00:00Z\"\n---\n\nbody with token = {GITHUB}\n"
    (finding,) = find_secrets_in_memory_file(text)
    assert (finding.rule, finding.line) == ("github-pat", 6)
    assert [f.rule for f in find_secrets_in_memory_file(f"---\nsupersedes: {GITHUB}\n---\nbody\n")] == ["github-pat"]


# ---------------------------------------------------------------------------------------------
# the write path, end to end


def _stored(data_root: Path) -> str:
    return "\n".join(p.read_text() for p in data_root.rglob("*.md"))


def test_add_stores_secrets_masked(cli: Any, data_root: Path) -> None:
    secret = password()
    result = cli("add", f"staging db: DB_PASSWORD={secret}; ci token {GITHUB}", "--json")
    assert result.rc == 0, result.err
    doc = json.loads(result.out)
    assert doc["status"] == "saved" and doc["masked"] == ["generic-secret-assignment", "github-pat"]
    stored = _stored(data_root)
    assert secret not in stored and GITHUB not in stored
    assert f"DB_PASSWORD={mask_value(secret)};" in stored and "ghp_xxxx" in stored


def test_config_allowlist_and_marker_reach_the_write_path(cli: Any, data_root: Path) -> None:
    example = "ghp_" + rand(36)
    assert cli("config", "set", "redactAllowlist", json.dumps([example])).rc == 0
    assert json.loads(cli("config", "get", "redactAllowlist").out) == [example]
    result = cli("add", f"docs use the example token {example} and the real {GITHUB}", "--json")
    assert json.loads(result.out)["masked"] == ["github-pat"]
    stored = _stored(data_root)
    assert example in stored and GITHUB not in stored
    kept = "ghp_" + rand(36)
    cli("add", f"a deliberate sample {kept} open-memex:allow", "--scope", "personal")
    assert kept in _stored(data_root)
    Path("note.md").write_text(f"example {example}, real {GITHUB}\n")
    redacted = json.loads(cli("redact", "note.md", "--json").out)
    assert redacted["masked"] == ["github-pat"] and example in redacted["text"] and GITHUB not in redacted["text"]


def test_add_stores_a_password_made_of_words_masked(cli: Any, data_root: Path) -> None:
    """``add "staging: DB_PASSWORD=blueberry"`` stored the password as written."""
    result = cli("add", "staging: DB_PASSWORD=blueberry; wifi passphrase: \"correct horse battery staple\"", "--json")
    assert result.rc == 0 and json.loads(result.out)["masked"] == ["generic-secret-assignment"]
    stored = _stored(data_root)
    assert "blueberry" not in stored and "horse battery" not in stored
    assert "DB_PASSWORD=bluexxxxx;" in stored and '"corrxxxxxxxxxxxxxxxxxxxxxxxx"' in stored


def test_add_stores_code_about_credentials_as_written(cli: Any, data_root: Path) -> None:
    """``pat: AnyStr`` (a type annotation) was stored as ``pat: AnySxx``: a false alarm on the
    write path destroys the text the user wanted kept."""
    text = "fnmatch takes (name: AnyStr, pat: AnyStr) and returns bool; RFC 7230: token = 1*tchar"
    result = cli("add", text, "--json")
    assert result.rc == 0 and json.loads(result.out)["masked"] == []
    assert text in _stored(data_root)


def test_invalid_allowlist_in_config_is_reported(cli: Any) -> None:
    assert cli("config", "set", "redactAllowlist", "[5]").rc == 2
    assert cli("config", "set", "redactAllowlist", '["ok", ""]').rc == 2
