"""Provider tokens of AI APIs, payments, chat and mail, observability and SaaS tools."""

from __future__ import annotations

from openmemex.redact.rules import LEFT, RIGHT_ALNUM, UUID, TokenRule, inner, token

_HEX32 = "[a-f0-9]{32}"

AI: tuple[TokenRule, ...] = (
    token("anthropic-admin-key", "ai", "sk-ant-admin", r"\d\d-[A-Za-z0-9_-]{20,}", entropy=3.5),
    token("anthropic-api-key", "ai", "sk-ant-", r"(?:api|sid|oat|ort)\d\d-[A-Za-z0-9_-]{20,}", entropy=3.5),
    token("openrouter-api-key", "ai", "sk-or-v1-", "[a-f0-9]{64}", entropy=3.0),
    token("openai-admin-key", "ai", "sk-admin-", "[A-Za-z0-9_-]{20,}", entropy=3.5),
    token("openai-key", "ai", "sk-", "(?:proj-|svcacct-|None-)?[A-Za-z0-9_-]{20,}", entropy=3.5),
    token("openai-session-key", "ai", "sess-", "[A-Za-z0-9]{40}", entropy=3.5, right=RIGHT_ALNUM),
    token("huggingface-token", "ai", "hf_", "[A-Za-z0-9]{30,40}", entropy=3.5, right=RIGHT_ALNUM),
    token("huggingface-org-token", "ai", "api_org_", "[A-Za-z0-9]{30,40}", entropy=3.5, right=RIGHT_ALNUM),
    token("groq-api-key", "ai", "gsk_", "[A-Za-z0-9]{40,60}", entropy=3.5),
    token("perplexity-api-key", "ai", "pplx-", "[A-Za-z0-9]{40,60}", entropy=3.5),
    token("replicate-api-token", "ai", "r8_", "[A-Za-z0-9]{30,40}", entropy=3.5),
    token("xai-api-key", "ai", "xai-", "[A-Za-z0-9]{60,100}", entropy=3.5),
    token("langsmith-api-key", "ai", "lsv2_", "(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", entropy=3.0),
    token("pinecone-api-key", "ai", "pcsk_", "[A-Za-z0-9]{4,8}_[A-Za-z0-9]{40,90}", entropy=3.5),
    token("elevenlabs-api-key", "ai", "sk_", "[a-f0-9]{48}", entropy=3.0),
    token("tavily-api-key", "ai", "tvly-", "(?:dev-|prod-)?[A-Za-z0-9]{32}", entropy=3.5),
    token("firecrawl-api-key", "ai", "fc-", _HEX32, entropy=3.0),
)

PAYMENTS: tuple[TokenRule, ...] = (
    token("stripe-secret-key", "payments", "sk_(?:live|test|prod)_", "[A-Za-z0-9]{20,247}",
          keywords=("sk_live_", "sk_test_", "sk_prod_"), entropy=3.0),
    token("stripe-restricted-key", "payments", "rk_(?:live|test|prod)_", "[A-Za-z0-9]{20,247}",
          keywords=("rk_live_", "rk_test_", "rk_prod_"), entropy=3.0),
    token("stripe-webhook-secret", "payments", "whsec_", "[A-Za-z0-9+/=]{20,}", entropy=3.0),
    token("square-access-token", "payments", "(?:EAAA|sq0atp-)", "[A-Za-z0-9_-]{22,60}",
          keywords=("eaaa", "sq0atp-"), entropy=3.5),
    token("square-oauth-secret", "payments", "sq0csp-", "[A-Za-z0-9_-]{43}", entropy=3.5),
    token("braintree-access-token", "payments", r"access_token\$(?:production|sandbox)\$",
          r"[a-z0-9]{16}\$[a-f0-9]{32}", keywords=("access_token$",), entropy=3.0),
    token("shopify-access-token", "payments", "shpat_", _HEX32, entropy=3.0),
    token("shopify-custom-app-token", "payments", "shpca_", _HEX32, entropy=3.0),
    token("shopify-private-app-token", "payments", "shppa_", _HEX32, entropy=3.0),
    token("shopify-shared-secret", "payments", "shpss_", _HEX32, entropy=3.0),
    token("flutterwave-secret-key", "payments", "FLWSECK", "(?:_TEST)?-[a-hA-H0-9]{32}-X", entropy=3.0),
    token("plaid-access-token", "payments", "access-(?:sandbox|development|production)-", UUID,
          keywords=("access-sandbox-", "access-development-", "access-production-"), entropy=3.0),
    token("shippo-api-token", "payments", "shippo_", "(?:live|test)_[a-f0-9]{40}", entropy=3.0),
    token("easypost-api-key", "payments", "EZ[AT]K", "[A-Za-z0-9]{54}", keywords=("ezak", "eztk"),
          entropy=3.5),
    token("duffel-api-token", "payments", "duffel_", "(?:test|live)_[A-Za-z0-9_=-]{43}", entropy=3.5),
)

