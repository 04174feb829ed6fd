"""Every built-in rule, tested the way gitleaks tests its rules: true positives generated
from each provider's documented shape (prefix, alphabet, length) by a seeded RNG and
embedded in many syntaxes, plus look-alikes that must stay untouched.

The generators below are written from the providers' formats, not from our regexes, so a
regex that drifts from the format fails here. Every value is random and fake.
"""

from __future__ import annotations

import base64
import json
import random
import string
import zlib
from collections.abc import Callable

import pytest

from openmemex.redact import find_secrets, mask_value, redact
from openmemex.redact.engine import CONTEXT_RULES, TOKEN_RULES, random_past_keyword
from openmemex.redact.rules import GLUED, RIGHT_ALNUM

AN = string.ascii_letters + string.digits
LOW = string.ascii_lowercase + string.digits
UP = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = AN + "+/"
URL = AN + "-_"
B32 = string.ascii_uppercase + "234567"

Part = str | tuple[str, int]


def rng_for(name: str) -> random.Random:
    return random.Random(zlib.crc32(name.encode()))


def make(rng: random.Random, parts: list[Part]) -> str:
    return "".join(p if isinstance(p, str) else "".join(rng.choice(p[0]) for _ in range(p[1])) for p in parts)


def uuid4(rng: random.Random) -> str:
    return "-".join(make(rng, [(HEX, n)]) for n in (8, 4, 4, 4, 12))


