"""The table of credential shapes that :mod:`worker.redaction.redact` replaces by ``[REDACTED:<kind>]``.

Each :class:`Rule` has a kind (the label in the marker), one compiled
pattern and, when the text around a secret helps it read (a header name,
``AccountKey=``), a kept group. The shapes follow the public rule sets of
gitleaks (``config/gitleaks.toml``, MIT licence) and detect-secrets
(``detect_secrets/plugins``, Apache-2.0 licence), rewritten for Python's
engine; vendor secrets that are only recognisable next to a vendor's name
(a Datadog key, a Heroku UUID key, a Twilio auth token, an AWS secret key in
prose) are in :mod:`worker.redaction.secret_labels` instead.

Kinds (``[REDACTED:<kind>]``):

=========================== ==============================================
kind                        shape
=========================== ==============================================
private_key                 ``-----BEGIN … PRIVATE KEY-----`` blocks (RSA, EC,
                            DSA, OpenSSH, PKCS#8, encrypted, PGP)
anthropic_key               ``sk-ant-…``
openai_key                  ``sk-…``, ``sk-proj-…``, ``sk-svcacct-…``, ``sk-admin-…``
openrouter_key              ``sk-or-v1-`` and 64 hex digits, also pasted without ``sk-``
github_token                ``ghp_…`` (classic personal access token)
github_fine_grained_token   ``github_pat_…``
github_oauth_token          ``gho_…``
github_app_token            ``ghu_…``, ``ghs_…``
github_refresh_token        ``ghr_…``
gitlab_token                ``glpat-``, ``gldt-``, ``glrt-``, ``glptt-``, ``glft-``,
                            ``glsoat-``, ``glcbt-``, ``gloas-``, ``glagent-``, ``glimt-``,
                            ``glffct-``, ``GR1348941…``
aws_access_key_id           ``AKIA…``, ``ASIA…``, ``ABIA…``, ``ACCA…``
slack_bot_token             ``xoxb-…``
slack_user_token            ``xoxp-…``
slack_app_token             ``xapp-…``
slack_token                 other ``xox?-…`` (legacy, workspace, config tokens)
slack_webhook               ``hooks.slack.com/services|workflows|triggers/…``
discord_webhook             ``discord.com/api/webhooks/<id>/<token>``
discord_token               bot token ``M…/N…/O….xxxxxx.…``
telegram_bot_token          ``<digits>:AA…``
google_api_key              ``AIza…``
npm_token                   ``npm_…``
pypi_token                  ``pypi-AgEIcHlwaS5vcmc…``
rubygems_token              ``rubygems_…``
stripe_key                  ``sk_live_``, ``rk_live_``, ``sk_test_`` … , ``whsec_…``
huggingface_token           ``hf_…``, ``api_org_…``
sendgrid_key                ``SG.<22>.<43>``
digitalocean_token          ``dop_v1_``, ``doo_v1_``, ``dor_v1_``
twilio_key                  ``SK`` + 32 hex
azure_storage_key           ``AccountKey=<88 base64>`` (the name is kept)
azure_client_secret         ``xxx8Q~…``
shopify_token               ``shpat_``, ``shpca_``, ``shppa_``, ``shpss_``
mailgun_key                 ``key-`` / ``pubkey-`` + 32 hex
mailchimp_key               32 hex + ``-us<dc>``
square_token                ``sq0atp-``, ``sq0csp-``, ``EAAA…``
atlassian_token             ``ATATT3…``
linear_key                  ``lin_api_…``
postman_key                 ``PMAK-…``
doppler_token               ``dp.pt.``, ``dp.st.``, ``dp.sa.``, ``dp.ct.``, ``dp.scim.``, ``dp.audit.``
heroku_key                  ``HRKU-AA…``
age_secret_key              ``AGE-SECRET-KEY-1…``
databricks_token            ``dapi…``
grafana_token               ``glc_…``, ``glsa_…``
sentry_token                ``sntrys_…``, ``sntryu_…``
vault_token                 ``hvs.…``, ``hvb.…``
planetscale_token           ``pscale_tkn_``, ``pscale_pw_``, ``pscale_oauth_``
pulumi_token                ``pul-`` + 40 hex
newrelic_key                ``NRAK-…``
flyio_token                 ``fo1_…``, ``fm1a_…``, ``fm2_…``
onepassword_token           ``ops_eyJ…``
jwt                         ``eyJ….eyJ….…``
=========================== ==============================================

Plus, in :mod:`worker.redaction.redact`: ``bearer_token`` (``Authorization: Bearer``),
``basic_auth`` (``Authorization: Basic|token``), ``password`` (the password
of ``scheme://user:password@host`` connection strings and URLs, and
``password=…``), ``api_key`` / ``secret`` / ``token`` assignments,
``aws_secret_access_key`` (``aws_secret_access_key = …``); and in
:mod:`worker.redaction.secret_labels` the vendor-labelled kinds and the high-entropy
fallback (``secret``).

Why every pattern stays linear on any input: see :mod:`worker.redaction.redact`. In
short, a pattern starts with a literal, a fixed-width look-behind checks
that the literal starts a run, unbounded runs are possessive and every
other repetition is bounded.
"""