CHAT: tuple[TokenRule, ...] = (
    token("slack-bot-token", "chat", "xoxb-", "[A-Za-z0-9-]{20,}", entropy=3.0),
    token("slack-user-token", "chat", "xox[pe]-", "[A-Za-z0-9-]{20,}", keywords=("xoxp-", "xoxe-"), entropy=3.0),
    token("slack-legacy-token", "chat", "xox[aors]-", "[A-Za-z0-9-]{10,}",
          keywords=("xoxa-", "xoxo-", "xoxr-", "xoxs-"), entropy=3.0),
    token("slack-config-token", "chat", "xoxe.xox", "[bp]-[0-9]-[A-Za-z0-9]{100,}", entropy=3.5),
    token("slack-app-token", "chat", "xapp-", "[0-9]-[A-Z0-9]+-[0-9]+-[a-z0-9]{20,}", entropy=3.0),
    inner("slack-webhook-url", "chat", ("hooks.slack.com/",),
          r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9+/_-]{20,})", 0, entropy=3.0,
          boundary=True),
    inner("discord-webhook-url", "chat", ("discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
          r"discord(?:app)?\.com/api/webhooks/(?P<s>[0-9]{16,20}/[A-Za-z0-9_-]{60,70})", 0, entropy=3.0,
          boundary=True),
    inner("teams-webhook-url", "chat", (".office.com/webhookb2/",),
          r"\.office\.com/webhookb2/(?P<s>[A-Za-z0-9@-]{30,}/IncomingWebhook/[a-f0-9]{32}/[A-Za-z0-9-]{36,})",
          0, entropy=3.0),
    inner("telegram-bot-token", "chat", (":aa",),
          r"(?:(?<=bot)|(?<![A-Za-z0-9_-]))(?P<s>[0-9]{8,10}:AA[A-Za-z0-9_-]{30,40})(?![A-Za-z0-9_-])", 10,
          entropy=3.5),
    token("twilio-api-key", "chat", "SK", "[0-9a-fA-F]{32}", entropy=3.0, right=RIGHT_ALNUM),
    token("sendgrid-api-key", "chat", "SG.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", entropy=3.5),
    token("mailgun-api-key", "chat", "key-", "[a-f0-9]{32}", entropy=3.0, right=RIGHT_ALNUM),
    inner("mailchimp-api-key", "chat", ("-us",), rf"{LEFT}(?P<s>{_HEX32}-us[0-9]{{1,2}})(?![A-Za-z0-9])", 32,
          entropy=3.0),
    token("brevo-api-key", "chat", "xkeysib-", "[a-f0-9]{64}-[A-Za-z0-9]{16}", entropy=3.0),
    token("brevo-smtp-key", "chat", "xsmtpsib-", "[a-f0-9]{64}-[A-Za-z0-9]{16}", entropy=3.0),
    token("twitter-bearer-token", "chat", "AAAAAAAAAAAAAAAAAAAAA", "[A-Za-z0-9%]{30,}",
          keywords=("aaaaaaaaaaaaaaaaaaaaa",), entropy=3.5),
    token("facebook-access-token", "chat", "EAA", "[A-Za-z0-9]{100,}", entropy=4.0),
)

