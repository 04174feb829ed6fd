"""Provider secrets with no prefix of their own: recognised by the name they are given.

``DATADOG_API_KEY=<32 hex>``, ``heroku api key is <uuid>``: the value alone is an ordinary
hex string or UUID (never masked on its own), but next to the provider's name it is that
provider's credential. Checked on the pairs the generic parser found, first, so the
report names the provider instead of ``generic-secret-assignment``.
"""

from __future__ import annotations

from openmemex.redact.rules import UUID, ContextRule, context

_B64_40 = "[A-Za-z0-9/+=]{40}"

RULES: tuple[ContextRule, ...] = (
    context("aws-secret-access-key", "cloud", ("aws",), _B64_40, also=("secret", "sak", "_key")),
    context("aws-session-token", "cloud", ("aws",), "[A-Za-z0-9/+=]{100,}", also=("session", "token")),
    context("azure-devops-pat", "cloud", ("devops", "azdo", "ado_pat", "ado_token"), "[a-z2-7]{52}|[A-Za-z0-9]{84}"),
    context("heroku-api-key", "cloud", ("heroku",), UUID),
    context("cloudflare-api-token", "cloud", ("cloudflare", "cf_api"), "[A-Za-z0-9_-]{40}", entropy=3.5),
    context("cloudflare-global-api-key", "cloud", ("cloudflare", "cf_api"), "[a-f0-9]{37}"),
    context("ibm-cloud-api-key", "cloud", ("ibm",), "[A-Za-z0-9_-]{44}", entropy=3.5),
    context("alibaba-access-key-secret", "cloud", ("alibaba", "aliyun"), "[A-Za-z0-9]{30}", entropy=3.5),
    context("vercel-token", "cloud", ("vercel",), "[A-Za-z0-9]{24}", entropy=3.5),
    context("ngrok-authtoken", "cloud", ("ngrok",), "[A-Za-z0-9]{20,30}_[A-Za-z0-9]{17,30}", entropy=3.5),
    context("datadog-api-key", "observability", ("datadog", "dd_api", "ddapi"), "[a-f0-9]{32}"),
    context("datadog-app-key", "observability", ("datadog", "dd_app"), "[a-f0-9]{40}", also=("app",)),
    context("splunk-hec-token", "observability", ("splunk", "hec_"), UUID),
    context("pagerduty-api-key", "observability", ("pagerduty", "pd_api", "pd_token"), "[A-Za-z0-9_+-]{20}",
            entropy=3.5),
    context("rollbar-token", "observability", ("rollbar",), "[a-f0-9]{32}"),
    context("bugsnag-api-key", "observability", ("bugsnag",), "[a-f0-9]{32}"),
    context("twilio-auth-token", "chat", ("twilio",), "[a-f0-9]{32}"),
    context("mailgun-signing-key", "chat", ("mailgun",), "[a-f0-9]{32}-[a-f0-9]{8}-[a-f0-9]{8}"),
    context("postmark-server-token", "chat", ("postmark",), UUID),
    context("slack-signing-secret", "chat", ("slack",), "[a-f0-9]{32}", also=("signing", "secret")),
    context("discord-bot-token", "chat", ("discord", "bot"),
            r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}", entropy=3.5),
    context("pusher-secret", "chat", ("pusher",), "[a-f0-9]{20}"),
    context("twitter-api-secret", "chat", ("twitter",), "[A-Za-z0-9]{35,50}", entropy=3.5),
    context("twitch-api-token", "chat", ("twitch",), "[a-z0-9]{30}", entropy=3.5),
    context("facebook-app-secret", "chat", ("facebook", "fb_"), "[a-f0-9]{32}", also=("secret",)),
    context("intercom-token", "chat", ("intercom",), "[A-Za-z0-9=_-]{60}", entropy=3.5),
    context("zendesk-api-token", "saas", ("zendesk",), "[A-Za-z0-9]{40}", entropy=3.5),
    context("cohere-api-key", "ai", ("cohere", "co_api_key"), "[A-Za-z0-9]{40}", entropy=3.5),
    context("mistral-api-key", "ai", ("mistral",), "[A-Za-z0-9]{32}", entropy=3.5),
    context("together-api-key", "ai", ("together",), "[a-f0-9]{64}"),
    context("wandb-api-key", "ai", ("wandb", "w&b"), "[a-f0-9]{40}"),
    context("github-client-secret", "source", ("github", "gh_"), "[a-f0-9]{40}", also=("secret",)),
    context("jfrog-api-key", "registry", ("jfrog", "artifactory"), "[A-Za-z0-9]{64,73}", entropy=3.5),
    context("circleci-legacy-token", "ci", ("circle",), "[a-f0-9]{40}"),
    context("travis-ci-token", "ci", ("travis",), "[A-Za-z0-9]{22}", entropy=3.5),
    context("snyk-token", "ci", ("snyk",), UUID),
    context("algolia-admin-key", "saas", ("algolia",), "[a-f0-9]{32}"),
    context("okta-api-token", "saas", ("okta",), "00[A-Za-z0-9_=-]{40}", entropy=3.5),
    context("atlassian-legacy-token", "saas", ("jira", "confluence", "atlassian"), "[A-Za-z0-9]{24}", entropy=3.5),
    context("asana-pat", "saas", ("asana",), r"[12]/[0-9]{16}(?:/[0-9]{16})?:[a-f0-9]{32}"),
    context("segment-write-key", "saas", ("segment",), "[A-Za-z0-9]{32}", entropy=3.5),
    context("hubspot-api-key", "saas", ("hubspot",), UUID),
    context("fastly-api-token", "saas", ("fastly",), "[A-Za-z0-9_-]{32}", entropy=3.5),
    context("razorpay-key-secret", "payments", ("razorpay",), "[A-Za-z0-9]{24}", entropy=3.5),
)