from __future__ import annotations

import re

import attrs

__all__ = ["RULES", "Rule", "literal_first"]

T = r"A-Za-z0-9_\-"  # character class of API-key style tokens
_END = r"(?![A-Za-z0-9_\-])"  # a fixed-length token must end here


@attrs.frozen
class Rule:
    """One credential shape: the matched text becomes ``[REDACTED:<kind>]``.

    ``keep`` names a group kept in front of the marker (``AccountKey=``).
    ``mixed``: the match must mix letters and digits (keeps hyphenated
    words such as ``sk-learn-…`` out).
    """

    kind: str
    pattern: re.Pattern[str]
    keep: str | None = None
    mixed: bool = False


def literal_first(lit: str, body: str, before: str = T, flags: int = 0) -> re.Pattern[str]:
    """``lit`` not preceded by a ``before`` character, then ``body``.

    The literal comes first so the regex engine can skip ahead to it; the
    look-behind placed after it (fixed width) checks the character before.
    """
    return re.compile(f"{re.escape(lit)}(?<![{before}]{re.escape(lit)}){body}", flags)


def _r(kind: str, lit: str, body: str, *, before: str = T, flags: int = 0, mixed: bool = False) -> Rule:
    return Rule(kind, literal_first(lit, body, before, flags), mixed=mixed)


_HEX = "0-9a-fA-F"

