"""Provider tokens of cloud platforms, hosting and secret managers.

Lengths are a little looser than the providers document where the prefix alone is
distinctive (a hand-shortened test key is still a key); exact where the prefix is short.
"""

from __future__ import annotations

from openmemex.redact.rules import LEFT, RIGHT_ALNUM, TokenRule, inner, token

_B64 = "A-Za-z0-9+/"


def _not_aws_example(value: str) -> bool:
    """AWS's documentation keys end in EXAMPLE; they are published on purpose."""
    return not value.endswith("EXAMPLE")


RULES: tuple[TokenRule, ...] = (
    token("aws-access-key-id", "cloud", "(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])", "[A-Z0-9]{16}",
          keywords=("akia", "asia", "abia", "acca", "a3t"), entropy=3.0, right=RIGHT_ALNUM, glued=True,
          check=_not_aws_example),
    token("aws-bedrock-api-key", "cloud", "ABSK", f"[{_B64}]{{100,270}}={{0,2}}", entropy=4.0),
    token("google-api-key", "cloud", "AIza", "[0-9A-Za-z_-]{30,60}", entropy=3.5),
    token("google-oauth-client-secret", "cloud", "GOCSPX-", "[A-Za-z0-9_-]{24,40}", entropy=3.0),
    token("google-oauth-access-token", "cloud", "ya29.", "[0-9A-Za-z_-]{30,300}", entropy=3.5),
    token("google-oauth-refresh-token", "cloud", "1//0", "[0-9A-Za-z_-]{40,300}", entropy=3.5),
    inner("azure-ad-client-secret", "cloud", ("q~",),
          r"(?<![A-Za-z0-9_~.-])(?P<s>[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{30,36})(?![A-Za-z0-9_~-])", 4,
          entropy=3.0),
    inner("azure-storage-account-key", "cloud", ("accountkey=",),
          rf"(?i:accountkey)=(?P<s>[{_B64}]{{40,100}}={{0,2}})", 0, entropy=4.0, boundary=True),
    inner("azure-shared-access-key", "cloud", ("sharedaccesskey=",),
          rf"(?i:sharedaccesskey)=(?P<s>[{_B64}]{{40,60}}={{0,2}})", 0, entropy=4.0, boundary=True),
    inner("azure-sas-token", "cloud", ("sig=",),
          r"(?<=[?&;])sig=(?P<s>[A-Za-z0-9%+/]{30,120}(?:%3[Dd]|=){0,2})", 0, entropy=3.5, boundary=True),
    token("alibaba-access-key-id", "cloud", "LTAI", "[A-Za-z0-9]{12,20}", entropy=3.0, right=RIGHT_ALNUM),
    token("tencent-secret-id", "cloud", "AKID", "[A-Za-z0-9]{32}", entropy=3.5, right=RIGHT_ALNUM),
    token("digitalocean-pat", "cloud", "dop_v1_", "[a-f0-9]{64}", entropy=3.0),
    token("digitalocean-oauth-token", "cloud", "doo_v1_", "[a-f0-9]{64}", entropy=3.0),
    token("digitalocean-refresh-token", "cloud", "dor_v1_", "[a-f0-9]{64}", entropy=3.0),
    token("heroku-api-key-v2", "cloud", "HRKU-", "[0-9A-Za-z_-]{40,70}", entropy=3.5),
    token("cloudflare-origin-ca-key", "cloud", "v1.0-", "[a-f0-9]{24}-[a-f0-9]{146}", entropy=3.0),
    token("flyio-token", "cloud", "(?:fo1_|fm1[ar]_|fm2_)", "[A-Za-z0-9_+/-]{40,}={0,3}",
          keywords=("fo1_", "fm1a_", "fm1r_", "fm2_"), entropy=4.0),
    token("vault-service-token", "cloud", "hvs.", "[A-Za-z0-9_-]{24,300}", entropy=3.5),
    token("vault-batch-token", "cloud", "hvb.", "[A-Za-z0-9_-]{24,300}", entropy=3.5),
    inner("terraform-cloud-token", "cloud", (".atlasv1.",),
          rf"{LEFT}(?P<s>[A-Za-z0-9]{{14}}\.atlasv1\.[A-Za-z0-9_=-]{{60,70}})(?![A-Za-z0-9_=-])", 14,
          entropy=3.5),
    token("doppler-token", "cloud", r"dp\.(?:pt|st|sa|ct|scim|audit)\.", "[A-Za-z0-9]{40,44}",
          keywords=("dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim.", "dp.audit."), entropy=3.5),
    token("pulumi-access-token", "cloud", "pul-", "[a-f0-9]{40}", entropy=3.0),
    token("databricks-token", "cloud", "dapi", "[a-f0-9]{32}(?:-[0-9])?", entropy=3.0),
    token("scalingo-token", "cloud", "tk-us-", "[A-Za-z0-9_-]{48}", entropy=3.5),
    token("supabase-access-token", "cloud", "sbp_", "[a-f0-9]{40}", entropy=3.0),
    token("supabase-secret-key", "cloud", "sb_secret_", "[A-Za-z0-9_-]{20,80}", entropy=3.5),
    token("planetscale-token", "cloud", "pscale_(?:tkn|pw|oauth)_", "[A-Za-z0-9_=.-]{31,63}[A-Za-z0-9_=-]",
          keywords=("pscale_tkn_", "pscale_pw_", "pscale_oauth_"), entropy=3.5),
    token("openshift-user-token", "cloud", "sha256~", "[A-Za-z0-9_-]{43}", entropy=3.5),
    token("onepassword-secret-key", "cloud", "A3-",
          "[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
          entropy=3.5),
    token("onepassword-service-token", "cloud", "ops_eyJ", f"[{_B64}]{{100,}}={{0,3}}", entropy=4.0),
    token("render-api-key", "cloud", "rnd_", "[A-Za-z0-9]{32}", entropy=3.5, glued=False),
    token("tailscale-key", "cloud", "tskey-", "(?:api|auth|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}",
          entropy=3.5),
    token("netlify-token", "cloud", "nfp_", "[A-Za-z0-9]{36,40}", entropy=3.5),
)
