"""Synthetic, correctly shaped credentials of every kind, and near misses that are not secrets.

Every value is generated from a fixed seed at import time: none is a real
credential and none appears literally in the repository, so secret
scanners run over the repository find nothing here. Each sample states a
durable preference the way a user would, with the credential inside it.
"""

from __future__ import annotations

import random
import string

import attrs

_rng = random.Random(20261201)
LOW = string.ascii_lowercase
UP = string.ascii_uppercase
DIG = string.digits
ALNUM = LOW + UP + DIG
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


def r(alphabet: str, n: int) -> str:
    """``n`` random characters of ``alphabet``, mixing letters and digits when the alphabet has both."""
    both = any(c.isdigit() for c in alphabet) and any(c.isalpha() for c in alphabet)
    while True:
        s = "".join(_rng.choice(alphabet) for _ in range(n))
        if not both or (any(c.isdigit() for c in s) and any(c.isalpha() for c in s)):
            return s


@attrs.frozen
class Sample:
    kind: str
    secret: str
    sentence: str  # a durable preference stating the secret

    @property
    def near_miss(self) -> str:
        return NEAR_MISSES.get(self.kind, "")


def _s(kind: str, secret: str, sentence: str = "From now on always use {} for this.") -> Sample:
    return Sample(kind, secret, sentence.format(secret))


