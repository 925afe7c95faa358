"""Remove secrets from text before it is sent to an LLM provider.

Two passes of compiled regexes: first, self-identifying tokens (keys with a vendor
prefix, JWTs, private key blocks) anywhere in the text; then contextual secrets,
where only the value is replaced and the context is kept: passwords in URLs,
bearer tokens, `--password=...` flags and assignments to secret-named variables
(`DB_PASSWORD=...`, `"apiKey": "..."`, `password: hunter2`).

Deliberately left alone: git SHAs, UUIDs, hashes and base64 blobs (no vendor prefix),
"sk-" or "password" in prose, counters such as `TOKEN_COUNT=5` or `max_tokens`, type
annotations (`password: str`), placeholders (`${TOKEN}`, `<your-key>`) and text that
is already redacted, so redacting twice changes nothing.
"""

from __future__ import annotations

import re
from collections import Counter

_B = r"(?<![A-Za-z0-9_-])"  # start of a token: no key character right before it
_E = r"(?![A-Za-z0-9_-])"  # end of a token

_TOKENS: dict[str, str] = {
    "private-key": (
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    ),
    "anthropic-key": rf"{_B}sk-ant-[A-Za-z0-9_-]{{20,}}",
    # At least one digit: long hyphenated words after "sk-" in prose are not keys.
    "openai-key": rf"{_B}sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{{20,}}{_E}",
    "aws-access-key": r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    "github-token": rf"{_B}(?:gh[pousr]_[A-Za-z0-9]{{36,}}|github_pat_[A-Za-z0-9_]{{22,}}){_E}",
    "gitlab-token": rf"{_B}glpat-[A-Za-z0-9_-]{{20,}}{_E}",
    "slack-token": rf"{_B}xox[abposr]-[A-Za-z0-9-]{{10,}}{_E}",
    "slack-webhook": r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
    "google-api-key": rf"{_B}AIza[0-9A-Za-z_-]{{35}}{_E}",
    "stripe-key": rf"{_B}(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{{16,}}{_E}",
    "hf-token": rf"{_B}hf_[A-Za-z0-9]{{30,}}{_E}",
    "jwt": rf"{_B}eyJ[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{8,}}{_E}",
}
_TOKEN_RE = re.compile("|".join(f"(?P<{k.replace('-', '_')}>{p})" for k, p in _TOKENS.items()))

# A name that ends in a secret word (case-insensitive): DB_PASSWORD, apiKey, csrf_token.
_NAME = (
    r"(?i:[A-Za-z0-9_.-]*?(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|apikey"
    r"|access[_-]?key|private[_-]?key|secret[_-]?key|credentials?))"
)
# Values that name a secret instead of holding one.
_PLACEHOLDER = re.compile(
    r"^(?:\$|<|\{|%|\*{3}|\[REDACTED|x{4,}$|(?:str|int|bytes|bool|float|None|null|true|false"
    r"|Optional|SecretStr|Any|string|~)\b)",
    re.IGNORECASE,
)
_CONTEXT_RE = re.compile(
    "|".join(
        (
            # scheme://user:PASSWORD@host
            r"(?P<url>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)(?P<url_v>[^\s@/]+)(?=@)",
            # Authorization: Bearer TOKEN (a digit keeps "Bearer tokens expire" intact)
            r"(?P<bearer>\b[Bb]earer\s+)(?P<bearer_v>(?=[A-Za-z._~+/-]*[0-9])[A-Za-z0-9._~+/-]{16,}=*)",
            # "name": "value" / name = 'value' (JSON, YAML, code), any case
            rf"(?P<quoted>(?<![A-Za-z0-9]){_NAME}[\"']?\s*[:=]\s*)(?P<quoted_q>[\"'])"
            r"(?P<quoted_v>[^\"'\n]+)(?P=quoted_q)",
            # NAME=value in .env files and shells: upper-case names, unquoted values
            r"(?P<env>(?m:^)[ \t]*(?:export[ \t]+)?[A-Z0-9_]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET"
            r"|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SECRET_?KEY|CREDENTIALS?)[ \t]*=[ \t]*)"
            r"(?P<env_v>[^\s\"'`$(){}<>\[\],;#]+)",
            # --password=value / --token value
            r"(?P<flag>--(?:password|passwd|token|api-key|secret|access-token)(?:=|[ \t]+))"
            r"(?P<flag_v>[^\s\"'-][^\s\"']*)",
            # password: hunter2 alone on a YAML line
            rf"(?P<yaml>(?m:^)[ \t]*-?[ \t]*{_NAME}:[ \t]+)(?P<yaml_v>[^\s\"'#][^\s]*)(?=[ \t]*$)",
        )
    ),
    re.MULTILINE,
)
_LABELS = {"url": "url-password", "bearer": "bearer-token", "flag": "secret"}


class Redactor:
    """Redacts text and keeps counts per kind of secret across calls."""

    def __init__(self) -> None:
        self.by_kind: Counter[str] = Counter()

    @property
    def count(self) -> int:
        """How many secrets were redacted so far."""
        return sum(self.by_kind.values())

    def redact(self, text: str) -> str:
        """`text` with every recognised secret replaced by `[REDACTED:kind]`."""
        text = _TOKEN_RE.sub(self._token, text)
        return _CONTEXT_RE.sub(self._context, text)

    def _token(self, match: re.Match[str]) -> str:
        kind = (match.lastgroup or "secret").replace("_", "-")
        self.by_kind[kind] += 1
        return f"[REDACTED:{kind}]"

    def _context(self, match: re.Match[str]) -> str:
        # Each alternative ends with its value group, named "<kind>_v".
        kind = (match.lastgroup or "").removesuffix("_v")
        prefix, value = match.group(kind), match.group(f"{kind}_v")
        if _PLACEHOLDER.match(value):
            return match.group(0)
        label = _LABELS.get(kind, "secret")
        self.by_kind[label] += 1
        if kind == "quoted":
            quote = match.group("quoted_q")
            return f"{prefix}{quote}[REDACTED:{label}]{quote}"
        return f"{prefix}[REDACTED:{label}]"


def redact(text: str) -> tuple[str, int]:
    """Redact secrets from `text`; returns the new text and how many were replaced."""
    redactor = Redactor()
    return redactor.redact(text), redactor.count