# rule id -> the provider's token shape
TOKENS: dict[str, list[Part]] = {
    "aws-access-key-id": ["AKIA", (B32, 16)],
    "aws-bedrock-api-key": ["ABSKQmVkcm9ja0FQSUtleS", (B64, 120), "="],
    "google-api-key": ["AIza", (URL, 35)],
    "google-oauth-client-secret": ["GOCSPX-", (URL, 28)],
    "google-oauth-access-token": ["ya29.a0A", (URL, 140)],
    "google-oauth-refresh-token": ["1//0g", (URL, 98)],
    "azure-ad-client-secret": [(AN, 3), (string.digits, 1), "Q~", (AN + "_~.-", 33), (AN, 1)],
    "alibaba-access-key-id": ["LTAI5t", (AN, 18)],
    "tencent-secret-id": ["AKID", (AN, 32)],
    "digitalocean-pat": ["dop_v1_", (HEX, 64)],
    "digitalocean-oauth-token": ["doo_v1_", (HEX, 64)],
    "digitalocean-refresh-token": ["dor_v1_", (HEX, 64)],
    "heroku-api-key-v2": ["HRKU-AA", (URL, 58)],
    "cloudflare-origin-ca-key": ["v1.0-", (HEX, 24), "-", (HEX, 146)],
    "flyio-token": ["fo1_", (URL, 43)],
    "vault-service-token": ["hvs.CAESI", (URL, 86)],
    "vault-batch-token": ["hvb.AAAAAQ", (URL, 130)],
    "terraform-cloud-token": [(AN, 14), ".atlasv1.", (URL, 67)],
    "doppler-token": ["dp.pt.", (AN, 43)],
    "pulumi-access-token": ["pul-", (HEX, 40)],
    "databricks-token": ["dapi", (HEX, 32)],
    "scalingo-token": ["tk-us-", (URL, 48)],
    "supabase-access-token": ["sbp_", (HEX, 40)],
    "supabase-secret-key": ["sb_secret_", (URL, 31)],
    "planetscale-token": ["pscale_tkn_", (URL, 43)],
    "openshift-user-token": ["sha256~", (URL, 43)],
    "onepassword-secret-key": ["A3-", (UP, 6), "-", (UP, 11), "-", (UP, 5), "-", (UP, 5), "-", (UP, 5)],
    "onepassword-service-token": ["ops_eyJzaWduSW5BZGRyZXNzIjoi", (B64, 200)],
    "render-api-key": ["rnd_", (AN, 32)],
    "tailscale-key": ["tskey-auth-", (AN, 12), "-", (AN, 33)],
    "netlify-token": ["nfp_", (AN, 36)],
    "github-pat": ["ghp_", (AN, 36)],
    "github-oauth-token": ["gho_", (AN, 36)],
    "github-user-token": ["ghu_", (AN, 36)],
    "github-app-token": ["ghs_", (AN, 36)],
    "github-refresh-token": ["ghr_", (AN, 76)],
    "github-fine-grained-pat": ["github_pat_11", (UP, 20), "_", (AN, 59)],
    "gitlab-pat": ["glpat-", (URL, 20)],
    "gitlab-deploy-token": ["gldt-", (URL, 20)],
    "gitlab-runner-token": ["glrt-", (URL, 20)],
    "gitlab-ci-job-token": ["glcbt-64_", (URL, 20)],
    "gitlab-trigger-token": ["glptt-", (HEX, 40)],
    "gitlab-feed-token": ["glft-", (URL, 20)],
    "gitlab-incoming-mail-token": ["glimt-", (URL, 25)],
    "gitlab-agent-token": ["glagent-", (URL, 50)],
    "gitlab-oauth-secret": ["gloas-", (URL, 64)],
    "gitlab-scim-token": ["glsoat-", (URL, 20)],
    "gitlab-feature-flag-token": ["glffct-", (URL, 20)],
    "gitlab-runner-registration-token": ["GR1348941", (URL, 20)],
    "atlassian-api-token": ["ATATT3xFfGF0", (URL, 170), "=", (UP, 8)],
    "bitbucket-access-token": ["ATCTT3xFfGN0", (URL, 170), "=", (UP, 8)],
    "bitbucket-app-password": ["ATBB", (AN, 32)],
    "sourcegraph-token": ["sgp_", (HEX, 16), "_", (HEX, 40)],
    "circleci-token": ["CCIPAT_", (AN, 22), "_", (HEX, 40)],
    "buildkite-token": ["bkua_", (HEX, 40)],
    "sonarqube-token": ["squ_", (HEX, 40)],
    "harness-token": ["pat.", (URL, 22), ".", (AN, 24), ".", (AN, 20)],
    "octopus-deploy-key": ["API-", (UP, 26)],
    "infracost-token": ["ico-", (AN, 32)],
    "npm-token": ["npm_", (AN, 36)],
    "pypi-token": ["pypi-AgEIcHlwaS5vcmc", (URL, 140)],
    "docker-hub-pat": ["dckr_pat_", (URL, 27)],
    "docker-hub-org-token": ["dckr_oat_", (URL, 32)],
    "rubygems-token": ["rubygems_", (HEX, 48)],
    "nuget-api-key": ["oy2", (LOW, 43)],
    "clojars-token": ["CLOJARS_", (LOW, 60)],
    "crates-io-token": ["cio", (AN, 32)],
    "artifactory-api-key": ["AKCp", (AN, 69)],
    "artifactory-reference-token": ["cmVmdGtuOjAxOj", (AN, 50)],
    "anthropic-admin-key": ["sk-ant-admin01-", (URL, 93), "AA"],
    "anthropic-api-key": ["sk-ant-api03-", (URL, 93), "AA"],
    "openrouter-api-key": ["sk-or-v1-", (HEX, 64)],
    "openai-admin-key": ["sk-admin-", (URL, 58), "T3BlbkFJ", (URL, 58)],
    "openai-key": ["sk-proj-", (URL, 74), "T3BlbkFJ", (URL, 74)],
    "openai-session-key": ["sess-", (AN, 40)],
    "huggingface-token": ["hf_", (string.ascii_letters, 34)],
    "huggingface-org-token": ["api_org_", (string.ascii_letters, 34)],
    "groq-api-key": ["gsk_", (AN, 52)],
    "perplexity-api-key": ["pplx-", (AN, 48)],
    "replicate-api-token": ["r8_", (AN, 37)],
    "xai-api-key": ["xai-", (AN, 80)],
    "langsmith-api-key": ["lsv2_pt_", (HEX, 32), "_", (HEX, 10)],
    "pinecone-api-key": ["pcsk_", (AN, 5), "_", (AN, 60)],
    "elevenlabs-api-key": ["sk_", (HEX, 48)],
    "tavily-api-key": ["tvly-dev-", (AN, 32)],
    "firecrawl-api-key": ["fc-", (HEX, 32)],
    "stripe-secret-key": ["sk_live_51", (AN, 97)],
    "stripe-restricted-key": ["rk_test_", (AN, 24)],
    "stripe-webhook-secret": ["whsec_", (AN, 32)],
    "square-access-token": ["EAAA", (URL, 60)],
    "square-oauth-secret": ["sq0csp-", (URL, 43)],
    "braintree-access-token": ["access_token$production$", (LOW, 16), "$", (HEX, 32)],
    "shopify-access-token": ["shpat_", (HEX, 32)],
    "shopify-custom-app-token": ["shpca_", (HEX, 32)],
    "shopify-private-app-token": ["shppa_", (HEX, 32)],
    "shopify-shared-secret": ["shpss_", (HEX, 32)],
    "flutterwave-secret-key": ["FLWSECK_TEST-", (HEX, 32), "-X"],
    "plaid-access-token": ["access-sandbox-", (HEX, 8), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 12)],
    "shippo-api-token": ["shippo_live_", (HEX, 40)],
    "easypost-api-key": ["EZAK", (AN, 54)],
    "duffel-api-token": ["duffel_test_", (URL, 43)],
    "slack-bot-token": ["xoxb-", (string.digits, 12), "-", (string.digits, 13), "-", (AN, 24)],
    "slack-user-token": ["xoxp-", (string.digits, 12), "-", (string.digits, 12), "-", (string.digits, 13), "-", (HEX, 32)],
    "slack-legacy-token": ["xoxs-", (string.digits, 12), "-", (string.digits, 12), "-", (HEX, 20)],
    "slack-config-token": ["xoxe.xoxp-1-", (UP, 160)],
    "slack-app-token": ["xapp-1-A", (UP, 10), "-", (string.digits, 13), "-", (HEX, 64)],
    "telegram-bot-token": [(string.digits, 10), ":AA", (URL, 33)],
    "twilio-api-key": ["SK", (HEX, 32)],
    "sendgrid-api-key": ["SG.", (URL, 22), ".", (URL, 43)],
    "mailgun-api-key": ["key-", (HEX, 32)],
    "mailchimp-api-key": [(HEX, 32), "-us", (string.digits, 2)],
    "brevo-api-key": ["xkeysib-", (HEX, 64), "-", (AN, 16)],
    "brevo-smtp-key": ["xsmtpsib-", (HEX, 64), "-", (AN, 16)],
    "twitter-bearer-token": ["AAAAAAAAAAAAAAAAAAAAA", (AN, 30), "%3D", (AN, 50)],
    "facebook-access-token": ["EAAG", (AN, 180)],
    "new-relic-user-api-key": ["NRAK-", (UP, 27)],
    "new-relic-insert-key": ["NRII-", (URL, 32)],
    "new-relic-browser-key": ["NRJS-", (HEX, 19)],
    "new-relic-license-key": [(HEX, 36), "NRAL"],
    "sentry-user-token": ["sntryu_", (HEX, 64)],
    "sentry-org-token": ["sntrys_eyJpYXQiOjE3MjQ", (B64, 80), "_", (B64, 43)],
    "grafana-api-key": ["eyJrIjoi", (AN, 70), "=="],
    "grafana-cloud-token": ["glc_", (B64, 120)],
    "grafana-service-account-token": ["glsa_", (AN, 32), "_", (HEX, 8)],
    "dynatrace-token": ["dt0c01.", (UP, 24), ".", (UP, 64)],
    "posthog-personal-key": ["phx_", (AN, 43)],
    "launchdarkly-key": ["sdk-", (HEX, 8), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 12)],
    "linear-api-key": ["lin_api_", (AN, 40)],
    "linear-oauth-token": ["lin_oauth_", (HEX, 64)],
    "notion-token": ["ntn_", (string.digits, 11), (AN, 35)],
    "notion-legacy-token": ["secret_", (AN, 43)],
    "airtable-pat": ["pat", (AN, 14), ".", (HEX, 64)],
    "figma-token": ["figd_", (URL, 40)],
    "postman-api-key": ["PMAK-", (HEX, 24), "-", (HEX, 34)],
    "typeform-token": ["tfp_", (URL, 59)],
    "contentful-token": ["CFPAT-", (URL, 43)],
    "mapbox-secret-token": ["sk.eyJ1IjoiYWNtZSIsImEiOiJ", (URL, 20), ".", (URL, 22)],
    "dropbox-token": ["sl.", (URL, 135)],
    "hubspot-pat": ["pat-na1-", (HEX, 8), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 12)],
    "yandex-api-key": ["AQVN", (URL, 36)],
    "prefect-token": ["pnu_", (AN, 36)],
    "readme-api-key": ["rdme_", (LOW, 70)],
    "frameio-token": ["fio-u-", (URL, 64)],
    "settlemint-token": ["sm_pat_", (AN, 16)],
    "maxmind-license-key": [(AN, 6), "_", (AN, 29), "_mmk"],
    "age-secret-key": ["AGE-SECRET-KEY-1", ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)],
}