PEM_BODY = "\n".join(r(B64, 64) for _ in range(4))
SAMPLES: tuple[Sample, ...] = (
    _s("private_key", f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----",
       "Always sign releases with this key:\n{}\nThanks."),
    _s("private_key", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}\n-----END OPENSSH PRIVATE KEY-----",
       "The deploy host always uses this key:\n{}\nremember it."),
    _s("private_key", f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}\n-----END EC PRIVATE KEY-----",
       "Our webhook signer always uses:\n{}\n"),
    _s("private_key", f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n{PEM_BODY}\n-----END PGP PRIVATE KEY BLOCK-----",
       "Always sign tags with:\n{}\n"),
    _s("anthropic_key", "sk-ant-api03-" + r(URLSAFE, 93) + "AA"),
    _s("openai_key", "sk-proj-" + r(URLSAFE, 74) + "T3BlbkFJ" + r(URLSAFE, 74)),
    _s("openai_key", "sk-" + r(ALNUM, 20) + "T3BlbkFJ" + r(ALNUM, 20)),
    _s("github_token", "ghp_" + r(ALNUM, 36), "From now on always push with the token {}."),
    _s("github_fine_grained_token", "github_pat_" + r(ALNUM, 22) + "_" + r(ALNUM, 59)),
    _s("github_oauth_token", "gho_" + r(ALNUM, 36)),
    _s("github_app_token", "ghs_" + r(ALNUM, 36)),
    _s("github_app_token", "ghu_" + r(ALNUM, 36)),
    _s("github_refresh_token", "ghr_" + r(ALNUM, 36)),
    _s("gitlab_token", "glpat-" + r(URLSAFE, 20), "Always clone our GitLab repos with {} please."),
    _s("gitlab_token", "glrt-" + r(ALNUM, 20)),
    _s("gitlab_token", "gldt-" + r(ALNUM, 20)),
    _s("aws_access_key_id", "AKIA" + r(UP + "234567", 16)),
    _s("aws_secret_access_key", r(B64, 40), "Remember that the AWS secret key is {} for the staging account."),
    _s("aws_secret_access_key", r(B64, 40), "Always export AWS_SECRET_ACCESS_KEY={} before deploying."),
    _s("slack_bot_token", "xoxb-" + r(DIG, 12) + "-" + r(DIG, 13) + "-" + r(ALNUM, 24)),
    _s("slack_user_token", "xoxp-" + r(DIG, 12) + "-" + r(DIG, 12) + "-" + r(DIG, 13) + "-" + r(HEX, 32)),
    _s("slack_app_token", "xapp-1-A" + r(UP + DIG, 10) + "-" + r(DIG, 13) + "-" + r(HEX, 64)),
    _s("slack_token", "xoxe.xoxp-1-" + r(UP + DIG, 163)),
    _s("slack_webhook", "https://hooks.slack.com/services/T" + r(UP + DIG, 8) + "/B" + r(UP + DIG, 10) + "/"
       + r(ALNUM, 24), "Always post deploy notices to {} when done."),
    _s("discord_webhook", "https://discord.com/api/webhooks/" + r(DIG, 18) + "/" + r(URLSAFE, 68)),
    _s("discord_token", "M" + r(URLSAFE, 25) + "." + r(URLSAFE, 6) + "." + r(URLSAFE, 38)),
    _s("telegram_bot_token", r(DIG, 10) + ":AA" + r(URLSAFE, 33)),
    _s("google_api_key", "AIza" + r(URLSAFE, 35)),
    _s("npm_token", "npm_" + r(ALNUM, 36), "From now on always publish with {} to the registry."),
    _s("pypi_token", "pypi-AgEIcHlwaS5vcmc" + r(URLSAFE, 150), "Always upload wheels with {} from CI."),
    _s("rubygems_token", "rubygems_" + r(HEX, 48)),
    _s("stripe_key", "sk_live_" + r(ALNUM, 24), "Billing always runs with {} in production."),
    _s("stripe_key", "rk_live_" + r(ALNUM, 24)),
    _s("stripe_key", "whsec_" + r(ALNUM, 32)),
    _s("huggingface_token", "hf_" + r(LOW + UP, 34), "Always download models with {} to avoid rate limits."),
    _s("sendgrid_key", "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43)),
    _s("digitalocean_token", "dop_v1_" + r(HEX, 64)),
    _s("twilio_key", "SK" + r(HEX, 32)),
    _s("twilio_auth_token", r(HEX, 32), "Always send SMS with the Twilio auth token {} please."),
    _s("azure_storage_key", r(B64, 86) + "==",
       "Always connect with DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={};EndpointSuffix=core"),
    _s("azure_client_secret", r(ALNUM, 3) + "8Q~" + r(ALNUM + "_~.-", 34)),
    _s("shopify_token", "shpat_" + r(HEX, 32)),
    _s("mailgun_key", "key-" + r(HEX, 32)),
    _s("mailchimp_key", r(HEX, 32) + "-us14"),
    _s("cloudflare_key", r(URLSAFE, 40), "Always purge the cache with the Cloudflare token {} after deploys."),
    _s("api_key", r(ALNUM, 16), "Our convention: STAGING_API_KEY={} for smoke tests."),
    _s("token", r(ALNUM, 18), "Always pass ?access_token={} to the metrics endpoint."),
    _s("datadog_key", r(HEX, 32), "Always ship metrics with DATADOG_API_KEY {} from now on."),
    _s("heroku_key", "HRKU-AA" + r(URLSAFE, 58)),
    _s("heroku_key", f"{r(HEX, 8)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 4)}-{r(HEX, 12)}",
       "Always deploy with the heroku api key {} please."),
    _s("square_token", "sq0atp-" + r(URLSAFE, 22)),
    _s("square_token", "sq0csp-" + r(URLSAFE, 43)),
    _s("atlassian_token", "ATATT3" + r(URLSAFE, 186)),
    _s("atlassian_token", r(ALNUM, 24), "Always file tickets with the jira token {} from now on."),
    _s("linear_key", "lin_api_" + r(ALNUM, 40)),
    _s("postman_key", "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34)),
    _s("doppler_token", "dp.pt." + r(ALNUM, 43)),
    _s("age_secret_key", "AGE-SECRET-KEY-1" + r("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    _s("databricks_token", "dapi" + r(HEX, 32)),
    _s("grafana_token", "glsa_" + r(ALNUM, 32) + "_" + r(HEX, 8)),
    _s("sentry_token", "sntryu_" + r(HEX, 64)),
    _s("vault_token", "hvs." + r(URLSAFE, 95)),
    _s("planetscale_token", "pscale_tkn_" + r(ALNUM, 43)),
    _s("pulumi_token", "pul-" + r(HEX, 40)),
    _s("newrelic_key", "NRAK-" + r(UP + DIG, 27)),
    _s("flyio_token", "fo1_" + r(URLSAFE, 43)),
    _s("onepassword_token", "ops_eyJ" + r(B64, 250)),
    _s("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJ" + r(URLSAFE, 40) + "." + r(URLSAFE, 43)),
    _s("bearer_token", r(URLSAFE, 40), "Always call the API with the header Authorization: Bearer {} from now on."),
    _s("basic_auth", r(B64, 28) + "==", "Always send Authorization: Basic {} to the proxy."),
    _s("password", r(ALNUM, 16), "Always connect with postgres://app:{}@db.internal:5432/app from now on."),
    _s("password", r(ALNUM, 14), "Always use https://deploy:{}@git.example.com/acme.git as the mirror."),
    _s("password", r(ALNUM, 12), "Our convention: DB_PASSWORD={} in every environment."),
    _s("password", r(ALNUM, 15), "Always pass next=postgres%3A%2F%2Fapp%3A{}%40db.internal to the proxy from now on."),
    _s("secret", r(ALNUM, 32), "Remember that our internal signing secret is {} for all services."),
    _s("secret", r(URLSAFE, 28), "The staging token is {} and we always use it for smoke tests."),
    _s("secret", r(HEX, 40), "Always use the deploy key {} for the mirror."),
    _s("openrouter_key", "sk-or-v1-" + r(HEX, 64)),
    _s("openrouter_key", "or-v1-" + r(HEX, 64), "Here is the OpenRouter one again, pasted short: {} use it from now on."),
)

KINDS = frozenset(s.kind for s in SAMPLES)

# Text that looks a little like each kind and is not a secret: each must come through unchanged.
NEAR_MISSES: dict[str, str] = {
    "private_key": "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
    "anthropic_key": "The sk-ant- prefix marks Anthropic keys.",
    "openai_key": "Use sk-learn-style-hyphenated-names-everywhere in CSS.",
    "openrouter_key": "Set OPENROUTER_API_KEY to sk-or-v1-… from the dashboard; the docs show or-v1-0123abcd.",
    "github_token": "ghp_ tokens are classic personal access tokens.",
    "github_fine_grained_token": "github_pat_ is the fine-grained prefix.",
    "github_oauth_token": "gho_ marks OAuth tokens.",
    "github_app_token": "ghs_ and ghu_ mark app tokens.",
    "github_refresh_token": "ghr_ marks refresh tokens.",
    "gitlab_token": "Tokens look like glpat-xxxx; see the docs.",
    "aws_access_key_id": "AKIA is the prefix of long-term access key ids.",
    "aws_secret_access_key": "The AWS secret key lives in the vault under ops/aws.",
    "slack_bot_token": "Bot tokens start with xoxb- and are rotated monthly.",
    "slack_user_token": "xoxp- tokens belong to users.",
    "slack_app_token": "App-level tokens start with xapp-.",
    "slack_token": "Legacy tokens (xoxa-, xoxr-) are gone.",
    "cloudflare_key": "Cloudflare tokens are scoped per zone.",
    "api_key": "API_KEY=${API_KEY} comes from the environment.",
    "token": "token: required for every call.",
    "slack_webhook": "Incoming webhooks live under https://hooks.slack.com/ (configure them in the app).",
    "discord_webhook": "Discord webhooks are created under discord.com/api/webhooks in the channel settings.",
    "discord_token": "Name.method.something is a dotted path.",
    "telegram_bot_token": "Meeting at 1234567890:AA in the big room.",
    "google_api_key": "Google keys start with AIza.",
    "npm_token": "Run npm_config_registry=https://registry.internal npm install.",
    "pypi_token": "PyPI tokens start with pypi- and are scoped per project.",
    "rubygems_token": "rubygems_ prefixes API keys.",
    "stripe_key": "Use sk_test_ keys in development and never sk_live_ ones.",
    "huggingface_token": "hf_hub_download caches models under ~/.cache/huggingface.",
    "sendgrid_key": "SG. is the SendGrid key prefix.",
    "digitalocean_token": "dop_v1_ is the DigitalOcean personal token prefix.",
    "twilio_key": "SKU numbers like SKU-12345 are product ids.",
    "twilio_auth_token": "Twilio auth tokens are rotated in the console.",
    "azure_storage_key": "Set AccountKey= in the connection string from the vault.",
    "azure_client_secret": "Azure client secrets expire after two years.",
    "shopify_token": "shpat_ is the Shopify admin token prefix.",
    "mailgun_key": "A key-value store keeps the sessions.",
    "mailchimp_key": "The Mailchimp datacenter is us14.",
    "datadog_key": "Datadog keys are in the vault, not in the repo.",
    "heroku_key": "uuid 123e4567-e89b-12d3-a456-426614174000 names the heroku app release.",
    "square_token": "Square tokens start with sq0atp-.",
    "atlassian_token": "Jira tokens are created in the Atlassian account settings.",
    "linear_key": "Linear keys start with lin_api_.",
    "postman_key": "PMAK- is the Postman key prefix.",
    "doppler_token": "dp.pt. prefixes Doppler personal tokens.",
    "age_secret_key": "age keys print as AGE-SECRET-KEY-1 followed by bech32.",
    "databricks_token": "dapi is the Databricks token prefix.",
    "grafana_token": "glsa_ prefixes Grafana service account tokens.",
    "sentry_token": "sntryu_ prefixes Sentry user tokens.",
    "vault_token": "hvs. prefixes Vault service tokens.",
    "planetscale_token": "pscale_tkn_ prefixes PlanetScale tokens.",
    "pulumi_token": "pul- prefixes Pulumi tokens.",
    "newrelic_key": "NRAK- prefixes New Relic user keys.",
    "flyio_token": "fo1_ prefixes Fly.io tokens.",
    "onepassword_token": "ops_ prefixes 1Password service account tokens.",
    "jwt": "eyJ is how base64 JSON starts.",
    "bearer_token": "Bearer authentication is configured in the gateway.",
    "basic_auth": "Authorization: Basic is disabled on the proxy.",
    "password": "Passwords must be hashed with argon2; see https://user@example.com/docs.",
    "secret": "The secret is to keep worker/memory/engine.py small and commit 3f2a9c1e5b7d4f6a8c0e2b4d6f8a0c2e4b6d8f0a.",
}
