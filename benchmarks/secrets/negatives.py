"""Hard negatives: snippets that look like secrets to a regex but are not, and that a
note-taking user expects to find unchanged. Each kind comes from the issue's list of
things seen masked though harmless, or from the look-alikes scanners are known to flag."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from gen import WORDS, Gen


def _b64json(g: Gen) -> str:
    doc = {"page": g.rng.randint(2, 90), "after": g.ulid(), "filter": g.choice(WORDS)}
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")


def _ssh_pub(g: Gen) -> str:
    return "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + g.b64(43) + " dev@laptop"


def _rsa_pub(g: Gen) -> str:
    return "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + g.b64(300) + " ci@runner"


def _public_pem(g: Gen) -> str:
    body = "\n".join(g.b64(64) for _ in range(5))
    return f"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{g.b64(20)}\n{body}\n-----END PUBLIC KEY-----"


def _cert(g: Gen) -> str:
    body = "\n".join(g.b64(64) for _ in range(6))
    return f"-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE{g.b64(44)}\n{body}\n-----END CERTIFICATE-----"


# kind -> a generator of one snippet
KINDS: dict[str, Callable[[Gen], str]] = {
    "git-sha": lambda g: f"Fixed in commit {g.hex(40)} (see the PR).",
    "git-sha-short": lambda g: f"Reverted {g.hex(7)} and {g.hex(12)} after the incident.",
    "sha256-digest": lambda g: f"sha256: {g.hex(64)}",
    "sha256-sum-line": lambda g: f"{g.hex(64)}  open_memex-0.1.0-py3-none-any.whl",
    "sha512-hex": lambda g: f"checksum = {g.hex(128)}",
    "docker-digest": lambda g: f"image: ghcr.io/acme/api@sha256:{g.hex(64)}",
    "go-sum": lambda g: f"golang.org/x/{g.choice(WORDS)} v0.{g.digits(2)}.0 h1:{g.b64(43)}=",
    "npm-integrity": lambda g: f'"integrity": "sha512-{g.b64(86)}=="',
    "yarn-integrity": lambda g: f"  integrity sha1-{g.b64(27)}=",
    "poetry-hash": lambda g: f'{{file = "{g.choice(WORDS)}-1.2.3.tar.gz", hash = "sha256:{g.hex(64)}"}}',
    "ulid": lambda g: f"id: {g.ulid()}",
    "ulid-in-prose": lambda g: f"Superseded by {g.ulid()} yesterday.",
    "uuid": lambda g: f'"request_id": "{g.uuid()}"',
    "uuid-trace": lambda g: f"trace_id={g.uuid()} span_id={g.hex(16)}",
    "ssh-ed25519-public-key": _ssh_pub,
    "ssh-rsa-public-key": _rsa_pub,
    "public-key-pem": _public_pem,
    "certificate-pem": _cert,
    "authorized-keys-name": lambda g: f"public_key = \"{_ssh_pub(g)}\"",
    "base64-json-cursor": lambda g: f"next_cursor: {_b64json(g)}",
    "base64-json-flag": lambda g: f'curl "https://api.acme.dev/items?cursor={_b64json(g)}"',
    "google-oauth-client-id": lambda g: f"GOOGLE_CLIENT_ID={g.digits(12)}-{g.pick('abcdefghijklmnopqrstuvwxyz0123456789', 32)}.apps.googleusercontent.com",
    "stripe-publishable-key": lambda g: f"STRIPE_PUBLISHABLE_KEY=pk_live_{g.alnum(99)}",
    "stripe-publishable-test": lambda g: f"publishableKey: 'pk_test_{g.alnum(24)}'",
    "aws-example-access-key": lambda g: "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "aws-example-secret": lambda g: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "placeholder-angle": lambda g: g.choice(["OPENAI_API_KEY=<YOUR_KEY>", "api_key: <your-api-key>", "password: <password>", "token = \"<TOKEN>\""]),
    "placeholder-env-ref": lambda g: g.choice(["DB_PASSWORD=${DB_PASSWORD}", "password: ${{ secrets.DB_PASSWORD }}", "export TOKEN=$GITHUB_TOKEN", "PGPASSWORD=$DB_PASSWORD psql -h db"]),
    "placeholder-url": lambda g: g.choice(["postgres://app:<password>@db:5432/app", "postgres://app:${DB_PASSWORD}@db:5432/app", "redis://:$REDIS_PASSWORD@cache:6379", "mongodb://user:password@localhost:27017"]),
    "placeholder-template": lambda g: g.choice(["password: \"{{ .Values.db.password }}\"", "secret: {{ secret }}", "api_key = '%(api_key)s'", "token: \"{token}\""]),
    "placeholder-code-ref": lambda g: g.choice(["password = os.environ[\"DB_PASSWORD\"]", "const token = process.env.GITHUB_TOKEN;", "client_secret = settings.OAUTH_CLIENT_SECRET", "SECRET_KEY = get_random_secret_key()", "api_key = os.getenv('API_KEY')", "password := os.Getenv(\"DB_PASSWORD\")"]),
    "placeholder-stars": lambda g: g.choice(["password: ********", "API_KEY=xxxxxxxxxxxxxxxxxxxxxxxx", "token: ...", "secret = \"changeme\"", "password: REDACTED", "api_key: [REDACTED]", "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]),
    "already-masked": lambda g: g.choice([f"GITHUB_TOKEN=ghp_{'x' * 36}", f"DB_PASSWORD=hunt{'x' * 6}", f"sk-p{'x' * 60}", f"api_key: '{g.alnum(4)}{'x' * 28}'"]),
    "prose-mentions-password": lambda g: g.choice([
        "Never commit the password to git; use the vault.", "The secret: remember_to_rotate_keys_monthly",
        "Rotate the API key every 90 days.", "The token expires after one hour, so refresh it.",
        "password: see the 1Password item 'Prod DB'", "Passwords must be at least 12 characters long.",
        "The secret is stored in AWS Secrets Manager under prod/db.", "token: required for private repos",
        "We reset the admin password after the audit.", "secret_name: prod-db-credentials"]),
    "prose-mentions-zh": lambda g: g.choice(["密钥：见团队保险库。", "密码不要写进代码里，请用环境变量。", "令牌每小时过期一次。"]),
    "config-not-secret": lambda g: g.choice([
        "max_tokens: 4096", "token_type: bearer", "password_min_length: 12", "PASSWORD_FILE=/run/secrets/db_password",
        "secretKeyRef:\n  name: db-credentials\n  key: password", "auth_method: oauth2", "tokenizer: cl100k_base",
        "api_version: 2024-06-01", "keyboard_layout: dvorak", "primary_key: id", "session_timeout: 30m",
        "token_url: https://oauth2.googleapis.com/token", "password_reset_url: https://acme.dev/reset"]),
    "i18n-strings": lambda g: g.choice(['"password": "Mot de passe"', '"password": "Enter your password"', '"token": "Token"', '"secret": "Secret"']),
    "html-form": lambda g: '<input type="password" name="password" placeholder="Password" autocomplete="current-password">',
    "bcrypt-hash": lambda g: f"password_hash: $2b$12${g.b64(53).replace('+', '.')}",
    "webpack-chunk": lambda g: f"<script src=\"/static/js/main.{g.hex(8)}.chunk.js\"></script>",
    "data-uri": lambda g: f"background: url(data:image/png;base64,iVBORw0KGgo{g.b64(120)}=);",
    "email-and-ssh-url": lambda g: g.choice(["git@github.com:acme/api.git", "ssh://git@gitlab.acme.dev:2222/infra.git", "https://ci-bot@bitbucket.org/acme/web.git", "contact: ops@acme.dev"]),
    "bearer-placeholder": lambda g: g.choice(["Authorization: Bearer $TOKEN", "-H \"Authorization: Bearer ${GITHUB_TOKEN}\"", "Authorization: Bearer <token>", "Bearer tokens are described in RFC 6750."]),
    "curl-env-user": lambda g: "curl -u \"$JENKINS_USER:$JENKINS_TOKEN\" https://jenkins.internal/api/json",
    "semver-and-versions": lambda g: f"version: {g.rng.randint(1, 9)}.{g.rng.randint(0, 20)}.{g.rng.randint(0, 40)}",
    "high-entropy-id": lambda g: g.choice([f"slack_channel: C{g.digits(2)}{g.alnum(8).upper()}", f"stripe_customer: cus_{g.alnum(14)}", f"request: req_{g.alnum(24)}", f"etag: W/\"{g.hex(32)}\""]),
    "k8s-secret-ref": lambda g: "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db\n        key: password",
    "word-values-not-passwords": lambda g: g.choice([
        "DB_PASSWORD=required", "ADMIN_PASSWORD=prompt", 'secret: "see the vault"', "password: rotated",
        "DB_PASSWORD: stored in the vault", "'password' => 'confirmed',", '"password": "Kennwort"',
        "--password prompts for it on a terminal", "PASSWORD=changeme", "API_KEY=your-api-key-here"]),
    "variable-names": lambda g: g.choice(["password = new_password", "token = refresh_token", "if token == expected_token:", "secret = load_secret(path)", "auth = HTTPBasicAuth(user, password)"]),
    "config-words-not-passwords": lambda g: g.choice([
        "database:\n  user: app\n  password: rotated", "database:\n  user: app\n  password: required",
        "[database]\nuser = app\npassword = None", "[database]\nuser = app\npassword = %(pw)s",
        "db:\n  user: app\n  password: !vault |\n    $ANSIBLE_VAULT;1.1;AES256", "db:\n  user: app\n  password: ${DB_PASSWORD}",
        "PASSWORD=SECRET", "PR_EMS_AB_AUTHORIZED_PASSWORD: Incomplete", "return true if -debug-pass=Executions",
        "password = getpass()", "Password: see the vault", "user: app\npassword: pending", "PASSWORD=Required",
        "def connect(user, password):\n    password = answer"]),
}


def negatives(g: Gen, per_kind: int) -> list[tuple[str, str]]:
    """``per_kind`` snippets of every kind, as (kind, text)."""
    return [(kind, make(g)) for kind, make in KINDS.items() for _ in range(per_kind)]
