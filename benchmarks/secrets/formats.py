"""The credential formats planted in the corpus: how each provider's secret looks and what
people call it. Shapes follow the providers' own documentation (prefix, alphabet, length);
values are random. Written before the scanner was tuned, and never tuned to it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass

from gen import BASE32, BECH32, LOWER_ALNUM, UPPER_ALNUM, Gen


@dataclass(frozen=True)
class Planted:
    """An artifact to embed as it is (a URL, a header, a PEM block) and the parts of it that
    must come out masked."""

    text: str
    secrets: tuple[str, ...]


@dataclass(frozen=True)
class Format:
    id: str
    family: str
    make: Callable[[Gen], str | Planted]
    names: tuple[str, ...] = ()
    """Variable names it is given in configs and code; empty: an artifact used as it is."""
    human: str = ""
    """What a person calls it in a sentence."""
    prefixed: bool = True
    """Recognisable on its own (a prefix or structure), so it may appear without a name."""
    styles: tuple[str, ...] = ()
    """Only these embeddings (a value with spaces is only ever written quoted)."""


def _pem(kind: str, lines: int) -> Callable[[Gen], Planted]:
    def make(g: Gen) -> Planted:
        body = "\n".join(g.b64(64) for _ in range(lines)) + "\n" + g.b64(g.rng.randint(8, 60)) + "=="
        if kind == "RSA":
            body = "MIIEow" + body[6:]
        text = f"-----BEGIN {kind + ' ' if kind else ''}PRIVATE KEY-----\n{body}\n-----END {kind + ' ' if kind else ''}PRIVATE KEY-----"
        return Planted(text, tuple(body.split("\n")))

    return make


def _pgp(g: Gen) -> Planted:
    body = "\n".join(g.b64(64) for _ in range(8)) + "\n=" + g.b64(4)
    text = f"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{body}\n-----END PGP PRIVATE KEY BLOCK-----"
    return Planted(text, tuple(line for line in body.split("\n") if len(line) > 8))


def _gcp_service_account(g: Gen) -> Planted:
    lines = [g.b64(64) for _ in range(6)]
    key = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"
    doc = {"type": "service_account", "project_id": "acme-prod-3121", "private_key_id": g.hex(40),
           "private_key": key, "client_email": "deployer@acme-prod-3121.iam.gserviceaccount.com",
           "client_id": g.digits(21), "token_uri": "https://oauth2.googleapis.com/token"}  # fmt: skip
    text = json.dumps(doc, indent=2)
    return Planted(text, tuple(lines))


def _jwt(g: Gen) -> str:
    def part(obj: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")

    header = part({"alg": g.choice(["HS256", "RS256", "ES256"]), "typ": "JWT"})
    payload = part({"sub": g.digits(8), "name": "svc-deployer", "iat": 1716239022, "role": "admin"})
    return f"{header}.{payload}.{g.b64url(43)}"


def _capitalised(g: Gen, words: str) -> str:
    """Blueberry, Acorn-Badger-Comet: the first word or every word with a capital."""
    parts = words.replace("_", "-").split("-")
    every = g.rng.random() < 0.5
    return "-".join(w.capitalize() if every or i == 0 else w for i, w in enumerate(parts))


def _url(scheme: str, user: str, host: str) -> Callable[[Gen], Planted]:
    def make(g: Gen) -> Planted:
        password = g.choice([g.alnum(20), g.password().replace("@", "!").replace("/", "-").replace("#", "-")])
        return Planted(f"{scheme}://{user}:{password}@{host}", (password,))

    return make


def _basic(g: Gen) -> Planted:
    value = base64.b64encode(f"deploy:{g.password()}".encode()).decode()
    return Planted(f"Authorization: Basic {value}", (value,))


def _query(param: str) -> Callable[[Gen], Planted]:
    def make(g: Gen) -> Planted:
        value = g.alnum(40)
        return Planted(f"https://api.example.com/v2/reports?format=csv&{param}={value}&page=2", (value,))

    return make


FORMATS: tuple[Format, ...] = (
    # cloud
    Format("aws-access-key-id", "cloud", lambda g: "AKIA" + g.pick(BASE32, 16), ("AWS_ACCESS_KEY_ID",), "AWS access key id"),
    Format("aws-secret-access-key", "cloud", lambda g: g.b64(40), ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"), "AWS secret access key", False),
    Format("aws-session-token", "cloud", lambda g: "IQoJb3JpZ2luX2VjE" + g.b64(300), ("AWS_SESSION_TOKEN",), "AWS session token", False),
    Format("gcp-api-key", "cloud", lambda g: "AIza" + g.b64url(35), ("GOOGLE_API_KEY", "FIREBASE_API_KEY"), "Google API key"),
    Format("gcp-service-account-key", "cloud", _gcp_service_account),
    Format("google-oauth-client-secret", "cloud", lambda g: "GOCSPX-" + g.b64url(28), ("GOOGLE_CLIENT_SECRET",), "Google OAuth client secret"),
    Format("google-oauth-refresh-token", "cloud", lambda g: "1//0" + g.b64url(99), ("GOOGLE_REFRESH_TOKEN",), "Google refresh token"),
    Format("google-oauth-access-token", "cloud", lambda g: "ya29." + g.b64url(150), ("GOOGLE_ACCESS_TOKEN",), "Google access token"),
    Format("azure-ad-client-secret", "cloud", lambda g: g.alnum(3) + g.digits(1) + "Q~" + g.pick(LOWER_ALNUM + "ABCDEFGHIJ_~.-", 34), ("AZURE_CLIENT_SECRET",), "Azure client secret"),
    Format("azure-storage-connection-string", "cloud", lambda g: (k := g.b64(86) + "==") and Planted(
        f"DefaultEndpointsProtocol=https;AccountName=acmeprodlogs;AccountKey={k};EndpointSuffix=core.windows.net", (k,))),
    Format("azure-sas-url", "cloud", lambda g: (s := g.b64(43).replace("+", "%2B").replace("/", "%2F") + "%3D") and Planted(
        f"https://acmelogs.blob.core.windows.net/exports/report.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2025-06-30T00:00:00Z&spr=https&sig={s}", (s,))),
    Format("azure-service-bus-key", "cloud", lambda g: (k := g.b64(43) + "=") and Planted(
        f"Endpoint=sb://acme-events.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={k}", (k,))),
    Format("azure-devops-pat", "cloud", lambda g: g.pick(BASE32.lower(), 52), ("AZURE_DEVOPS_EXT_PAT", "AZDO_TOKEN"), "Azure DevOps PAT", False),
    Format("alibaba-access-key-id", "cloud", lambda g: "LTAI5t" + g.alnum(18), ("ALIBABA_CLOUD_ACCESS_KEY_ID",), "Alibaba access key"),
    Format("digitalocean-pat", "cloud", lambda g: "dop_v1_" + g.hex(64), ("DIGITALOCEAN_TOKEN",), "DigitalOcean token"),
    Format("digitalocean-oauth-token", "cloud", lambda g: "doo_v1_" + g.hex(64), ("DO_OAUTH_TOKEN",), "DigitalOcean OAuth token"),
    Format("heroku-api-key", "cloud", lambda g: g.uuid(), ("HEROKU_API_KEY",), "Heroku API key", False),
    Format("heroku-api-key-v2", "cloud", lambda g: "HRKU-AA" + g.b64url(58), ("HEROKU_API_KEY",), "Heroku API key"),
    Format("cloudflare-api-token", "cloud", lambda g: g.b64url(40), ("CLOUDFLARE_API_TOKEN", "CF_API_TOKEN"), "Cloudflare API token", False),
    Format("cloudflare-global-api-key", "cloud", lambda g: g.hex(37), ("CLOUDFLARE_API_KEY",), "Cloudflare global API key", False),
    Format("vault-token", "cloud", lambda g: "hvs.CAESI" + g.b64url(86), ("VAULT_TOKEN",), "Vault token"),
    Format("terraform-cloud-token", "cloud", lambda g: g.alnum(14) + ".atlasv1." + g.b64url(67), ("TF_TOKEN_app_terraform_io",), "Terraform Cloud token"),
    Format("doppler-token", "cloud", lambda g: "dp.pt." + g.alnum(43), ("DOPPLER_TOKEN",), "Doppler token"),
    Format("pulumi-token", "cloud", lambda g: "pul-" + g.hex(40), ("PULUMI_ACCESS_TOKEN",), "Pulumi token"),
    Format("databricks-token", "cloud", lambda g: "dapi" + g.hex(32), ("DATABRICKS_TOKEN",), "Databricks token"),
    Format("flyio-token", "cloud", lambda g: "fo1_" + g.b64url(43), ("FLY_API_TOKEN",), "Fly.io token"),
    Format("supabase-access-token", "cloud", lambda g: "sbp_" + g.hex(40), ("SUPABASE_ACCESS_TOKEN",), "Supabase token"),
    Format("planetscale-token", "cloud", lambda g: "pscale_tkn_" + g.b64url(43), ("PLANETSCALE_SERVICE_TOKEN",), "PlanetScale token"),
    Format("vercel-token", "cloud", lambda g: g.alnum(24), ("VERCEL_TOKEN",), "Vercel token", False),
    Format("netlify-token", "cloud", lambda g: "nfp_" + g.alnum(36), ("NETLIFY_AUTH_TOKEN",), "Netlify token"),
    Format("tailscale-key", "cloud", lambda g: "tskey-auth-" + g.alnum(11) + "CNTRL-" + g.alnum(33), ("TS_AUTHKEY",), "Tailscale auth key"),
    Format("ngrok-authtoken", "cloud", lambda g: g.digits(1) + g.alnum(26) + "_" + g.alnum(21), ("NGROK_AUTHTOKEN",), "ngrok authtoken", False),
    Format("onepassword-service-token", "cloud", lambda g: "ops_eyJzaWduSW5BZGRyZXNzIjoi" + g.b64(300), ("OP_SERVICE_ACCOUNT_TOKEN",), "1Password service account token"),
    Format("render-api-key", "cloud", lambda g: "rnd_" + g.alnum(32), ("RENDER_API_KEY",), "Render API key"),
    Format("age-secret-key", "keys", lambda g: "AGE-SECRET-KEY-1" + g.pick(BECH32, 58), ("SOPS_AGE_KEY",), "age key"),
    # source hosts, CI, registries
    Format("github-pat", "source", lambda g: "ghp_" + g.alnum(36), ("GITHUB_TOKEN", "GH_TOKEN"), "GitHub token"),
    Format("github-oauth-token", "source", lambda g: "gho_" + g.alnum(36), ("GITHUB_OAUTH_TOKEN",), "GitHub OAuth token"),
    Format("github-app-token", "source", lambda g: "ghs_" + g.alnum(36), ("GITHUB_APP_TOKEN",), "installation token"),
    Format("github-user-token", "source", lambda g: "ghu_" + g.alnum(36), ("GH_USER_TOKEN",), "GitHub user token"),
    Format("github-refresh-token", "source", lambda g: "ghr_" + g.alnum(76), ("GITHUB_REFRESH_TOKEN",), "GitHub refresh token"),
    Format("github-fine-grained-pat", "source", lambda g: "github_pat_11" + g.pick(UPPER_ALNUM, 20) + "_" + g.alnum(59), ("GITHUB_PAT",), "fine-grained PAT"),
    Format("github-client-secret", "source", lambda g: g.hex(40), ("GITHUB_CLIENT_SECRET",), "GitHub client secret", False),
    Format("gitlab-pat", "source", lambda g: "glpat-" + g.b64url(20), ("GITLAB_TOKEN",), "GitLab token"),
    Format("gitlab-runner-token", "source", lambda g: "glrt-" + g.b64url(20), ("RUNNER_TOKEN",), "runner token"),
    Format("gitlab-deploy-token", "source", lambda g: "gldt-" + g.b64url(20), ("GITLAB_DEPLOY_TOKEN",), "deploy token"),
    Format("gitlab-ci-job-token", "source", lambda g: "glcbt-64_" + g.b64url(20), ("CI_JOB_TOKEN",), "CI job token"),
    Format("gitlab-trigger-token", "source", lambda g: "glptt-" + g.hex(40), ("TRIGGER_TOKEN",), "trigger token"),
    Format("gitlab-registration-token", "source", lambda g: "GR1348941" + g.b64url(20), ("REGISTRATION_TOKEN",), "registration token"),
    Format("bitbucket-app-password", "source", lambda g: "ATBB" + g.alnum(32), ("BITBUCKET_APP_PASSWORD",), "Bitbucket app password"),
    Format("atlassian-api-token", "source", lambda g: "ATATT3xFfGF0" + g.b64url(170) + "=" + g.hex(8).upper(), ("JIRA_API_TOKEN", "ATLASSIAN_TOKEN"), "Atlassian API token"),
    Format("circleci-token", "ci", lambda g: "CCIPAT_" + g.alnum(22) + "_" + g.hex(40), ("CIRCLE_TOKEN",), "CircleCI token"),
    Format("buildkite-token", "ci", lambda g: "bkua_" + g.hex(40), ("BUILDKITE_API_TOKEN",), "Buildkite token"),
    Format("sonarqube-token", "ci", lambda g: "squ_" + g.hex(40), ("SONAR_TOKEN",), "Sonar token"),
    Format("sourcegraph-token", "ci", lambda g: "sgp_" + g.hex(16) + "_" + g.hex(40), ("SRC_ACCESS_TOKEN",), "Sourcegraph token"),
    Format("snyk-token", "ci", lambda g: g.uuid(), ("SNYK_TOKEN",), "Snyk token", False),
    Format("codecov-token", "ci", lambda g: g.uuid(), ("CODECOV_TOKEN",), "Codecov token", False),
    Format("docker-hub-pat", "registry", lambda g: "dckr_pat_" + g.b64url(27), ("DOCKERHUB_TOKEN",), "Docker Hub token"),
    Format("npm-token", "registry", lambda g: "npm_" + g.alnum(36), ("NPM_TOKEN",), "npm token"),
    Format("npmrc-auth", "registry", lambda g: (v := g.bytes_b64(24)) and Planted(f"//registry.npmjs.org/:_auth={v}", (v,))),
    Format("pypi-token", "registry", lambda g: "pypi-AgEIcHlwaS5vcmc" + g.b64url(150), ("PYPI_API_TOKEN", "TWINE_PASSWORD"), "PyPI token"),
    Format("rubygems-token", "registry", lambda g: "rubygems_" + g.hex(48), ("GEM_HOST_API_KEY",), "RubyGems key"),
    Format("nuget-api-key", "registry", lambda g: "oy2" + g.pick(LOWER_ALNUM, 43), ("NUGET_API_KEY",), "NuGet key"),
    Format("clojars-token", "registry", lambda g: "CLOJARS_" + g.pick(LOWER_ALNUM, 60), ("CLOJARS_PASSWORD",), "Clojars token"),
    Format("crates-io-token", "registry", lambda g: "cio" + g.alnum(32), ("CARGO_REGISTRY_TOKEN",), "crates.io token"),
    Format("artifactory-api-key", "registry", lambda g: "AKCp" + g.alnum(69), ("ARTIFACTORY_API_KEY",), "Artifactory key"),
    Format("docker-config-auth", "registry", lambda g: (v := base64.b64encode(f"ci-bot:{g.alnum(24)}".encode()).decode()) and Planted(
        '{"auths": {"https://index.docker.io/v1/": {"auth": "' + v + '"}}}', (v,))),
    # AI APIs
    Format("openai-project-key", "ai", lambda g: "sk-proj-" + g.b64url(74) + "T3BlbkFJ" + g.b64url(74), ("OPENAI_API_KEY",), "OpenAI key"),
    Format("openai-legacy-key", "ai", lambda g: "sk-" + g.alnum(20) + "T3BlbkFJ" + g.alnum(20), ("OPENAI_API_KEY",), "OpenAI key"),
    Format("openai-service-account-key", "ai", lambda g: "sk-svcacct-" + g.b64url(74) + "T3BlbkFJ" + g.b64url(74), ("OPENAI_API_KEY",), "OpenAI key"),
    Format("anthropic-api-key", "ai", lambda g: "sk-ant-api03-" + g.b64url(93) + "AA", ("ANTHROPIC_API_KEY",), "Anthropic key"),
    Format("anthropic-admin-key", "ai", lambda g: "sk-ant-admin01-" + g.b64url(93) + "AA", ("ANTHROPIC_ADMIN_KEY",), "Anthropic admin key"),
    Format("huggingface-token", "ai", lambda g: "hf_" + g.pick(BASE32[:26] + BASE32[:26].lower(), 34), ("HF_TOKEN",), "Hugging Face token"),
    Format("groq-api-key", "ai", lambda g: "gsk_" + g.alnum(52), ("GROQ_API_KEY",), "Groq key"),
    Format("perplexity-api-key", "ai", lambda g: "pplx-" + g.alnum(48), ("PERPLEXITY_API_KEY",), "Perplexity key"),
    Format("replicate-token", "ai", lambda g: "r8_" + g.alnum(37), ("REPLICATE_API_TOKEN",), "Replicate token"),
    Format("xai-api-key", "ai", lambda g: "xai-" + g.alnum(80), ("XAI_API_KEY",), "xAI key"),
    Format("cohere-api-key", "ai", lambda g: g.alnum(40), ("COHERE_API_KEY", "CO_API_KEY"), "Cohere key", False),
    Format("mistral-api-key", "ai", lambda g: g.alnum(32), ("MISTRAL_API_KEY",), "Mistral key", False),
    Format("langsmith-api-key", "ai", lambda g: "lsv2_pt_" + g.hex(32) + "_" + g.hex(10), ("LANGSMITH_API_KEY",), "LangSmith key"),
    Format("pinecone-api-key", "ai", lambda g: "pcsk_" + g.alnum(5) + "_" + g.alnum(60), ("PINECONE_API_KEY",), "Pinecone key"),
    Format("openrouter-api-key", "ai", lambda g: "sk-or-v1-" + g.hex(64), ("OPENROUTER_API_KEY",), "OpenRouter key"),
    Format("deepseek-api-key", "ai", lambda g: "sk-" + g.hex(32), ("DEEPSEEK_API_KEY",), "DeepSeek key"),
    Format("elevenlabs-api-key", "ai", lambda g: "sk_" + g.hex(48), ("ELEVENLABS_API_KEY",), "ElevenLabs key"),
    Format("together-api-key", "ai", lambda g: g.hex(64), ("TOGETHER_API_KEY",), "Together key", False),
    Format("tavily-api-key", "ai", lambda g: "tvly-" + g.alnum(32), ("TAVILY_API_KEY",), "Tavily key"),
    Format("wandb-api-key", "ai", lambda g: g.hex(40), ("WANDB_API_KEY",), "W&B key", False),
    # payments and commerce
    Format("stripe-secret-key", "payments", lambda g: "sk_live_51" + g.alnum(97), ("STRIPE_SECRET_KEY",), "Stripe key"),
    Format("stripe-test-key", "payments", lambda g: "sk_test_" + g.alnum(24), ("STRIPE_API_KEY",), "Stripe test key"),
    Format("stripe-restricted-key", "payments", lambda g: "rk_live_" + g.alnum(24), ("STRIPE_RESTRICTED_KEY",), "restricted key"),
    Format("stripe-webhook-secret", "payments", lambda g: "whsec_" + g.alnum(32), ("STRIPE_WEBHOOK_SECRET",), "webhook signing secret"),
    Format("square-access-token", "payments", lambda g: "EAAA" + g.b64url(60), ("SQUARE_ACCESS_TOKEN",), "Square token"),
    Format("square-oauth-secret", "payments", lambda g: "sq0csp-" + g.b64url(43), ("SQUARE_OAUTH_SECRET",), "Square OAuth secret"),
    Format("braintree-access-token", "payments", lambda g: "access_token$production$" + g.pick(LOWER_ALNUM, 16) + "$" + g.hex(32), ("BRAINTREE_ACCESS_TOKEN",), "Braintree token"),
    Format("shopify-access-token", "payments", lambda g: "shpat_" + g.hex(32), ("SHOPIFY_ACCESS_TOKEN",), "Shopify token"),
    Format("shopify-shared-secret", "payments", lambda g: "shpss_" + g.hex(32), ("SHOPIFY_API_SECRET",), "Shopify secret"),
    Format("paypal-client-secret", "payments", lambda g: "E" + g.b64url(79), ("PAYPAL_CLIENT_SECRET",), "PayPal client secret", False),
    Format("plaid-access-token", "payments", lambda g: "access-sandbox-" + g.uuid(), ("PLAID_ACCESS_TOKEN",), "Plaid token"),
    Format("razorpay-key-secret", "payments", lambda g: g.alnum(24), ("RAZORPAY_KEY_SECRET",), "Razorpay secret", False),
    Format("flutterwave-secret-key", "payments", lambda g: "FLWSECK_TEST-" + g.hex(32) + "-X", ("FLW_SECRET_KEY",), "Flutterwave key"),
    # chat and mail
    Format("slack-bot-token", "chat", lambda g: f"xoxb-{g.digits(12)}-{g.digits(13)}-{g.alnum(24)}", ("SLACK_BOT_TOKEN",), "Slack bot token"),
    Format("slack-user-token", "chat", lambda g: f"xoxp-{g.digits(12)}-{g.digits(12)}-{g.digits(13)}-{g.hex(32)}", ("SLACK_USER_TOKEN",), "Slack user token"),
    Format("slack-app-token", "chat", lambda g: f"xapp-1-A{g.pick(UPPER_ALNUM, 10)}-{g.digits(13)}-{g.hex(64)}", ("SLACK_APP_TOKEN",), "Slack app token"),
    Format("slack-webhook", "chat", lambda g: (s := g.alnum(24)) and Planted(
        f"https://hooks.slack.com/services/T{g.pick(UPPER_ALNUM, 8)}/B{g.pick(UPPER_ALNUM, 10)}/{s}", (s,))),
    Format("discord-webhook", "chat", lambda g: (s := g.b64url(68)) and Planted(
        f"https://discord.com/api/webhooks/{g.digits(18)}/{s}", (s,))),
    Format("discord-bot-token", "chat", lambda g: g.choice("MN") + g.b64url(25) + "." + g.b64url(6) + "." + g.b64url(38), ("DISCORD_BOT_TOKEN", "DISCORD_TOKEN"), "Discord bot token", False),
    Format("telegram-bot-token", "chat", lambda g: g.digits(10) + ":AA" + g.b64url(33), ("TELEGRAM_BOT_TOKEN",), "Telegram bot token"),
    Format("teams-webhook", "chat", lambda g: (s := g.hex(32)) and Planted(
        f"https://acme.webhook.office.com/webhookb2/{g.uuid()}@{g.uuid()}/IncomingWebhook/{s}/{g.uuid()}", (s,))),
    Format("twilio-api-key", "chat", lambda g: "SK" + g.hex(32), ("TWILIO_API_KEY",), "Twilio API key"),
    Format("twilio-auth-token", "chat", lambda g: g.hex(32), ("TWILIO_AUTH_TOKEN",), "Twilio auth token", False),
    Format("sendgrid-api-key", "chat", lambda g: "SG." + g.b64url(22) + "." + g.b64url(43), ("SENDGRID_API_KEY",), "SendGrid key"),
    Format("mailgun-api-key", "chat", lambda g: "key-" + g.hex(32), ("MAILGUN_API_KEY",), "Mailgun key"),
    Format("mailgun-signing-key", "chat", lambda g: f"{g.hex(32)}-{g.hex(8)}-{g.hex(8)}", ("MAILGUN_API_KEY",), "Mailgun key", False),
    Format("mailchimp-api-key", "chat", lambda g: g.hex(32) + "-us" + g.digits(2), ("MAILCHIMP_API_KEY",), "Mailchimp key"),
    Format("brevo-api-key", "chat", lambda g: "xkeysib-" + g.hex(64) + "-" + g.alnum(16), ("BREVO_API_KEY",), "Brevo key"),
    Format("postmark-server-token", "chat", lambda g: g.uuid(), ("POSTMARK_SERVER_TOKEN",), "Postmark token", False),
    Format("twitter-bearer-token", "chat", lambda g: "AAAAAAAAAAAAAAAAAAAAA" + g.alnum(30) + "%3D" + g.alnum(50), ("TWITTER_BEARER_TOKEN",), "Twitter bearer token"),
    Format("facebook-page-token", "chat", lambda g: "EAAG" + g.alnum(180), ("FB_PAGE_ACCESS_TOKEN",), "Facebook page token"),
    Format("mattermost-token", "chat", lambda g: g.pick(LOWER_ALNUM, 26), ("MATTERMOST_TOKEN",), "Mattermost token", False),
    # observability
    Format("datadog-api-key", "observability", lambda g: g.hex(32), ("DD_API_KEY", "DATADOG_API_KEY"), "Datadog API key", False),
    Format("datadog-app-key", "observability", lambda g: g.hex(40), ("DD_APP_KEY", "DATADOG_APP_KEY"), "Datadog app key", False),
    Format("new-relic-user-key", "observability", lambda g: "NRAK-" + g.pick(UPPER_ALNUM, 27), ("NEW_RELIC_API_KEY",), "New Relic key"),
    Format("new-relic-license-key", "observability", lambda g: g.hex(36) + "NRAL", ("NEW_RELIC_LICENSE_KEY",), "New Relic license key"),
    Format("new-relic-insert-key", "observability", lambda g: "NRII-" + g.b64url(32), ("NEW_RELIC_INSERT_KEY",), "insert key"),
    Format("sentry-dsn", "observability", lambda g: (k := g.hex(32)) and Planted(
        f"https://{k}@o{g.digits(6)}.ingest.sentry.io/{g.digits(7)}", (k,))),
    Format("sentry-user-token", "observability", lambda g: "sntryu_" + g.hex(64), ("SENTRY_AUTH_TOKEN",), "Sentry token"),
    Format("grafana-service-account-token", "observability", lambda g: "glsa_" + g.alnum(32) + "_" + g.hex(8), ("GRAFANA_TOKEN",), "Grafana token"),
    Format("grafana-cloud-token", "observability", lambda g: "glc_" + g.b64(120), ("GRAFANA_CLOUD_TOKEN",), "Grafana Cloud token"),
    Format("dynatrace-token", "observability", lambda g: "dt0c01." + g.pick(UPPER_ALNUM, 24) + "." + g.pick(UPPER_ALNUM, 64), ("DT_API_TOKEN",), "Dynatrace token"),
    Format("posthog-personal-key", "observability", lambda g: "phx_" + g.alnum(43), ("POSTHOG_PERSONAL_API_KEY",), "PostHog key"),
    Format("pagerduty-token", "observability", lambda g: "u+" + g.b64url(18), ("PAGERDUTY_TOKEN",), "PagerDuty token", False),
    Format("splunk-hec-token", "observability", lambda g: g.uuid(), ("SPLUNK_HEC_TOKEN",), "Splunk HEC token", False),
    Format("rollbar-token", "observability", lambda g: g.hex(32), ("ROLLBAR_ACCESS_TOKEN",), "Rollbar token", False),
    # SaaS
    Format("linear-api-key", "saas", lambda g: "lin_api_" + g.alnum(40), ("LINEAR_API_KEY",), "Linear key"),
    Format("notion-token", "saas", lambda g: "ntn_" + g.digits(11) + g.alnum(35), ("NOTION_TOKEN",), "Notion token"),
    Format("airtable-pat", "saas", lambda g: "pat" + g.alnum(14) + "." + g.hex(64), ("AIRTABLE_TOKEN",), "Airtable token"),
    Format("figma-token", "saas", lambda g: "figd_" + g.b64url(40), ("FIGMA_TOKEN",), "Figma token"),
    Format("postman-api-key", "saas", lambda g: "PMAK-" + g.hex(24) + "-" + g.hex(34), ("POSTMAN_API_KEY",), "Postman key"),
    Format("contentful-token", "saas", lambda g: "CFPAT-" + g.b64url(43), ("CONTENTFUL_MANAGEMENT_TOKEN",), "Contentful token"),
    Format("mapbox-secret-token", "saas", lambda g: "sk.eyJ1IjoiYWNtZSIsImEiOiJ" + g.b64url(20) + "." + g.b64url(22), ("MAPBOX_SECRET_TOKEN",), "Mapbox token"),
    Format("dropbox-token", "saas", lambda g: "sl." + g.b64url(135), ("DROPBOX_TOKEN",), "Dropbox token"),
    Format("hubspot-pat", "saas", lambda g: "pat-na1-" + g.uuid(), ("HUBSPOT_ACCESS_TOKEN",), "HubSpot token"),
    Format("asana-pat", "saas", lambda g: f"2/{g.digits(16)}/{g.digits(16)}:{g.hex(32)}", ("ASANA_TOKEN",), "Asana token", False),
    Format("okta-api-token", "saas", lambda g: "00" + g.b64url(40), ("OKTA_API_TOKEN",), "Okta token", False),
    Format("algolia-admin-key", "saas", lambda g: g.hex(32), ("ALGOLIA_ADMIN_KEY",), "Algolia admin key", False),
    Format("zendesk-api-token", "saas", lambda g: g.alnum(40), ("ZENDESK_API_TOKEN",), "Zendesk token", False),
    # private keys and signed tokens
    Format("rsa-private-key", "keys", _pem("RSA", 12)),
    Format("ec-private-key", "keys", _pem("EC", 2)),
    Format("openssh-private-key", "keys", _pem("OPENSSH", 6)),
    Format("pkcs8-private-key", "keys", _pem("", 10)),
    Format("encrypted-private-key", "keys", _pem("ENCRYPTED", 10)),
    Format("dsa-private-key", "keys", _pem("DSA", 8)),
    Format("pgp-private-key", "keys", _pgp),
    Format("jwt", "keys", _jwt, ("ACCESS_TOKEN", "SUPABASE_SERVICE_ROLE_KEY", "JWT"), "JWT"),
    # generic: credentials in URLs, headers and assignments
    Format("postgres-url-password", "generic", _url("postgres", "app_user", "db.internal:5432/app")),
    Format("redis-url-empty-user", "generic", _url("redis", "", "cache.internal:6379/0")),
    Format("mongodb-srv-password", "generic", _url("mongodb+srv", "admin", "cluster0.x1y2z.mongodb.net/prod")),
    Format("amqp-url-password", "generic", _url("amqps", "orders", "mq.internal/vhost")),
    Format("url-query-access-token", "generic", _query("access_token")),
    Format("url-query-api-key", "generic", _query("api_key")),
    Format("authorization-bearer", "generic", lambda g: (v := g.alnum(40)) and Planted(f"Authorization: Bearer {v}", (v,))),
    Format("authorization-basic", "generic", _basic),
    Format("curl-user-password", "generic", lambda g: (p := g.password().replace("'", "")) and Planted(
        f"curl -u 'admin:{p}' https://jenkins.internal/api/json", (p,))),
    Format("env-short-password", "generic", lambda g: g.short_password(), ("DB_PASSWORD", "PGPASSWORD", "MYSQL_ROOT_PASSWORD", "REDIS_PASSWORD"), "database password", False),
    Format("punctuated-password", "generic", lambda g: g.password(), ("DB_PASSWORD", "ADMIN_PASSWORD", "SMTP_PASSWORD", "password"), "admin password", False),
    # a password of words, written where the syntax states the value (quoted, NAME=value);
    # a lone unquoted YAML line and prose read as prose ("password: rotated"), so they are
    # not planted (a YAML mapping's and an INI section's lines are, below)
    Format("word-password", "generic", lambda g: g.passphrase(), ("DB_PASSWORD", "ADMIN_PASSWORD", "SMTP_PASSWORD", "PGPASSWORD"), "admin password", False,
           ("env", "export", "yaml-quoted", "json", "toml", "python", "js", "go", "compose", "md-inline")),
    Format("django-secret-key", "generic", lambda g: "django-insecure-" + g.pick(LOWER_ALNUM + "!@#$%^&*(-_=+)", 50), ("SECRET_KEY",), "Django secret key", False),
    Format("rails-secret-key-base", "generic", lambda g: g.hex(128), ("SECRET_KEY_BASE",), "secret_key_base", False),
    Format("laravel-app-key", "generic", lambda g: "base64:" + g.bytes_b64(32), ("APP_KEY",), "app key", False),
    Format("jwt-secret", "generic", lambda g: g.alnum(48), ("JWT_SECRET", "SESSION_SECRET"), "JWT signing secret", False),
    Format("generic-api-key", "generic", lambda g: g.alnum(32), ("API_KEY", "ACME_API_KEY", "x-api-key"), "API key", False),
    Format("deploy-key", "generic", lambda g: g.b64(44), ("deploy_key", "signing_key", "ENCRYPTION_KEY"), "deploy key", False),
    Format("webhook-secret", "generic", lambda g: g.hex(64), ("WEBHOOK_SECRET",), "webhook secret", False),
    Format("json-password-with-spaces", "generic", lambda g: f"{g.choice(['Blue', 'Red', 'Gold'])} Horse {g.digits(2)} Staple!", ("password",), "vault passphrase", False,
           ("json", "yaml-quoted", "toml", "python", "js", "go", "export")),
    Format("sqlserver-connection-string", "generic", lambda g: (p := g.password().replace(";", "!")) and Planted(
        f"Server=tcp:acme.database.windows.net,1433;Database=orders;User Id=sqladmin;Password={p};Encrypt=true;", (p,))),
    Format("jdbc-url-password", "generic", lambda g: (p := g.alnum(16)) and Planted(
        f"jdbc:mysql://db.internal:3306/app?user=app&password={p}&useSSL=true", (p,))),
    Format("netrc-password", "generic", lambda g: (p := g.alnum(24)) and Planted(
        f"machine api.acme.dev login deploy-bot password {p}", (p,))),
    Format("maven-settings-password", "generic", lambda g: (p := g.password().replace("<", "").replace("&", "")) and Planted(
        f"<server>\n  <id>nexus</id>\n  <username>ci</username>\n  <password>{p}</password>\n</server>", (p,))),
    Format("chinese-prose-password", "generic", lambda g: (p := g.password()) and Planted(f"测试环境数据库密码是 {p} ，别外传。", (p,))),
    Format("prose-password", "generic", lambda g: (p := g.password()) and Planted(
        f"The password for the staging database is {p}.", (p,))),
    Format("prose-token", "generic", lambda g: (p := g.alnum(32)) and Planted(
        f"FYI the deploy token is {p}, it expires Friday.", (p,))),
    Format("markdown-table-password", "generic", lambda g: (p := g.password().replace("|", "!")) and Planted(
        f"| service | user | password |\n|---|---|---|\n| grafana | admin | {p} |", (p,))),
    # a password of words where the file's syntax states it: Capitalised in an environment
    # variable (NAME=Value), lower case on a line of an INI section or a YAML mapping
    Format("capitalised-word-password", "generic", lambda g: _capitalised(g, g.passphrase()), ("DB_PASSWORD", "ADMIN_PASSWORD", "SMTP_PASSWORD", "PGPASSWORD"),
           "admin password", False, ("env", "export", "compose")),
    Format("ini-word-password", "generic", lambda g: (p := g.passphrase()) and Planted(
        f"[{g.choice(['database', 'client', 'smtp', 'pypi'])}]\nhost = db.internal\nuser = app\npassword = {p}\n", (p,))),
    Format("yaml-word-password", "generic", lambda g: (p := g.passphrase()) and Planted(
        f"{g.choice(['database', 'smtp', 'redis'])}:\n  host: db.internal\n  user: app\n  password: {p}\n  port: 5432", (p,))),
)
