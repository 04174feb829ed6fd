"""Provider tokens of source hosts, CI/CD services and package registries."""

from __future__ import annotations

from openmemex.redact.rules import RIGHT_ALNUM, TokenRule, inner, token

_GL = "[A-Za-z0-9_-]{20,64}"  # GitLab's token bodies: 20 chars, routable ones longer

RULES: tuple[TokenRule, ...] = (
    # GitHub
    token("github-pat", "source", "ghp_", "[A-Za-z0-9]{30,255}", entropy=2.0),
    token("github-oauth-token", "source", "gho_", "[A-Za-z0-9]{30,255}", entropy=2.0),
    token("github-user-token", "source", "ghu_", "[A-Za-z0-9]{30,255}", entropy=2.0),
    token("github-app-token", "source", "ghs_", "[A-Za-z0-9]{30,255}", entropy=2.0),
    token("github-refresh-token", "source", "ghr_", "[A-Za-z0-9]{30,255}", entropy=2.0),
    token("github-fine-grained-pat", "source", "github_pat_", "[A-Za-z0-9_]{40,255}", entropy=2.0),
    # GitLab
    token("gitlab-pat", "source", "glpat-", _GL + r"(?:\.[0-9a-z]{9,11})?", entropy=3.0),
    token("gitlab-deploy-token", "source", "gldt-", _GL, entropy=3.0),
    token("gitlab-runner-token", "source", "glrt-", r"(?:t\d_)?" + _GL + r"(?:\.[0-9a-z]{9,11})?", entropy=3.0),
    token("gitlab-ci-job-token", "source", "glcbt-", "[0-9A-Za-z]{1,5}_[0-9A-Za-z_-]{20,}", entropy=3.0),
    token("gitlab-trigger-token", "source", "glptt-", "[0-9a-f]{40}", entropy=3.0),
    token("gitlab-feed-token", "source", "glft-", _GL, entropy=3.0),
    token("gitlab-incoming-mail-token", "source", "glimt-", "[A-Za-z0-9_-]{25,64}", entropy=3.0),
    token("gitlab-agent-token", "source", "glagent-", "[A-Za-z0-9_-]{50,64}", entropy=3.0),
    token("gitlab-oauth-secret", "source", "gloas-", "[A-Za-z0-9_-]{64}", entropy=3.0),
    token("gitlab-scim-token", "source", "glsoat-", _GL, entropy=3.0),
    token("gitlab-feature-flag-token", "source", "glffct-", _GL, entropy=3.0),
    token("gitlab-runner-registration-token", "source", "GR1348941", "[A-Za-z0-9_-]{20}", entropy=3.0),
    inner("gitlab-session-cookie", "source", ("_gitlab_session=",),
          r"_gitlab_session=(?P<s>[0-9a-z]{32})(?![A-Za-z0-9])", 0, entropy=3.0),
    # Atlassian / Bitbucket, Sourcegraph
    token("atlassian-api-token", "source", "ATATT3", "[A-Za-z0-9_=-]{100,200}", entropy=4.0),
    token("bitbucket-access-token", "source", "ATCTT3", "[A-Za-z0-9_=-]{100,200}", entropy=4.0),
    token("bitbucket-app-password", "source", "ATBB", "[A-Za-z0-9]{28,64}", entropy=3.5, right=RIGHT_ALNUM),
    token("sourcegraph-token", "source", "sgp_", "(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40}", entropy=3.0),
    # CI/CD and code quality
    token("circleci-token", "ci", "CCIPAT_", "[A-Za-z0-9]{22}_[a-f0-9]{40}", entropy=3.5),
    token("buildkite-token", "ci", "bkua_", "[a-f0-9]{40}", entropy=3.0),
    token("sonarqube-token", "ci", "sq[upa]_", "[a-f0-9]{40}", keywords=("squ_", "sqp_", "sqa_"), entropy=3.0),
    token("harness-token", "ci", r"(?:pat|sat)\.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
          keywords=("pat.", "sat."), entropy=3.5),
    token("octopus-deploy-key", "ci", "API-", "[A-Z0-9]{26}", entropy=3.5, right=RIGHT_ALNUM, glued=False),
    token("infracost-token", "ci", "ico-", "[A-Za-z0-9]{32}", entropy=3.5, glued=False),
    # Package registries
    token("npm-token", "registry", "npm_", "[A-Za-z0-9]{30,64}", entropy=3.0),
    token("pypi-token", "registry", "pypi-AgE", "[A-Za-z0-9_-]{50,}", entropy=4.0),
    token("docker-hub-pat", "registry", "dckr_pat_", "[A-Za-z0-9_-]{20,64}", entropy=3.5),
    token("docker-hub-org-token", "registry", "dckr_oat_", "[A-Za-z0-9_-]{20,64}", entropy=3.5),
    token("rubygems-token", "registry", "rubygems_", "[a-f0-9]{48}", entropy=3.0),
    token("nuget-api-key", "registry", "oy2", "[a-z0-9]{43}", entropy=3.5, right=RIGHT_ALNUM),
    token("clojars-token", "registry", "CLOJARS_", "[a-z0-9]{60}", entropy=3.0),
    token("crates-io-token", "registry", "cio", "[A-Za-z0-9]{32}", entropy=3.5, right=RIGHT_ALNUM),
    token("artifactory-api-key", "registry", "AKCp", "[A-Za-z0-9]{60,80}", entropy=4.0),
    token("artifactory-reference-token", "registry", "cmVmdGtu", "[A-Za-z0-9]{40,80}", entropy=4.0),
)