# Tokens that are found as part of something bigger: (rule id) -> how to wrap the token
WRAPPED: dict[str, Callable[[str], tuple[str, str]]] = {
    # returns (text to embed, the part that must end up masked)
    "azure-storage-account-key": lambda k: (f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={k};EndpointSuffix=core.windows.net", k),
    "azure-shared-access-key": lambda k: (f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={k}", k),
    "azure-sas-token": lambda k: (f"https://acme.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig={k}", k),
    "gitlab-session-cookie": lambda k: (f"Cookie: _gitlab_session={k}", k),
    "slack-webhook-url": lambda k: (f"https://hooks.slack.com/services/{k}", k),
    "discord-webhook-url": lambda k: (f"https://discord.com/api/webhooks/{k}", k),
    "teams-webhook-url": lambda k: (f"https://acme.webhook.office.com/webhookb2/{k}", k),
}  # fmt: skip
WRAPPED_VALUES: dict[str, list[Part]] = {
    "azure-storage-account-key": [(B64, 86), "=="],
    "azure-shared-access-key": [(B64, 43), "="],
    "azure-sas-token": [(B64, 43), "%3D"],
    "gitlab-session-cookie": [(LOW, 32)],
    "slack-webhook-url": ["T", (UP, 8), "/B", (UP, 10), "/", (AN, 24)],
    "discord-webhook-url": [(string.digits, 18), "/", (URL, 68)],
    "teams-webhook-url": [(HEX, 8), "-aaaa-bbbb-cccc-", (HEX, 12), "@", (HEX, 8), "-aaaa-bbbb-cccc-", (HEX, 12),
                          "/IncomingWebhook/", (HEX, 32), "/", (HEX, 8), "-aaaa-bbbb-cccc-", (HEX, 12)],
}


def jwt(rng: random.Random) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': make(rng, [(string.digits, 9)]), 'iat': 1716239022})}.{make(rng, [(URL, 43)])}"


# Syntaxes a token is written in; none of them names it as a credential, so the provider
# rule alone must find it.
SYNTAXES: dict[str, Callable[[str], str]] = {
    "prose": lambda v: f"We rotated it yesterday; the new one is {v}. Ping me if it fails.",
    "markdown": lambda v: f"## Notes\n\n- CI uses `{v}` for the nightly job\n- see the runbook",
    "yaml": lambda v: f"deploy:\n  value: {v}\n  region: eu-west-1\n",
    "json": lambda v: json.dumps({"value": v, "region": "eu-west-1"}),
    "dotenv": lambda v: f"REGION=eu-west-1\nVALUE={v}\n",
    "shell": lambda v: f"export VALUE='{v}'\n./deploy.sh",
    "python": lambda v: f'client = Client(value="{v}")',
    "go": lambda v: f'value := "{v}"',
    "url-path": lambda v: f"see https://example.com/{v} for details",
}
NO_URL_PATH = {"azure-ad-client-secret", "jwt"}  # contain characters a URL path would not


def _check_masked(text: str, raw: str, rule_id: str | None) -> None:
    findings = find_secrets(text)
    out = redact(text)
    at = text.index(raw)
    assert out.text[at + 4 : at + len(raw)] == mask_value(raw)[4:], (rule_id, text)
    assert len(out.text) == len(text)
    if rule_id is not None:
        assert rule_id in [f.rule for f in findings], (text, findings)
    assert redact(out.text).text == out.text and not find_secrets(out.text)


def test_every_token_rule_has_a_generator() -> None:
    ids = {r.id for r in TOKEN_RULES}
    assert ids == set(TOKENS) | set(WRAPPED) | {"jwt"}
    assert len(ids) == len(TOKEN_RULES)


@pytest.mark.parametrize("rule_id", sorted(TOKENS))
def test_token_rule_in_every_syntax(rule_id: str) -> None:
    rng = rng_for(rule_id)
    for syntax, write in SYNTAXES.items():
        token = make(rng, TOKENS[rule_id])
        if syntax == "url-path" and (rule_id in NO_URL_PATH or "://" in token):
            continue
        _check_masked(write(token), token, rule_id)


@pytest.mark.parametrize("rule_id", sorted(WRAPPED))
def test_wrapped_token_rules(rule_id: str) -> None:
    rng = rng_for(rule_id)
    for write in (SYNTAXES["prose"], SYNTAXES["markdown"], SYNTAXES["json"], SYNTAXES["dotenv"]):
        text, raw = WRAPPED[rule_id](make(rng, WRAPPED_VALUES[rule_id]))
        _check_masked(write(text), raw, rule_id)


def test_jwt_in_every_syntax() -> None:
    rng = rng_for("jwt")
    for syntax, write in SYNTAXES.items():
        if syntax != "url-path":
            token = jwt(rng)
            _check_masked(write(token), token, "jwt")


@pytest.mark.parametrize("rule_id", sorted(TOKENS))
def test_token_look_alikes(rule_id: str) -> None:
    """The masked form, the prefix alone, and the token glued to a word are not reported
    as this rule (a placeholder, a mention, part of another identifier)."""
    rng = rng_for(rule_id + "-negative")
    token = make(rng, TOKENS[rule_id])
    masked = mask_value(token)
    assert find_secrets(f"the key was {masked} before the rotation") == []
    prefix = "".join(p for p in TOKENS[rule_id] if isinstance(p, str))
    assert find_secrets(f"tokens start with {prefix} and are rotated monthly") == []
    first = TOKENS[rule_id][0]
    if isinstance(first, str) and first[0].isalnum():
        glued = "xyz" + token
        assert rule_id not in [f.rule for f in find_secrets(f"id {glued} end")]


GLUED_RULES = sorted(r.id for r in TOKEN_RULES if r.pattern.startswith(GLUED) and r.id in TOKENS)


def test_most_token_rules_take_a_glued_token() -> None:
    assert len(GLUED_RULES) >= 100, GLUED_RULES  # every rule whose prefix is four characters or more


@pytest.mark.parametrize("rule_id", GLUED_RULES)
def test_a_token_glued_to_a_name_is_masked(rule_id: str) -> None:
    """Names glue tokens to themselves (GH_TOKEN_ghp_…, aws-key-AKIA…, deploy-glpat-….txt):
    a distinctive prefix after ``_`` or ``-`` is still the token, and only it is masked."""
    rng = rng_for(rule_id + "-glued")
    rule = next(r for r in TOKEN_RULES if r.id == rule_id)
    token = make(rng, TOKENS[rule_id])
    for _ in range(20):  # a glued match must look random (random_past_keyword): about 1 draw in 500 does not
        if random_past_keyword(token, rule.keywords):
            break
        token = make(rng, TOKENS[rule_id])
    glued_after = rule.pattern.endswith(RIGHT_ALNUM)  # a body that cannot hold _ or - may have a name after it
    for name, after in (("CI_TOKEN_", ""), ("aws-key-", ""), ("my_", "_OLD" if glued_after else ""),
                        ("-", "-2024.txt" if glued_after else "")):  # fmt: skip
        text = f"set {name}{token}{after} before the deploy"
        found = [f for f in find_secrets(text) if f.rule == rule_id]
        assert found, text
        masked = redact(text).text
        assert masked.startswith(f"set {name}{mask_value(token)[:4]}") and masked.endswith(" before the deploy")
        if not after or not set(after) & set(token):
            assert found[0].value(text).startswith(token[:12]), text


def test_names_built_of_words_glued_to_a_prefix_are_names() -> None:
    """A glued match must look random past its keyword: file and function names that start
    with a token's prefix are words (the review found each of these reported)."""
    for name in ("docs/slack-xoxb-token-rotation-guide.md", "ci/gitlab-glpat-token-expiry-notification-job.yml",
                 "rotate-glrt-runner-registration-tokens.sh", "def load_sb_secret_key_from_supabase_config",
                 "validate_dckr_pat_token_format_for_docker_login", "fix-hvs.token-renewal-loop-in-the-vault-agent",
                 "docs-figd_personal-access-token-guide-for-designers", "tool-sk-admin-console-frontend-build-artifacts",
                 "def test_ghp_TokensGluedToAnUnderscoreAreMaskedEverywhere",
                 "run_npm_installWithoutScriptsAndWithFrozenLockfile"):  # fmt: skip
        assert find_secrets(f"see {name} here") == [], name


def test_a_value_holding_a_glued_token_is_masked_whole() -> None:
    """A password or URL password that holds a token is masked whole (as one holding none
    is), under the token's rule: masking only the token left the rest of it readable."""
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    for text, value in ((f"DB_PASSWORD=Zq8!vT2#pL-{token}", f"Zq8!vT2#pL-{token}"),
                        (f"https://deploy:Rg7xQ2mZ-{token}@github.com/acme/x", f"Rg7xQ2mZ-{token}")):  # fmt: skip
        (finding,) = find_secrets(text)
        assert finding.rule == "github-pat" and finding.value(text) == value
        assert redact(text).text == text.replace(value, mask_value(value))


def test_openai_project_keys_glued_to_a_name_are_masked() -> None:
    key = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    for text in (f"OPENAI_KEY_{key}", f"deploy-{key}.env"):
        assert [f.rule for f in find_secrets(text)] == ["openai-key"], text
    assert find_secrets("tool-sk-learn-pipeline-for-the-team-v2") == []  # plain sk- stays strict


def test_short_or_generic_prefixes_glued_to_a_name_are_names() -> None:
    """``key-``, ``api-``, ``sk-`` and their like after ``_``/``-`` are far more often part of
    a name before a hash or a UUID than a token: they keep the strict boundary."""
    md5, uuid = "9e107d9d372bb6826bd81d3542a419d6", "3f2a8c1e-5b7d-4e9a-8c3f-1d2e3f4a5b6c"
    for text in (f"cache-key-{md5}", f"svc-api-{uuid}", f"deploy_sdk-{uuid}", f"seed_rnd_{md5}",
                 f"app-ico-{md5}bc", "tool-sk-learn-pipeline-for-the-team-v2", f"x_SK{md5}", f"tile-fc-{md5}",
                 "user-sess-" + SESSION):  # fmt: skip
        assert find_secrets(f"the name {text} is in the log") == [], text
    assert find_secrets(f"the key sess-{SESSION} leaked")  # the same shapes alone are tokens


SESSION = "q7Lm2Rx9Tb4Kw8Zp1Nc6Vh3Jd5Fs0Gy2Ua7Ek9Wo"


def test_token_boundaries_and_sentence_punctuation() -> None:
    token = make(rng_for("punct"), TOKENS["github-pat"])
    for text in (f"({token})", f"token {token}.", f"{token}, then", f'"{token}"', f"`{token}`", f"[{token}]"):
        (finding,) = find_secrets(text)
        assert finding.value(text) == token, text
    assert find_secrets("task-" + "management" * 3) == []
    assert find_secrets("disk-encryption-key-rotation-procedure-v2") == []


def test_aws_documentation_keys_are_not_secrets() -> None:
    assert find_secrets("aws_access_key_id = AKIAIOSFODNN7EXAMPLE") == []
    assert find_secrets("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") == []


@pytest.mark.parametrize(
    "text",
    [
        "STRIPE_PUBLISHABLE_KEY=pk_live_" + "A1b2C3d4" * 5,
        "publishableKey: 'pk_test_" + "Zz9Yy8Xx7Ww6" * 2 + "'",
        "GOOGLE_CLIENT_ID=123456789012-" + "a1b2c3d4e5f6g7h8" * 2 + ".apps.googleusercontent.com",
        "mapbox: pk.eyJ1IjoiYWNtZSIsImEiOiJjbGFiYzEyMyJ9." + "Q1w2E3r4T5y6U7i8O9p0Aa",
        "posthog: phc_" + "Q1w2E3r4T5y6U7i8O9p0" * 2,
    ],
)
def test_public_keys_of_providers_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_jwt_needs_an_algorithm_in_its_header() -> None:
    def b64(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    cursor = b64({"page": 2, "after": "01HZX3"}) + "." + b64({"filter": "active", "limit": 50}) + "." + "Q1w2E3r4T5y6U7i8O9p0"
    assert find_secrets(f"next: {cursor}") == []
    assert find_secrets("cursor=" + b64({"page": 7, "sort": "desc"})) == []


# ---------------------------------------------------------------------------------------------
# provider secrets recognised by their name

CONTEXT_VALUES: dict[str, tuple[str, list[Part]]] = {
    "aws-secret-access-key": ("AWS_SECRET_ACCESS_KEY", [(B64, 40)]),
    "aws-session-token": ("AWS_SESSION_TOKEN", ["IQoJb3JpZ2luX2Vj", (B64, 200)]),
    "azure-devops-pat": ("AZURE_DEVOPS_EXT_PAT", [("abcdefghijklmnopqrstuvwxyz234567", 52)]),
    "heroku-api-key": ("HEROKU_API_KEY", [(HEX, 8), "-", (HEX, 4), "-4", (HEX, 3), "-a", (HEX, 3), "-", (HEX, 12)]),
    "cloudflare-api-token": ("CLOUDFLARE_API_TOKEN", [(URL, 40)]),
    "cloudflare-global-api-key": ("CLOUDFLARE_API_KEY", [(HEX, 37)]),
    "ibm-cloud-api-key": ("IBM_CLOUD_API_KEY", [(URL, 44)]),
    "alibaba-access-key-secret": ("ALIBABA_CLOUD_ACCESS_KEY_SECRET", [(AN, 30)]),
    "vercel-token": ("VERCEL_TOKEN", [(AN, 24)]),
    "ngrok-authtoken": ("NGROK_AUTHTOKEN", [(AN, 27), "_", (AN, 21)]),
    "datadog-api-key": ("DD_API_KEY", [(HEX, 32)]),
    "datadog-app-key": ("DD_APP_KEY", [(HEX, 40)]),
    "splunk-hec-token": ("SPLUNK_HEC_TOKEN", [(HEX, 8), "-", (HEX, 4), "-4", (HEX, 3), "-8", (HEX, 3), "-", (HEX, 12)]),
    "pagerduty-api-key": ("PAGERDUTY_TOKEN", ["u+", (URL, 18)]),
    "rollbar-token": ("ROLLBAR_ACCESS_TOKEN", [(HEX, 32)]),
    "bugsnag-api-key": ("BUGSNAG_API_KEY", [(HEX, 32)]),
    "twilio-auth-token": ("TWILIO_AUTH_TOKEN", [(HEX, 32)]),
    "mailgun-signing-key": ("MAILGUN_API_KEY", [(HEX, 32), "-", (HEX, 8), "-", (HEX, 8)]),
    "postmark-server-token": ("POSTMARK_SERVER_TOKEN", [(HEX, 8), "-", (HEX, 4), "-4", (HEX, 3), "-9", (HEX, 3), "-", (HEX, 12)]),
    "slack-signing-secret": ("SLACK_SIGNING_SECRET", [(HEX, 32)]),
    "discord-bot-token": ("DISCORD_BOT_TOKEN", ["MT", (URL, 24), ".", (URL, 6), ".", (URL, 38)]),
    "pusher-secret": ("PUSHER_SECRET", [(HEX, 20)]),
    "twitter-api-secret": ("TWITTER_API_SECRET", [(AN, 50)]),
    "twitch-api-token": ("TWITCH_TOKEN", [(LOW, 30)]),
    "facebook-app-secret": ("FACEBOOK_APP_SECRET", [(HEX, 32)]),
    "intercom-token": ("INTERCOM_ACCESS_TOKEN", [(URL, 59), "="]),
    "zendesk-api-token": ("ZENDESK_API_TOKEN", [(AN, 40)]),
    "cohere-api-key": ("COHERE_API_KEY", [(AN, 40)]),
    "mistral-api-key": ("MISTRAL_API_KEY", [(AN, 32)]),
    "together-api-key": ("TOGETHER_API_KEY", [(HEX, 64)]),
    "wandb-api-key": ("WANDB_API_KEY", [(HEX, 40)]),
    "github-client-secret": ("GITHUB_CLIENT_SECRET", [(HEX, 40)]),
    "jfrog-api-key": ("JFROG_API_KEY", [(AN, 73)]),
    "circleci-legacy-token": ("CIRCLECI_TOKEN", [(HEX, 40)]),
    "travis-ci-token": ("TRAVIS_API_TOKEN", [(AN, 22)]),
    "snyk-token": ("SNYK_TOKEN", [(HEX, 8), "-", (HEX, 4), "-4", (HEX, 3), "-b", (HEX, 3), "-", (HEX, 12)]),
    "algolia-admin-key": ("ALGOLIA_ADMIN_KEY", [(HEX, 32)]),
    "okta-api-token": ("OKTA_API_TOKEN", ["00", (URL, 40)]),
    "atlassian-legacy-token": ("JIRA_API_TOKEN", [(AN, 24)]),
    "asana-pat": ("ASANA_TOKEN", ["2/", (string.digits, 16), "/", (string.digits, 16), ":", (HEX, 32)]),
    "segment-write-key": ("SEGMENT_WRITE_KEY", [(AN, 32)]),
    "hubspot-api-key": ("HUBSPOT_API_KEY", [(HEX, 8), "-", (HEX, 4), "-4", (HEX, 3), "-a", (HEX, 3), "-", (HEX, 12)]),
    "fastly-api-token": ("FASTLY_API_TOKEN", [(URL, 32)]),
    "razorpay-key-secret": ("RAZORPAY_KEY_SECRET", [(AN, 24)]),
}

NAMED: dict[str, Callable[[str, str], str]] = {
    "dotenv": lambda n, v: f"{n}={v}",
    "export": lambda n, v: f'export {n}="{v}"',
    "yaml": lambda n, v: f"env:\n  {n.lower()}: {v}\n",
    "json": lambda n, v: json.dumps({n.lower(): v}),
    "toml": lambda n, v: f'[secrets]\n{n.lower()} = "{v}"',
    "python": lambda n, v: f"{n} = '{v}'",
    "js": lambda n, v: f"const {n.lower()} = `{v}`;",
    "go": lambda n, v: f'{n.lower()} := "{v}"',
    "prose": lambda n, v: f"FYI the {n.lower().replace('_', ' ')} is {v}, do not share.",
    "markdown": lambda n, v: f"- **{n}**: `{v}`",
}


def test_every_context_rule_has_a_generator() -> None:
    assert {r.id for r in CONTEXT_RULES} == set(CONTEXT_VALUES)


@pytest.mark.parametrize("rule_id", sorted(CONTEXT_VALUES))
def test_context_rule_in_every_syntax(rule_id: str) -> None:
    rng = rng_for(rule_id)
    name, shape = CONTEXT_VALUES[rule_id]
    for write in NAMED.values():
        value = make(rng, shape)
        _check_masked(write(name, value), value, rule_id)


@pytest.mark.parametrize("rule_id", sorted(CONTEXT_VALUES))
def test_context_values_alone_are_not_secrets(rule_id: str) -> None:
    """Without its provider's credential name the value is an ordinary id or hash."""
    value = make(rng_for(rule_id + "-negative"), CONTEXT_VALUES[rule_id][1])
    for text in (f"request_id: {value}", f"Build {value} passed on main.", json.dumps({"id": value})):
        assert rule_id not in [f.rule for f in find_secrets(text)], text


def test_a_file_dense_with_secrets_keeps_each_finding_and_each_allow_line() -> None:
    """Thousands of findings in one text (a big .env): every value found once, the allowed
    lines left out, values holding a token masked whole (the overlap checks are by bisection)."""
    rng = random.Random(11)
    lines, expected = [], 0
    for i in range(3000):
        value = "".join(rng.choice(AN) for _ in range(19)) + str(i % 10)  # letters alone may be a word
        if i % 7 == 0:
            lines.append(f"SECRET_{i}={value} # open-memex:allow")
        elif i % 3 == 0:
            token = make(rng, TOKENS["github-pat"])
            lines.append(f"DB_PASSWORD_{i}={value[:8]}-{token}")
            expected += 1
        else:
            lines.append(f"SECRET_{i}={value}")
            expected += 1
    text = "\n".join(lines)
    found = find_secrets(text)
    assert len(found) == expected
    assert all("open-memex:allow" not in lines[f.line - 1] for f in found)
    whole = [f for f in found if f.rule == "github-pat"]
    assert whole and all(f.value(text).startswith(lines[f.line - 1].split("=", 1)[1][:8]) for f in whole)