OBSERVABILITY: tuple[TokenRule, ...] = (
    token("new-relic-user-api-key", "observability", "NRAK-", "[A-Z0-9]{27}", entropy=3.5),
    token("new-relic-insert-key", "observability", "NRII-", "[A-Za-z0-9_-]{32}", entropy=3.5),
    token("new-relic-browser-key", "observability", "NRJS-", "[a-f0-9]{19}", entropy=3.0),
    inner("new-relic-license-key", "observability", ("nral",), rf"{LEFT}(?P<s>[a-f0-9]{{36}}NRAL)(?![A-Za-z0-9])",
          36, entropy=3.0),
    token("sentry-user-token", "observability", "sntryu_", "[a-f0-9]{64}", entropy=3.0),
    token("sentry-org-token", "observability", "sntrys_", "eyJ[A-Za-z0-9+/=_]{50,}", entropy=4.0),
    token("grafana-api-key", "observability", "eyJrIjoi", "[A-Za-z0-9]{50,400}={0,3}", entropy=3.5),
    token("grafana-cloud-token", "observability", "glc_", "[A-Za-z0-9+/]{32,400}={0,3}", entropy=3.5),
    token("grafana-service-account-token", "observability", "glsa_", "[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
          entropy=3.5),
    token("dynatrace-token", "observability", "dt0c01.", r"[A-Z0-9]{24}\.[A-Z0-9]{64}", entropy=3.5),
    token("posthog-personal-key", "observability", "phx_", "[A-Za-z0-9]{30,50}", entropy=3.5),
    token("launchdarkly-key", "observability", "(?:api|sdk)-", UUID, keywords=("api-", "sdk-"), entropy=3.0),
)

SAAS: tuple[TokenRule, ...] = (
    token("linear-api-key", "saas", "lin_api_", "[A-Za-z0-9]{40}", entropy=3.5),
    token("linear-oauth-token", "saas", "lin_oauth_", "[a-f0-9]{64}", entropy=3.0),
    token("notion-token", "saas", "ntn_", "[A-Za-z0-9]{40,50}", entropy=3.5),
    token("notion-legacy-token", "saas", "secret_", "[A-Za-z0-9]{43}", entropy=4.0, right=RIGHT_ALNUM),
    token("airtable-pat", "saas", "pat", r"[A-Za-z0-9]{14}\.[a-f0-9]{64}", entropy=3.5),
    token("figma-token", "saas", "figd_", "[A-Za-z0-9_-]{30,60}", entropy=3.5),
    token("postman-api-key", "saas", "PMAK-", "[a-f0-9]{24}-[a-f0-9]{34}", entropy=3.0),
    token("typeform-token", "saas", "tfp_", "[A-Za-z0-9_=.-]{39,69}[A-Za-z0-9_=-]", entropy=3.5),
    token("contentful-token", "saas", "CFPAT-", "[A-Za-z0-9_-]{43}", entropy=3.5),
    token("mapbox-secret-token", "saas", "sk.eyJ", "[A-Za-z0-9_.-]{50,}[A-Za-z0-9_-]", entropy=3.5),
    token("dropbox-token", "saas", "sl.", "[A-Za-z0-9_.-]{129,}[A-Za-z0-9_-]", entropy=4.0),
    token("hubspot-pat", "saas", "pat-(?:na|eu)[0-9]-", UUID, keywords=("pat-na", "pat-eu"), entropy=3.0),
    token("yandex-api-key", "saas", "AQVN", "[A-Za-z0-9_-]{35,38}", entropy=3.5),
    token("prefect-token", "saas", "pnu_", "[A-Za-z0-9]{36}", entropy=3.5),
    token("readme-api-key", "saas", "rdme_", "[a-z0-9]{70}", entropy=3.5),
    token("frameio-token", "saas", "fio-u-", "[A-Za-z0-9_=-]{64}", entropy=3.5),
    token("settlemint-token", "saas", "sm_(?:pat|aat|sat)_", "[A-Za-z0-9]{16}",
          keywords=("sm_pat_", "sm_aat_", "sm_sat_"), entropy=3.0),
    inner("maxmind-license-key", "saas", ("_mmk",), rf"{LEFT}(?P<s>[A-Za-z0-9]{{6}}_[A-Za-z0-9]{{29}}_mmk){RIGHT_ALNUM}",
          37, entropy=3.5),
)

RULES: tuple[TokenRule, ...] = AI + PAYMENTS + CHAT + OBSERVABILITY + SAAS
