"""Secret redaction: a corpus of secret shapes that must go, and look-alikes that must stay.

Secrets are assembled at run time so that secret scanners do not flag this file.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import itertools
import json
import re
import uuid
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from opencode_restore import redact as redact_module
from opencode_restore.diagnostics import WarningSink
from opencode_restore.model import Message
from opencode_restore.redact import (
    Redactor,
    gitleaks,
    redact,
    redact_message,
    redact_session,
    redact_value,
)
from opencode_restore.redact.gitleaks import rule_set
from opencode_restore.redact.prefilter import Prefilter, cased_as_ascii
from tests.security.gitleaks_corpus import load_samples, look_alikes

ALNUM = "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY"  # 32 mixed characters


def rep(chunk: str, size: int) -> str:
    return (chunk * (size // len(chunk) + 1))[:size]


OPENAI = "sk-" + rep(ALNUM, 48)
OPENAI_PROJECT = "sk-proj-" + rep(ALNUM + "-_", 120)
ANTHROPIC = "sk-ant-api03-" + rep(ALNUM + "-_", 93) + "AA"
AWS_ACCESS = "AKIA" + rep("Q7R2XZ5V3N8M", 16)
AWS_SECRET = rep("wJalrXUtnFEMI/K7MDENG/bPxRfiCY", 40)
GITHUB_CLASSIC = "ghp_" + rep(ALNUM, 36)
GITHUB_OAUTH = "gho_" + rep(ALNUM, 36)
GITHUB_FINE = "github_pat_11ABCDEFG0" + rep(ALNUM + "_", 70)
GITLAB = "glpat-" + rep(ALNUM, 20)
SLACK = "xoxb-" + "123456789012-1234567890123-" + rep(ALNUM, 24)
SLACK_HOOK = "https://hooks.slack.com/services/T00000000/B00000000/" + rep(ALNUM, 24)
GOOGLE = "AIza" + rep(ALNUM + "-_", 35)
STRIPE_LIVE = "sk_live_" + rep(ALNUM, 24)
STRIPE_RESTRICTED = "rk_live_" + rep(ALNUM, 24)
HUGGINGFACE = "hf_" + rep(ALNUM, 34)
JWT = ".".join(
    base64.urlsafe_b64encode(part.encode()).decode().rstrip("=")
    for part in (
        '{"alg":"HS256","typ":"JWT"}',
        '{"sub":"1234567890","name":"A"}',
        "signature-bytes",
    )
)
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA"
    + rep(ALNUM, 64)
    + "\n"
    + rep(ALNUM, 64)
    + "==\n-----END RSA PRIVATE KEY-----"
)
OPENSSH_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA"
    + rep(ALNUM, 40)
    + "\n-----END OPENSSH PRIVATE KEY-----"
)

# (text, the secret that must disappear, the label that must replace it)
SECRETS = [
    (f"export OPENAI_API_KEY={OPENAI}", OPENAI, "openai-key"),
    (f'client = OpenAI(api_key="{OPENAI_PROJECT}")', OPENAI_PROJECT, "openai-key"),
    (f"key: {ANTHROPIC} (rotated)", ANTHROPIC, "anthropic-key"),
    (f"aws configure set aws_access_key_id {AWS_ACCESS}", AWS_ACCESS, "aws-access-key"),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET, "secret"),
    (f"[default]\naws_secret_access_key = {AWS_SECRET}\n", AWS_SECRET, "secret"),
    (f"git clone https://{GITHUB_CLASSIC}@github.com/o/r.git", GITHUB_CLASSIC, "github-token"),
    (f"token {GITHUB_OAUTH}", GITHUB_OAUTH, "github-token"),
    (f"GH_PAT={GITHUB_FINE}", GITHUB_FINE, "github-token"),
    (f"glab auth login --token {GITLAB}", GITLAB, "gitlab-token"),
    (f"SLACK_BOT={SLACK}", SLACK, "slack-token"),
    (f"curl -X POST {SLACK_HOOK} -d '{{}}'", SLACK_HOOK, "slack-webhook"),
    (f"maps?key={GOOGLE}&q=x", GOOGLE, "google-api-key"),
    (f"stripe.api_key = '{STRIPE_LIVE}'", STRIPE_LIVE, "stripe-key"),
    (f"restricted: {STRIPE_RESTRICTED}", STRIPE_RESTRICTED, "stripe-key"),
    (f"huggingface-cli login --token {HUGGINGFACE}", HUGGINGFACE, "hf-token"),
    (f'{{"id_token": "{JWT}"}}', JWT, "jwt"),
    (f"cookie session={JWT};", JWT, "jwt"),
    (f"key file:\n{PRIVATE_KEY}\ndone", PRIVATE_KEY, "private-key"),
    (OPENSSH_KEY, OPENSSH_KEY, "private-key"),
    (
        "Authorization: Bearer ya29.a0AfH6SMBx3kq9Zr_f8-Lm",
        "ya29.a0AfH6SMBx3kq9Zr_f8-Lm",
        "bearer-token",
    ),
    (
        "DATABASE_URL=postgres://app:s3cr3t-P4ss@db.internal:5432/prod",
        "s3cr3t-P4ss",
        "url-password",
    ),
    ("redis://:hunter2@localhost:6379/0", "hunter2", "url-password"),
    ("DB_PASSWORD=correct-horse-battery", "correct-horse-battery", "secret"),
    ("  export SECRET_KEY=django-insecure-abc", "django-insecure-abc", "secret"),
    ('{"username": "bob", "password": "Tr0ub4dor&3"}', "Tr0ub4dor&3", "secret"),
    ("config = {'apiKey': 'abc123def456'}", "abc123def456", "secret"),
    ('client_secret = "0a1b2c3d4e5f"', "0a1b2c3d4e5f", "secret"),
    ("database:\n  password: hunter2\n  host: db", "hunter2", "secret"),
    ("mysql -u root --password=hunter2 app", "hunter2", "secret"),
    ("login(user, password='pa55word')", "pa55word", "secret"),
]


@pytest.mark.parametrize(("text", "secret", "label"), SECRETS, ids=[s[2] for s in SECRETS])
def test_secret_is_redacted(text: str, secret: str, label: str) -> None:
    redacted, count = redact(text)
    assert secret not in redacted
    assert f"[REDACTED:{label}]" in redacted
    assert count >= 1


def test_context_around_a_secret_is_kept() -> None:
    text = "DATABASE_URL=postgres://app:s3cr3t@db:5432/prod"
    assert redact(text) == ("DATABASE_URL=postgres://app:[REDACTED:url-password]@db:5432/prod", 1)
    assert redact('{"password": "x1"}') == ('{"password": "[REDACTED:secret]"}', 1)
    assert redact("Authorization: Bearer abcdef0123456789xyz") == (
        "Authorization: Bearer [REDACTED:bearer-token]",
        1,
    )


SHA = "3f786850e387550fdab836ed7e6dc881de23001b"
SURVIVORS = [
    f"commit {SHA}",
    f"git checkout {SHA[:7]} && git log {SHA[:12]}",
    f"session id {uuid.UUID(int=0x1234567890ABCDEF1234567890ABCDEF)}",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "We use sk-learn for the classifier and the sk- prefix means secret key.",
    "pip install scikit-learn-intelex-extension-package",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
    "See https://github.com/anthropics/claude-code/issues/123?tab=comments#top",
    "http://localhost:8080/api/v1/sessions?since=2026-01-01T00:00:00Z",
    "git@github.com:owner/repo.git and ssh://git@example.com:22/repo",
    "Reset your password from the settings page; the token expires after an hour.",
    "Password: the user must choose one at first login",
    "TOKEN_COUNT=5\nMAX_TOKENS=4096\nmax_tokens = 4096",
    '{"max_tokens": 4096, "tokens": 1200, "token_type": "bearer", "secret": false}',
    "def login(user: str, password: str) -> Token:\n    password: str\n",
    "api_key = api_key\ntoken = self.token\npassword = getpass()",
    "PASSWORD=\nAPI_KEY=${API_KEY}\nSECRET_KEY=$SECRET\n",
    '{"password": "<your-password>", "apiKey": "${OPENAI_API_KEY}", "token": "****"}',
    "Bearer tokens are sent in the Authorization header.",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "the JWT starts with eyJ and has three parts",
    "monkey: banana\nprimaryKey: id\ntokenizer: o200k",
    "OLDPWD=/home/user/project",
    "--password-file /run/secrets/db",
]


@pytest.mark.parametrize("text", SURVIVORS)
def test_look_alike_survives(text: str) -> None:
    assert redact(text) == (text, 0)


def test_redacting_twice_changes_nothing() -> None:
    corpus = "\n".join(text for text, _, _ in SECRETS)
    once, count = redact(corpus)
    # Counted once per distinct secret: the corpus repeats a few.
    assert count >= len({(label, secret) for _, secret, label in SECRETS})
    assert redact(once) == (once, 0)


def test_redactor_accumulates_counts_of_distinct_secrets_by_kind() -> None:
    redactor = Redactor()
    twice = redactor.redact(f"a {OPENAI} b {OPENAI}")
    assert twice == "a [REDACTED:openai-key] b [REDACTED:openai-key]"
    redactor.redact("DB_PASSWORD=x9 and https://u:p@h")
    assert redactor.count == 3
    assert redactor.by_kind == {"openai-key": 1, "secret": 1, "url-password": 1}
    # The same secrets again (the same text sent in a second request) are not counted again,
    # and neither is text that is already redacted.
    again = redactor.redact(f"DB_PASSWORD=x9 {OPENAI}")
    assert again == "DB_PASSWORD=[REDACTED:secret] [REDACTED:openai-key]"
    assert redactor.redact(again) == again
    assert redactor.count == 3
    redactor.redact(f"{OPENAI_PROJECT}")
    assert redactor.by_kind["openai-key"] == 2


def test_large_text_redacts_every_copy_and_counts_one_secret() -> None:
    # Tool output in agent logs can be megabytes (its speed: bench/redaction.py).
    chunk = "\n".join(SURVIVORS) + f"\nexport OPENAI_API_KEY={OPENAI}\n"
    text = chunk * (2_000_000 // len(chunk))
    redacted, count = redact(text)
    assert text.count(OPENAI) > 1000
    assert count == 1  # one distinct secret, however often it appears
    assert redacted.count("[REDACTED:openai-key]") == text.count(OPENAI)
    assert OPENAI not in redacted


NPM = "npm_" + rep(ALNUM, 36)
BASIC = base64.b64encode(b"deploy:Tr0ub4dor-3").decode()
HEX_KEY = rep("9f86d081884c7d65", 32)

# (text, the secrets that must all disappear, labels that must replace them): QA defect 15.
MID_LINE = [
    (
        f"GITHUB_TOKEN={GITHUB_CLASSIC} password=SuperSecret123!",
        [GITHUB_CLASSIC, "SuperSecret123!"],
        ["github-token", "secret"],
    ),
    (
        "GITHUB_TOKEN=plain-value password=SuperSecret123! api_key=k3y-v4lue",
        ["plain-value", "SuperSecret123!", "k3y-v4lue"],
        ["secret"],
    ),
    (
        f"AWS key AKIA{rep('Q7R2XZ5V3N8M', 16)} secret aws_secret_access_key={AWS_SECRET} and more",
        [AWS_SECRET],
        ["aws-access-key", "secret"],
    ),
    (f'curl -H "X-Api-Key: {HEX_KEY}" https://api.example.com', [HEX_KEY], ["secret"]),
    (f"Api-Key: {HEX_KEY}", [HEX_KEY], ["secret"]),
    (f"Private-Token: {HEX_KEY}\nX-Auth-Token: {HEX_KEY[:20]}", [HEX_KEY[:20]], ["secret"]),
    (f"Authorization: Basic {BASIC}", [BASIC], ["basic-auth"]),
    (f"//registry.npmjs.org/:_authToken={NPM}", [NPM], ["npm-token"]),
    (f"npm config set token {NPM} --global", [NPM], ["npm-token"]),
    (
        "curl 'https://api.example.com/v1?access_token=abc123def456&page=2'",
        ["abc123def456"],
        ["secret"],
    ),
    ("  db_password = hunter22  # and api_key=zq81xk", ["hunter22", "zq81xk"], ["secret"]),
    ('"password"=pa55word "TOKEN"=plain', ["pa55word", "plain"], ["secret"]),
]


@pytest.mark.parametrize(("text", "secrets", "labels"), MID_LINE)
def test_secrets_anywhere_on_a_line_are_redacted(
    text: str, secrets: list[str], labels: list[str]
) -> None:
    redacted, count = redact(text)
    for secret in secrets:
        assert secret not in redacted
    for label in labels:
        assert f"[REDACTED:{label}]" in redacted
    assert count >= len(secrets)
    assert redact(redacted) == (redacted, 0)


def test_assignment_keeps_its_name_and_the_rest_of_the_line() -> None:
    assert redact("GITHUB_TOKEN=abc password=SuperSecret123! done") == (
        "GITHUB_TOKEN=[REDACTED:secret] password=[REDACTED:secret] done",
        2,
    )


PLACEHOLDERS = [
    "export ANTHROPIC_API_KEY=sk-ant-...",
    "export OPENAI_API_KEY=sk-…",
    "OPENAI_API_KEY=<your-key>",
    "API_KEY=your-api-key-here",
    "API_KEY=xxxx",
    "SECRET_KEY=sk-xxxxxxxxxxxxxxxx",
    "TOKEN=${VAR}",
    "TOKEN=$VAR",
    "PASSWORD=changeme",
    "password: change_me",
    "GITHUB_TOKEN=ghp_" + "x" * 36,
    "OPENAI_API_KEY=sk-" + "X" * 48,
    "token=5 max_tokens=4096 api_key=os.environ['K']",
    "const API_KEY = process.env.API_KEY;",
    "if token == 'abc123': pass\nif password != 'abc123': fail()",
    "Basic authentication is the Basic usage; see the Basic docs",
    "hotkey: ctrl+shift+k\nmonkey: bananabananas",
    "Authorization: Basic bm90LWEtcGFpcg==",  # base64 of "not-a-pair": no colon
    "Authorization: Basic abcdefghi",  # not base64 at all
]


@pytest.mark.parametrize("text", PLACEHOLDERS)
def test_placeholders_are_not_secrets(text: str) -> None:
    assert redact(text) == (text, 0)


def test_many_placeholders_count_nothing() -> None:
    # The pi large session has ten of these: none is a secret.
    text = "\n".join(["export ANTHROPIC_API_KEY=sk-ant-..."] * 10)
    assert redact(text) == (text, 0)


def test_a_secret_quoted_in_json_is_the_same_secret() -> None:
    # The facts go into the prompt as JSON, where a key block's line breaks read `\n`.
    redactor = Redactor()
    redactor.redact(f"key file:\n{PRIVATE_KEY}\n")
    redactor.redact(json.dumps({"user_request": PRIVATE_KEY}))
    assert redactor.by_kind == {"private-key": 1}


_WORDS = ["password", "PassWord", "secret", "SECRET_KEY", "api-key", "apiKey", "Tokens",
          "token", "credentials", "passphrase", "access_key", "private-key"]  # fmt: skip
_NOISE = ["my", "_", "-", ".", '"', "'", ":", "=", " ", "\t", "\n", "- ", "{", "}", ","]
_VALUES = ["hunter2", "s3cr3t-value", "x1y2z3w4v5", "", "$VAR", "a b"]
# name, separator, value: the shapes the word-anchored patterns look for, and pieces
# of them out of order.
# Secret words as ``re`` reads them ignoring case (``ſ`` an ``s``, the Kelvin sign a ``k``,
# ``ı`` and ``İ`` an ``i``), and characters outside ASCII that are no letter of theirs.
_FOLDED_WORDS = [
    "pa\u017f\u017fword",
    "API_\u212aEY",
    "\u017fecret",
    "pr\u0131vate_key",
    "cred\u0130ntial",
]
_FOREIGN = ["→", "—", "é", "中", "\u017f", "\u212a", "\u0131", "\u0130", "X-Api-\u212aey: "]
_ASSIGNMENT = st.tuples(
    st.sampled_from(["", "my_", "DB_", "x"]),
    st.sampled_from(_WORDS + _FOLDED_WORDS),
    st.sampled_from(["", '"', "'"]),
    st.sampled_from([":", "=", ": ", " = ", ":\t", " "]),
    st.sampled_from(["", '"', "'"]),
    st.sampled_from(_VALUES),
    st.sampled_from(["", '"', "'", "\n"]),
).map("".join)
_TEXT = st.lists(
    st.one_of(_ASSIGNMENT, st.sampled_from(_WORDS + _NOISE + _VALUES + _FOREIGN + _FOLDED_WORDS)),
    max_size=30,
).map("".join)


def _full_scans(text: str) -> bool:
    """For ``cased_as_ascii``: no text is, so every context pattern scans all of it."""
    return False


@given(_TEXT)
@example("password:\thunter2")
@example('x\n - apiKey: "k3y" api_key = s3cr3t9')
@example("1→password: hunter2\n2→X-Api-Key: s3cr3t-value")
@example('pa\u017f\u017fword: "hunter22" →')
@example("X-Api-\u212aey: s3cr3tvalue99 →")
@example("API_\u212aEY=s3cr3tvalue99 →")
@example("a: 1\npassword: hunter2\n - token: x1y2z3\nsecret: no pass\napi_key:\ts3cr3t-value →")
def test_the_word_gated_patterns_redact_as_the_full_scans_do(text: str) -> None:
    # Text cased as ASCII is (most of a log, the arrows of a Read output too) runs the
    # word-anchored patterns at the secret words only, and the name-checked ones only
    # when a name is there; any other takes the full regex scans. Same text, same counts.
    fast, slow = Redactor(), Redactor()
    with patch("opencode_restore.redact.cased_as_ascii", _full_scans):
        expected = slow.redact(text)
    assert fast.redact(text) == expected
    assert fast.by_kind == slow.by_kind


def test_a_text_with_nothing_to_redact_comes_back_as_the_same_object() -> None:
    # A pattern matched a value it kept (a reference, not a secret): no copy is made, so
    # redacting a session in place does not swap its text for equal copies.
    text = "api_key = settings.API_KEY\n" + "x" * 10_000
    assert Redactor().redact(text) is text
    secret = "password = 'hunter22'"
    assert Redactor().redact(secret) != secret


def test_an_empty_text_runs_no_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    # A hollow session's emptied bodies are redacted with the session: thousands of them.
    redactor = Redactor()
    monkeypatch.setattr(redactor, "_redact_ours", lambda *_: pytest.fail("a rule ran"))
    assert redactor.redact("") == ""


# --- issue 31: every gitleaks rule family, wherever the string sits ---------------------------

HEX = "0123456789abcdef"
LOWER_NUM = "k3m9p2q8r5t7v4w6x1y0zab"  # 23 distinct: [a-z0-9] at high entropy
UPPER_NUM = "Q7R2XZ5V3N8MK4P6BHJ"


def _ops() -> str:
    return "ops_eyJ" + rep(ALNUM, 260)


# (family, line as a log would hold it, the secret, the name a tool field would give it).
# The lines name no secret word (`password`, `token`, `_KEY`...), so only the gitleaks rule
# of the family (its keyword and shape) can find them: each was missed before issue 31.
FAMILIES = [
    (
        "mapbox",
        "mapbox: {s}",
        "pk." + rep(LOWER_NUM, 60) + "." + rep(LOWER_NUM[::-1], 22),
        "MAPBOX",
    ),
    ("discord", "discord: {s}", rep(HEX, 64), "DISCORD"),
    ("facebook", "facebook app {s}", "123456789012345|" + rep(LOWER_NUM, 32), "FACEBOOK"),
    ("1password-token", "op {s}", _ops(), "OP"),
    (
        "1password-secret-key",
        "op {s}",
        "A3-" + "-".join(("Q7R2XZ", "5V3N8MK4P6B", "HJ9TC", "W1DF0", "GLSYE")),
        "OP",
    ),
    ("adobe", "adobe {s}", "p8e-" + rep(LOWER_NUM, 32), "ADOBE"),
    ("algolia", "algolia: {s}", rep(LOWER_NUM, 32), "ALGOLIA"),
    ("artifactory", "jfrog {s}", "AKCp" + rep(ALNUM, 69), "JFROG"),
    ("azure-ad", "client {s}", "aB38Q~" + rep(ALNUM, 34), "AZURE"),
    ("datadog", "datadog: {s}", rep(LOWER_NUM, 40), "DATADOG"),
    (
        "dynatrace",
        "dt {s}",
        "dt0c01." + rep(UPPER_NUM, 24) + "." + rep(ALNUM, 64),
        "DYNATRACE",
    ),
    ("heroku-v2", "heroku {s}", "HRKU-AA" + rep(ALNUM + "_-", 58), "HEROKU"),
    ("mailgun", "mailgun: {s}", "key-" + rep(HEX[::-1], 32), "MAILGUN"),
    ("newrelic", "newrelic: {s}", "NRAK-" + rep(UPPER_NUM, 27), "NEWRELIC"),
    ("octopus", "octopus {s}", "API-" + rep(UPPER_NUM, 26), "OCTOPUS"),
]


def _placements(line: str, secret: str) -> dict[str, str]:
    """Where a secret sits in an agent log: each as the redactor gets the string."""
    return {
        "plain": line,
        "echo": f'echo "{line}" >> notes.txt',
        "export": f'export NOTE="{line}"',
        "heredoc": f"cat > creds.txt <<'EOF'\nA=1\n{line}\nEOF",
        "quoted arg": f"deploy --note '{line}' --dry-run",
        "json in a string": json.dumps({"note": line}),
        "json in json": json.dumps(json.dumps({"note": line})),
        "url password": f"git clone https://deploy:{secret}@example.com/r.git",
        "url query": f"curl 'https://api.example.com/v1?access_token={secret}&page=2'",
    }


def _leaks(out: str, secret: str) -> bool:
    once = json.dumps(secret)[1:-1]
    return secret in out or once in out or json.dumps(once)[1:-1] in out


@pytest.mark.parametrize(
    ("family", "line", "secret", "name"), FAMILIES, ids=[f[0] for f in FAMILIES]
)
def test_a_gitleaks_family_is_redacted_in_every_placement(
    family: str, line: str, secret: str, name: str
) -> None:
    for placement, text in _placements(line.format(s=secret), secret).items():
        redactor = Redactor()
        out = redactor.redact(text)
        assert not _leaks(out, secret), (placement, out)
        assert redactor.count >= 1, placement
        assert redactor.redact(out) == out, placement


@pytest.mark.parametrize(
    ("family", "line", "secret", "name"), FAMILIES, ids=[f[0] for f in FAMILIES]
)
def test_a_named_tool_field_is_redacted_with_its_name_in_view(
    family: str, line: str, secret: str, name: str
) -> None:
    # The API and the pipeline redact a tool input field by field: the name is what
    # flags a value like Datadog's 40 random characters.
    fields = {name: secret, "command": "ls -la", "n": 3}
    message = Message("m", "assistant", "tool_use", "", tool_name="mcp__vault__put")
    message.tool_input = fields
    redact_message(message, Redactor().redact)
    assert message.tool_input is not None
    assert not _leaks(json.dumps(message.tool_input), secret)
    assert message.tool_input["command"] == "ls -la"
    assert message.tool_input["n"] == 3


def test_a_secret_in_a_shell_command_is_redacted_as_in_plain_text() -> None:
    # The example: a `ghp_` token echoed into a file reached the model.
    command = f'echo "{GITHUB_CLASSIC}" >> notes.txt\ncat <<EOF > .env\nX={GITLAB}\nEOF'
    out, count = redact(command)
    assert GITHUB_CLASSIC not in out
    assert GITLAB not in out
    assert count == 2


def test_named_fields_keep_what_no_name_flags() -> None:
    fields = {
        "DATADOG_APP_KEY": rep(LOWER_NUM, 40),
        "password": "Tr0ub4dor&3 $x;y",
        "token": "${TOKEN}",
        "file_path": "/src/key_manager.py",
        "description": "rotate the api key",
        "token_type": "bearer",
    }
    got = redact_value(fields, Redactor().redact)
    assert got["DATADOG_APP_KEY"] == "[REDACTED:secret]"
    assert got["password"] == "[REDACTED:secret]"  # whole, as in its JSON pair
    assert {k: got[k] for k in list(fields)[2:]} == {k: fields[k] for k in list(fields)[2:]}


def test_gitleaks_rules_are_vendored_with_their_licence_and_version() -> None:
    rules = rule_set().rules
    assert len(rules) == 221  # every rule with a regex (pkcs12-file names files only)
    assert {"mapbox-api-token", "generic-api-key", "kubernetes-secret-yaml"} <= {
        r.id for r in rules
    }
    data = gitleaks.CONFIG.parent
    assert "MIT License" in (data / "gitleaks-LICENSE").read_text()
    assert gitleaks.GITLEAKS_COMMIT in (data / "README.md").read_text()
    # Most rules are tried only where their literal start is, never at every character.
    assert sum(r.starts is None for r in rules) <= 10
    # A shorter text is not searched: no rule can match it.
    parser: Any = importlib.import_module("re._parser")
    widths = [parser.parse(r.regex.pattern, re.ASCII).getwidth()[0] for r in rules]
    assert min(widths) == gitleaks.SHORTEST_MATCH


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(p8e-(?i)[a-z0-9]{32})", r"\b(p8e-(?i:[a-z0-9]{32}))"),
        (r"(?i)\b(a|b)(?-i)c", r"(?i:\b(a|b)(?-i:c))"),
        (r"\bpat[[:alnum:]]{14}\b", r"\bpat[0-9A-Za-z]{14}\b"),
        (r"sha256~[\w-]{43}(?:[^\w-]|\z)", r"sha256~[\w-]{43}(?:[^\w-]|\Z)"),
        (r"[a-z[&~|]+", r"[a-z\[\&\~\|]+"),
        (r"[]a]x", r"[]a]x"),
    ],
)
def test_re2_patterns_are_translated_for_re(go: str, python: str) -> None:
    assert gitleaks.to_python(go) == python


def test_a_rule_runs_only_where_its_keyword_is() -> None:
    # The Facebook `id|secret` shape is digits, a bar and random text: without the
    # keyword anywhere in the text it is not a Facebook token (as in gitleaks).
    token = "123456789012345|" + rep(LOWER_NUM, 32)
    assert redact(f"pair {token}")[0] == f"pair {token}"
    assert token not in redact(f"facebook {token}")[0]


def test_the_session_cwd_is_redacted(tmp_path: Path) -> None:
    from opencode_restore.sources import open_session
    from opencode_restore.sources.base import Found

    cwd = f"/home/dev/{GITHUB_CLASSIC}/app"
    log = tmp_path / "s.jsonl"
    line = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "s1",
        "cwd": cwd,
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": "hi"},
    }
    log.write_text(json.dumps(line) + "\n")
    session = open_session([log], WarningSink())
    assert session.cwd == "/home/dev/[REDACTED:github-token]/app"
    assert Found("claude_code", "s1", log, cwd=cwd).cwd == session.cwd
    session.cwd = cwd  # a session built elsewhere: redact_session redacts it too
    assert redact_session(session, Redactor().redact).cwd == "/home/dev/[REDACTED:github-token]/app"


def test_a_secret_found_in_the_decoded_view_goes_wherever_it_sits_encoded() -> None:
    # A tool_use message's text is its input as JSON: the Kubernetes Secret's data value
    # is found in the decoded view, and replaced in the encoded text even where no
    # blank follows it.
    value = rep(ALNUM, 24) + "+"
    manifest = f"kind: Secret\ndata:\n  ca.crt: {value}kind"
    out = Redactor().redact(json.dumps({"file_path": "k8s.yaml", "content": manifest}))
    assert value not in out
    assert "[REDACTED:kubernetes-secret-yaml]" in out


def test_a_quoted_value_in_a_json_pair_is_redacted_with_its_quotes() -> None:
    # `{"HASHICORP_TF_PASSWORD": "\"…\""}`: our quoted rule once took the backslash
    # before the inner quote for the value and left the password.
    password = '"' + rep(LOWER_NUM, 14) + '"'
    out, count = redact(json.dumps({"HASHICORP_TF_PASSWORD": password}))
    assert password.strip('"') not in out
    assert count == 1


# --- issue 28: a rule runs only where the text holds what its matches need ---------------------

_PLAIN_RULES = dataclasses.replace(
    rule_set(), keywords=Prefilter(caseless=rule_set().keywords.caseless, fast=False)
)


class _Everything(Prefilter):
    """A prefilter that finds all our literals (every one of our rules runs on every
    text) and the gitleaks keywords the text holds (their rules run as gitleaks runs them)."""

    def found(self, text: str) -> set[str]:
        keywords = set(_PLAIN_RULES.keywords.caseless)
        present = _PLAIN_RULES.keywords.found(text)
        needles = {needle for needle, _ in redact_module._TOKEN_GROUPS if needle is not None}
        ours = {*self.cased, *(set(self.caseless) - keywords), *self.patterns, *needles}
        return ours | present


_OURS = redact_module._prefilter()
_EVERY_RULE = _Everything(_OURS.cased, _OURS.caseless, _OURS.patterns)
_CORPUS = [
    *(text for text, _, _ in SECRETS),
    *(text for text, _, _ in MID_LINE),
    *SURVIVORS,
    *PLACEHOLDERS,
    *(sample.text for sample in load_samples()),
    *look_alikes(),
]
# What a rule of ours is anchored on (token prefixes, context names), each before a value
# of one of the shapes and lengths keys take: texts where a wrong prefilter answer shows.
_ANCHORS = [
    *(needle for needle, _ in redact_module._TOKEN_GROUPS if needle is not None),
    *["AKIA", "ASIA", "ABIA", "ACCA", "1234567890:AA", ".atlasv1.", "-us1", "-----BEGIN"],
    *["--password=", "--token ", "-u ", "-u u:", "--user=u:", "mysql -p", "sshpass -p "],
    *["Cookie: a=", '"auth": "', "Bearer ", "Basic ", "https://user:", "X-Api-Key: "],
    *["Auth-Token:", "DB_KEY=", "MY-KEY = ", "API_KEY='", "password: ", "\\npassword: "],
    *['"secret: ', "passwd=", "my_token="],
    *["pa\u017f\u017fword: ", "API_\u212aEY=", "X-Api-\u212aey: ", "1→DB_PASSWORD="],
    # Whole prefixes of the kinds gated on more than their first literal.
    *["dop_v1_", "doo_v1_", "dor_v1_", "dp.pt.", "dp.st.", "dp.sa.", "dp.ct.", "dp.scim."],
    *["dp.audit.", "fo1_", "fm1_", "fm2_", "fm1a_", "fm2r_", "https://hooks.slack.com/services/"],
    *["https://discord.com/api/webhooks/1/", "https://ptb.discordapp.com/api/webhooks/12/"],
]
_KEY_VALUES = [
    *(rep(chars, size) for chars in (ALNUM, HEX, UPPER_NUM) for size in (16, 20, 32, 36, 40, 64)),
    *["hunter2", "s3cr3t-value", "dXNlcjpwYXNz", "x1y2z3w4v5", "AgE" + rep(ALNUM, 60)],
    rep(ALNUM, 120),
]
_ANCHORED = st.tuples(
    st.sampled_from(["", " ", "x", '"', "\\n"]),
    st.sampled_from(_ANCHORS),
    st.sampled_from(_KEY_VALUES),
    st.sampled_from(["", " ", "\\n", '"', "@host", "_", "\u212a"]),
).map("".join)
_PROSE = ["Let me read the file.", "The tests pass now", " ", "\n", "é", "\u212a", "token"]
_PROSE += ["     1→", "\n    12→", " — ", "\u017f", "\u0131", "\u0130"]
_CODE = ['{"command": "', '", "x": 1}', "def f(api_key):\n", "  return 1\n", "a = b", "\\n"]
_MIXED = st.lists(
    st.one_of(st.sampled_from(_CORPUS), _ANCHORED, _TEXT, st.sampled_from(_PROSE + _CODE)),
    max_size=6,
).map("".join)
# As logged: decoded, encoded once in a JSON string, or twice (a raw line quoting JSON).
_LOGGED = st.one_of(_MIXED, _MIXED.map(json.dumps), _MIXED.map(json.dumps).map(json.dumps))


def _redacted_with(
    texts: list[str], prefilter: Prefilter, rules: Any, *, full_scans: bool = False
) -> tuple[list[str], Any]:
    redactor = Redactor()
    scans = _full_scans if full_scans else cased_as_ascii
    with (
        patch.object(redact_module, "_prefilter", lambda: prefilter),
        patch.object(redact_module, "rule_set", lambda: rules),
        patch("opencode_restore.redact.cased_as_ascii", scans),
    ):
        return [redactor.redact(text) for text in texts], dict(redactor.by_kind)


@given(st.lists(_LOGGED, min_size=1, max_size=3))
@settings(max_examples=300, deadline=None)
def test_the_prefilter_redacts_as_running_every_rule_does(texts: list[str]) -> None:
    # Hyperscan's one pass, each literal looked for apart, and every one of our rules run
    # on every text, each on all of it (the gitleaks rules gated by their keywords, as
    # gitleaks runs them): the same text out and the same counts.
    fast = _redacted_with(texts, redact_module._prefilter(), rule_set())
    plain = _redacted_with(texts, redact_module._prefilter(fast=False), _PLAIN_RULES)
    every = _redacted_with(texts, _EVERY_RULE, _PLAIN_RULES, full_scans=True)
    assert fast == plain == every


def test_a_token_found_in_a_text_is_redacted_by_the_one_pass() -> None:
    # A gate-only kind (its pattern starts with a class) still runs: the AWS key.
    assert redact(f"id {AWS_ACCESS} ok") == ("id [REDACTED:aws-access-key] ok", 1)


def test_every_anchor_before_every_value_redacts_as_running_every_rule_does() -> None:
    # Each anchor of ours before each value shape, in plain text and in a JSON string:
    # the combinations the random mixes above reach only by chance.
    ends = itertools.cycle(["", " ", "\\n", '"', "@host"])
    texts = [f"x {anchor}{value}{next(ends)}" for anchor in _ANCHORS for value in _KEY_VALUES]
    texts += [json.dumps(text) for text in texts[::7]]
    fast = _redacted_with(texts, redact_module._prefilter(), rule_set())
    plain = _redacted_with(texts, redact_module._prefilter(fast=False), _PLAIN_RULES)
    every = _redacted_with(texts, _EVERY_RULE, _PLAIN_RULES, full_scans=True)
    assert fast == plain == every


_PLAIN_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet="abc xyz:=/", max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("ab_z"), inner),
    max_leaves=20,
)


@given(_PLAIN_JSON)
def test_a_value_redaction_leaves_unchanged_is_returned_as_itself(value: Any) -> None:
    # A copy of every turn's facts was ~20 MB of a 200 MB restore's peak (bench/scale.py).
    got = redact_value(value, Redactor().redact)
    assert got == value
    if isinstance(value, dict | list):
        assert got is value


def test_a_value_with_a_secret_is_copied_where_it_changed_and_left_whole() -> None:
    kept = {"note": "plain"}
    value = {"outer": [{"env": f"OPENAI_API_KEY={OPENAI}"}, kept], "same": kept, "t": ("x",)}
    got = redact_value(value, Redactor().redact)
    assert OPENAI not in json.dumps(got)
    assert OPENAI in json.dumps(value)  # the original is not redacted in place
    assert got is not value
    assert got["outer"] is not value["outer"]
    assert got["same"] is kept
    assert got["outer"][1] is kept
    assert got["t"] == ["x"]  # a tuple still comes back as a list
