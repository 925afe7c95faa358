"""Secret kinds and look-alikes for the redaction tests and the per-sink benchmark.

The secrets are synthetic values in the real shapes of the gitleaks rule families
(prefix, alphabet, length), generated from a fixed seed at run time so that no
scanner flags this file and no real key is ever in it. Each case is a line as it
appears in an agent log: a command, a file written, a header, a config line.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

_rng = random.Random(14)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
UPPER_NUM = string.ascii_uppercase + string.digits
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def r(alphabet: str, n: int) -> str:
    """``n`` random characters of ``alphabet`` (with a digit, as real keys have)."""
    body = "".join(_rng.choice(alphabet) for _ in range(n - 1))
    digit = next((c for c in alphabet if c.isdigit()), alphabet[0])
    return body[: n // 2] + digit + body[n // 2 :]


@dataclass(frozen=True, slots=True)
class Case:
    kind: str
    text: str  # the line as a log holds it
    secret: str  # what must not survive


def _key_block(kind: str, cut: bool = False) -> str:
    body = "\n".join(r(B64, 64) for _ in range(6))
    end = "" if cut else f"\n-----END {kind}-----"
    return f"-----BEGIN {kind}-----\n{body}{end}"


def _jwt() -> str:
    parts = ('{"alg":"HS256","typ":"JWT"}', '{"sub":"' + r(HEX, 12) + '","iat":1716000000}')
    enc = [base64.urlsafe_b64encode(p.encode()).decode().rstrip("=") for p in parts]
    return ".".join([*enc, r(URLSAFE, 43)])


def secret_cases() -> list[Case]:
    """One case per secret kind (more than 100)."""
    _rng.seed(14)
    t: list[tuple[str, str, str]] = []  # kind, template with {s}, secret

    def tok(kind: str, secret: str, template: str = "export TOKEN_VALUE_X={s}") -> None:
        t.append((kind, template, secret))

    tok("openai-project", "sk-proj-" + r(URLSAFE, 120), 'client = OpenAI(api_key="{s}")')
    tok("openai-legacy", "sk-" + r(ALNUM, 48), "echo {s} | pbcopy")
    tok("openai-service", "sk-svcacct-" + r(URLSAFE, 100), "key: {s}")
    tok("anthropic-api", "sk-ant-api03-" + r(URLSAFE, 93) + "AA", "curl -H 'x-api-key: {s}'")
    tok("anthropic-admin", "sk-ant-admin01-" + r(URLSAFE, 93) + "AA", "admin {s}")
    tok("aws-akia", "AKIA" + r(UPPER_NUM, 16), "aws configure set aws_access_key_id {s}")
    tok("aws-asia", "ASIA" + r(UPPER_NUM, 16), "key id {s} (session)")
    tok("aws-secret", r(B64, 40), "AWS_SECRET_ACCESS_KEY={s}")
    for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"):
        tok(f"github-{p[:3]}", p + r(ALNUM, 36), "git clone https://{s}@github.com/o/r.git")
    tok("github-fine", "github_pat_11" + r(ALNUM, 20) + "_" + r(ALNUM, 59), "gh auth login {s}")
    for p in ("glpat-", "glrt-", "gldt-", "glptt-", "glft-", "glsoat-", "glcbt-", "glimt-"):
        tok(f"gitlab-{p[:-1]}", p + r(URLSAFE, 20), "gitlab-runner register --token {s}")
    tok("gitlab-agent", "glagent-" + r(URLSAFE, 50), "agent token {s}")
    tok("gitlab-oauth", "gloas-" + r(HEX, 64), "oauth {s}")
    tok("gitlab-runner-reg", "GR1348941" + r(URLSAFE, 20), "--registration-token {s}")
    tok("slack-bot", "xoxb-" + r("0123456789", 12) + "-" + r(ALNUM, 24), "SLACK={s}")
    tok("slack-user", "xoxp-" + r("0123456789", 12) + "-" + r(ALNUM, 32), "user {s}")
    tok("slack-app", "xapp-1-A" + r(UPPER_NUM, 10) + "-" + r(HEX, 64), "app {s}")
    tok("slack-config", "xoxe.xoxp-1-" + r(ALNUM, 140), "config {s}")
    tok("slack-refresh", "xoxe-1-" + r(ALNUM, 140), "refresh {s}")
    tok(
        "slack-webhook",
        "https://hooks.slack.com/services/T" + r(UPPER_NUM, 8) + "/B" + r(UPPER_NUM, 8) + "/"
        + r(ALNUM, 24),
        "curl -X POST {s} -d '{{}}'",
    )  # fmt: skip
    tok(
        "discord-webhook",
        "https://discord.com/api/webhooks/" + r("0123456789", 18) + "/" + r(URLSAFE, 68),
        "post to {s}",
    )
    tok("google-api", "AIza" + r(URLSAFE, 35), "maps?key={s}&q=x")
    tok("google-oauth-secret", "GOCSPX-" + r(URLSAFE, 28), "secret {s}")
    tok("stripe-live", "sk_live_" + r(ALNUM, 24), "stripe.api_key = '{s}'")
    tok("stripe-test", "sk_test_" + r(ALNUM, 24), "use {s}")
    tok("stripe-restricted", "rk_live_" + r(ALNUM, 24), "restricted: {s}")
    tok("stripe-webhook", "whsec_" + r(ALNUM, 32), "endpoint secret {s}")
    tok("huggingface", "hf_" + r(ALNUM, 34), "huggingface-cli login --token {s}")
    tok("huggingface-org", "api_org_" + r(ALNUM, 34), "org {s}")
    tok("npm", "npm_" + r(ALNUM, 36), "//registry.npmjs.org/:_authToken={s}")
    tok("pypi", "pypi-AgEIcHlwaS5vcmc" + r(URLSAFE, 60), "twine upload -p {s}")
    tok("rubygems", "rubygems_" + r(HEX, 48), "gem push --key {s}")
    tok("digitalocean", "dop_v1_" + r(HEX, 64), "doctl auth init -t {s}")
    tok("docker-pat", "dckr_pat_" + r(URLSAFE, 27), "docker login -p {s}")
    tok("sendgrid", "SG." + r(URLSAFE, 22) + "." + r(URLSAFE, 43), "mail {s}")
    tok("mailgun", "key-" + r(HEX, 32), "mailgun {s}")
    tok("mailchimp", r(HEX, 32) + "-us14", "chimp {s}")
    tok("shopify-access", "shpat_" + r(HEX, 32), "shop {s}")
    tok("shopify-secret", "shpss_" + r(HEX, 32), "shop {s}")
    tok("vault-service", "hvs." + r(URLSAFE, 91), "export VAULT_TOKEN_VALUE {s}")
    tok("vault-batch", "hvb." + r(URLSAFE, 140), "vault batch {s}")
    tok("databricks", "dapi" + r(HEX, 32), "databricks configure {s}")
    tok("grafana-sa", "glsa_" + r(ALNUM, 32) + "_" + r(HEX, 8), "grafana {s}")
    tok("grafana-cloud", "glc_" + r(ALNUM, 60) + "==", "cloud {s}")
    tok("grafana-api", "eyJrIjoi" + r(ALNUM, 60) + "=", "grafana key {s}")
    tok("twilio", "SK" + r(HEX, 32), "twilio api {s}")
    tok("telegram", r("0123456789", 10) + ":AA" + r(URLSAFE, 33), "bot {s}")
    tok("notion", "ntn_" + r("0123456789", 11) + r(ALNUM, 35), "notion {s}")
    tok("notion-legacy", "secret_" + r(ALNUM, 43), "notion {s}")
    tok("atlassian", "ATATT3" + r(URLSAFE + "=", 186), "jira {s}")
    tok("age", "AGE-SECRET-KEY-1" + r(BECH32, 58), "# {s}")
    tok("linear", "lin_api_" + r(ALNUM, 40), "linear {s}")
    tok("postman", "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34), "postman {s}")
    tok("pulumi", "pul-" + r(HEX, 40), "pulumi login {s}")
    tok("terraform", r(ALNUM, 14) + ".atlasv1." + r(URLSAFE, 67), "tfc {s}")
    tok("doppler", "dp.pt." + r(ALNUM, 43), "doppler {s}")
    tok("newrelic-user", "NRAK-" + r(UPPER_NUM, 27), "newrelic {s}")
    tok("newrelic-browser", "NRJS-" + r(HEX, 19), "newrelic {s}")
    tok("sentry-org", "sntrys_eyJpYXQiOjE2ODc" + r(URLSAFE, 60), "sentry {s}")
    tok("sentry-user", "sntryu_" + r(HEX, 64), "sentry {s}")
    tok("planetscale", "pscale_tkn_" + r(URLSAFE, 43), "pscale {s}")
    tok("planetscale-pw", "pscale_pw_" + r(URLSAFE, 43), "pscale {s}")
    tok("flyio", "fo1_" + r(URLSAFE, 43), "fly {s}")
    tok("shippo", "shippo_live_" + r(HEX, 40), "shippo {s}")
    tok("square-access", "sq0atp-" + r(URLSAFE, 22), "square {s}")
    tok("square-secret", "sq0csp-" + r(URLSAFE, 43), "square {s}")
    tok("square-eaaa", "EAAA" + r(URLSAFE, 60), "square {s}")
    tok("alibaba", "LTAI" + r(ALNUM, 20), "aliyun {s}")
    tok("jwt", _jwt(), '{{"id_token": "{s}"}}')
    for kind in ("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY"):
        tok(kind.lower().replace(" ", "-"), _key_block(kind), "key file:\n{s}\ndone")
    tok("pgp-private", _key_block("PGP PRIVATE KEY BLOCK"), "{s}")
    tok("private-key-cut", _key_block("RSA PRIVATE KEY", cut=True), "$ head -c 300 id_rsa\n{s}")
    # Contextual secrets: the name or the syntax makes the value secret.
    pw = r(ALNUM, 14)
    tok("url-postgres", pw, "DATABASE_URL=postgres://app:{s}@db.internal:5432/prod")
    tok("url-redis", r(ALNUM, 12), "redis://:{s}@localhost:6379/0")
    tok("bearer", r(URLSAFE, 40), "Authorization: Bearer {s}")
    basic = base64.b64encode(f"deploy:{r(ALNUM, 12)}".encode()).decode()
    tok("basic", basic, "Authorization: Basic {s}")
    tok("x-api-key", r(HEX, 32), 'curl -H "X-Api-Key: {s}" https://api.example.com')
    tok("curl-u", r(ALNUM, 12), "curl -u admin:{s} https://ci.example.com/api")
    tok("curl-user", r(ALNUM, 12), "curl --user=admin:{s} https://ci.example.com")
    tok("mysql-p", r(ALNUM, 12), "mysql -u root -p{s} app < dump.sql")
    tok("sshpass", r(ALNUM, 12), "sshpass -p {s} ssh deploy@host")
    tok("cookie", r(URLSAFE, 32), "Cookie: session={s}; theme=dark")
    tok("set-cookie", r(URLSAFE, 32), "Set-Cookie: sid={s}; HttpOnly")
    auth = base64.b64encode(f"bob:{r(ALNUM, 14)}".encode()).decode()
    tok("docker-auth", auth, '{{"auths": {{"ghcr.io": {{"auth": "{s}"}}}}}}')
    tok("env-password", r(ALNUM, 16), "DB_PASSWORD={s}")
    tok("env-star-key", r(ALNUM, 24), "STRIPE_KEY={s}")
    tok("env-service-key", r(ALNUM, 20), "MY_SERVICE_KEY={s}")
    tok("env-token", r(ALNUM, 20), "export TOKEN={s}")
    tok("env-secret", r(ALNUM, 20), "  export SECRET_KEY=django-insecure-{s}")
    tok("yaml-password", r(ALNUM, 12), "database:\n  password: {s}\n  host: db")
    tok("json-apikey", r(ALNUM, 20), '{{"apiKey": "{s}"}}')
    tok("flag-password", r(ALNUM, 12), "psql --password={s} app")
    tok("flag-token", r(ALNUM, 30), "vercel deploy --token {s}")
    tok("azure-account-key", r(B64, 86) + "==", "DefaultEndpointsProtocol=https;AccountKey={s};")
    tok("client-secret", r(HEX, 24), 'client_secret = "{s}"')
    tok("pgpassword", r(ALNUM, 14), "PGPASSWORD={s} psql -h db")
    tok("passphrase", r(ALNUM, 14), "passphrase: {s}")
    tok("docker-env", "ghp_" + r(ALNUM, 36), "docker run -e GITHUB_TOKEN={s} img")
    tok("query-token", r(HEX, 20), "curl 'https://api.example.com/v1?access_token={s}&page=2'")
    return [Case(kind, tmpl.format(s=secret), secret) for kind, tmpl, secret in t]


#: Text that must come out unchanged: code, hashes, ids, prose about secrets.
LOOK_ALIKES = [
    "api_key: anthropic_api_key()",
    "api_key = get_api_key()\ntoken = self.token\npassword = getpass()",
    "def login(user: str, password: str) -> Token:\n    password: str\n",
    'sort_key = "name"',
    "password_hash = hash_password(raw)",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Dev <dev@example.com>",
    "3f78685 fix: token refresh (#123)\na1b2c3d feat: secret rotation",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  empty.txt",
    "docker pull python@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "session id 12345678-90ab-cdef-1234-567890abcdef",
    "We use sk-learn for the classifier and the sk- prefix means secret key.",
    "Reset your password from the settings page; the token expires after an hour.",
    "TOKEN_COUNT=5\nMAX_TOKENS=4096\nmax_tokens = 4096",
    '{"max_tokens": 4096, "tokens": 1200, "token_type": "bearer", "secret": false}',
    "PASSWORD=\nAPI_KEY=${API_KEY}\nSECRET_KEY=$SECRET\n",
    '{"password": "<your-password>", "apiKey": "${OPENAI_API_KEY}", "token": "****"}',
    "export ANTHROPIC_API_KEY=sk-ant-...",
    "const API_KEY = process.env.API_KEY;",
    "git push -u origin main",
    "docker run -u 1000:1000 img",
    "mysql -u root -p app",
    "Cookie: see the docs",
    '{"author": "Jane", "auth": "oauth"}',
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "monkey: banana\nprimaryKey: id\ntokenizer: o200k",
    "Bearer tokens are sent in the Authorization header.",
    "See https://github.com/anthropics/claude-code/issues/123?tab=comments#top",
    "git@github.com:owner/repo.git and ssh://git@example.com:22/repo",
]