RULES: tuple[Rule, ...] = (
    # -- AI providers ---------------------------------------------------------------
    _r("anthropic_key", "sk-ant-", rf"[{T}]{{20,}}+", mixed=True),
    _r("openrouter_key", "sk-or-v1-", rf"[{_HEX}]{{64}}" + _END),
    _r("openrouter_key", "or-v1-", rf"[{_HEX}]{{64}}" + _END),
    _r("openai_key", "sk-", rf"(?:proj-|svcacct-|admin-)?[{T}]{{20,}}+", mixed=True),
    _r("huggingface_token", "hf_", r"[A-Za-z0-9]{34}" + _END),
    _r("huggingface_token", "api_org_", r"[A-Za-z0-9]{34}" + _END),
    # -- source forges and package registries ---------------------------------------
    _r("github_token", "ghp_", r"[A-Za-z0-9]{30,}+"),
    _r("github_oauth_token", "gho_", r"[A-Za-z0-9]{30,}+"),
    _r("github_app_token", "ghu_", r"[A-Za-z0-9]{30,}+"),
    _r("github_app_token", "ghs_", r"[A-Za-z0-9]{30,}+"),
    _r("github_refresh_token", "ghr_", r"[A-Za-z0-9]{30,}+"),
    _r("github_fine_grained_token", "github_pat_", r"[A-Za-z0-9_]{22,}+"),
    _r("gitlab_token", "gl", r"(?:pat|dt|rt|ptt|ft|soat|oas|agent|imt|ffct)-[0-9a-zA-Z_\-]{20,}+(?:\.[0-9a-z]{9})?"),
    _r("gitlab_token", "glcbt-", r"[0-9a-zA-Z]{1,5}_[0-9a-zA-Z_\-]{20,}+"),
    _r("gitlab_token", "GR1348941", rf"[{T}]{{20,}}+"),
    _r("npm_token", "npm_", r"[A-Za-z0-9]{36}" + _END),
    _r("pypi_token", "pypi-AgEIcHlwaS5vcmc", rf"[{T}]{{30,}}+"),
    _r("pypi_token", "pypi-AgENdGVzdC5weXBpLm9yZw", rf"[{T}]{{30,}}+"),  # test.pypi.org
    _r("rubygems_token", "rubygems_", rf"[{_HEX}]{{48}}" + _END),
    # -- chat and messaging ---------------------------------------------------------
    _r("slack_token", "xox", r"[aerso](?:\.xox[bp])?-[0-9A-Za-z\-]{10,}+"),  # first: xoxe.xoxp-… is one token
    _r("slack_bot_token", "xoxb-", r"[0-9A-Za-z\-]{10,}+"),
    _r("slack_user_token", "xoxp-", r"[0-9A-Za-z\-]{10,}+"),
    _r("slack_app_token", "xapp-", r"\d-[A-Z0-9]{6,}+-\d{5,}+-[a-zA-Z0-9]{10,}+"),
    Rule(
        "slack_webhook",
        re.compile(r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}+"),
    ),
    Rule(
        "discord_webhook",
        re.compile(r"(?:https?://)?(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/[A-Za-z0-9_\-]{20,}+"),
    ),
    Rule(
        "discord_token",
        re.compile(r"(?<![A-Za-z0-9_\-])[MNO][A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}" + _END),
        mixed=True,
    ),
    Rule("telegram_bot_token", re.compile(r"(?<![0-9A-Za-z])\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _END)),
    _r("sendgrid_key", "SG.", r"[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _END),
    _r("twilio_key", "SK", rf"[{_HEX}]{{32}}" + _END, before="A-Za-z0-9", mixed=True),
    _r("mailgun_key", "key-", r"[0-9a-f]{32}" + _END, before="A-Za-z0-9", mixed=True),
    _r("mailgun_key", "pubkey-", r"[0-9a-f]{32}" + _END, before="A-Za-z0-9", mixed=True),
    Rule("mailchimp_key", re.compile(r"(?<![0-9a-zA-Z])[0-9a-f]{32}-us\d{1,2}" + _END)),
    _r("postman_key", "PMAK-", r"[0-9a-fA-F]{24}-[0-9a-fA-F]{34}" + _END),
    # -- clouds and platforms -------------------------------------------------------
    Rule(
        "aws_access_key_id",
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    ),
    _r("google_api_key", "AIza", rf"[{T}]{{30,}}+", mixed=True),
    Rule(
        "azure_storage_key",
        re.compile(r"(?P<keep>AccountKey=)[A-Za-z0-9+/]{86}==", re.I),
        keep="keep",
    ),
    Rule(
        "azure_client_secret",
        re.compile(r"(?<![A-Za-z0-9_~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![A-Za-z0-9_~.\-])"),
    ),
    _r("digitalocean_token", "dop_v1_", r"[0-9a-f]{64}" + _END),
    _r("digitalocean_token", "doo_v1_", r"[0-9a-f]{64}" + _END),
    _r("digitalocean_token", "dor_v1_", r"[0-9a-f]{64}" + _END),
    _r("heroku_key", "HRKU-AA", rf"[{T}]{{58}}" + _END),
    _r("databricks_token", "dapi", rf"[{_HEX}]{{32}}(?:-\d)?" + _END, before="A-Za-z0-9"),
    _r("grafana_token", "glc_", r"[A-Za-z0-9+/]{32,}+={0,3}"),
    _r("grafana_token", "glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + _END),
    _r("sentry_token", "sntrys_", r"eyJ[A-Za-z0-9+/=_]{40,}+"),
    _r("sentry_token", "sntryu_", r"[0-9a-f]{64}" + _END),
    _r("vault_token", "hvs.", rf"[{T}]{{90,}}+", before="A-Za-z0-9_\\-."),
    _r("vault_token", "hvb.", rf"[{T}]{{130,}}+", before="A-Za-z0-9_\\-."),
    _r("planetscale_token", "pscale_", r"(?:tkn|pw|oauth)_[A-Za-z0-9_=.\-]{32,64}" + _END),
    _r("pulumi_token", "pul-", r"[0-9a-f]{40}" + _END),
    _r("newrelic_key", "NRAK-", r"[A-Z0-9]{27}" + _END),
    _r("flyio_token", "fo1_", rf"[{T}]{{43}}" + _END),
    _r("flyio_token", "fm1", r"[ar]_[A-Za-z0-9+/]{100,}+={0,3}"),
    _r("flyio_token", "fm2_", r"[A-Za-z0-9+/]{100,}+={0,3}"),
    _r("doppler_token", "dp.", r"(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + _END, before="A-Za-z0-9_\\-."),
    _r("onepassword_token", "ops_eyJ", r"[A-Za-z0-9+/]{100,}+={0,3}"),
    _r("atlassian_token", "ATATT3", r"[A-Za-z0-9_\-=]{150,}+"),
    _r("linear_key", "lin_api_", r"[A-Za-z0-9]{40}" + _END),
    # -- payments and commerce ------------------------------------------------------
    Rule(
        "stripe_key",
        re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,99}" + _END),
    ),
    _r("stripe_key", "whsec_", r"[A-Za-z0-9]{24,}+"),
    _r("shopify_token", "shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _END),
    _r("square_token", "sq0", r"(?:atp|csp)-[A-Za-z0-9_\-]{22,60}" + _END),
    _r("square_token", "EAAA", r"[A-Za-z0-9_\-]{60}" + _END, before="A-Za-z0-9", mixed=True),
    # -- keys and generic token formats ---------------------------------------------
    _r("age_secret_key", "AGE-SECRET-KEY-1", r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", flags=0),
    _r("jwt", "eyJ", rf"[{T}]{{8,}}+\.eyJ[{T}]{{8,}}+\.[{T}]*+", before=T + "."),
)
