"""Remove secrets from text before it is sent to an LLM provider.

Compiled regexes, one pass each (about 10 MB/s): first, self-identifying tokens (keys
with a vendor prefix, JWTs, private key blocks) anywhere in the text; then contextual secrets,
where only the value is replaced and the context is kept: passwords in URLs,
bearer tokens, `--password=...` flags and assignments to secret-named variables
(`DB_PASSWORD=...`, `"apiKey": "..."`, `password: hunter2`).

Deliberately left alone: git SHAs, UUIDs, hashes and base64 blobs (no vendor prefix),
"sk-" or "password" in prose, counters such as `TOKEN_COUNT=5` or `max_tokens`, type
annotations (`password: str`), placeholders (`${TOKEN}`, `<your-key>`) and text that
is already redacted, so redacting twice changes nothing.
"""

from __future__ import annotations

import functools
import re
from collections import Counter

_KEY_CHAR = "[A-Za-z0-9_-]"
_E = rf"(?!{_KEY_CHAR})"  # end of a token


def _token(prefix: str, rest: str) -> str:
    """A token starting with the fixed-width `prefix`, not preceded by a key character.

    The literal comes first (the boundary check is a look-behind after it) so the
    regex engine can skip quickly to positions where a prefix starts.
    """
    return rf"{prefix}(?<!{_KEY_CHAR}{prefix}){rest}"


_TOKENS: dict[str, str] = {
    "private-key": (
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    ),
    "anthropic-key": _token("sk-ant-", r"[A-Za-z0-9_-]{20,}"),
    # At least one digit: long hyphenated words after "sk-" in prose are not keys.
    "openai-key": _token(
        "sk-", rf"(?:proj-|svcacct-|admin-)?(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{{20,}}{_E}"
    ),
    "aws-access-key": _token("(?:AKIA|ASIA|ABIA|ACCA)", r"[0-9A-Z]{16}\b"),
    "github-token": (
        _token("gh[pousr]_", rf"[A-Za-z0-9]{{36,}}{_E}")
        + "|"
        + _token("github_pat_", rf"[A-Za-z0-9_]{{22,}}{_E}")
    ),
    "gitlab-token": _token("glpat-", rf"[A-Za-z0-9_-]{{20,}}{_E}"),
    "slack-token": _token("xox[abposr]-", rf"[A-Za-z0-9-]{{10,}}{_E}"),
    "slack-webhook": r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
    "google-api-key": _token("AIza", rf"[0-9A-Za-z_-]{{35}}{_E}"),
    "stripe-key": _token("(?:sk|rk)_(?:live|test)_", rf"[0-9A-Za-z]{{16,}}{_E}"),
    "hf-token": _token("hf_", rf"[A-Za-z0-9]{{30,}}{_E}"),
    "jwt": _token("eyJ", rf"[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{8,}}{_E}"),
}
# One pass per pattern: a lone literal-first regex is scanned ~25x faster by `re`
# than one big alternation, which must try every branch at every position.
_TOKEN_RES = [(kind, re.compile(pattern)) for kind, pattern in _TOKENS.items()]

# Words that make a variable name secret when the name ends with them (any case):
# DB_PASSWORD, apiKey, csrf_token; not TOKEN_COUNT, max_tokens or passwordless.
_WORDS = [
    "password", "passwd", "passphrase", "secret", "token", "credential", "credentials",
    *(f"{a}{sep}key" for a in ("api", "access", "private", "secret") for sep in ("", "_", "-")),
]  # fmt: skip
_WORD_AT_END = re.compile(rf"(?i:{'|'.join(_WORDS)})[\"']?[ \t]*\Z")
# A whole name (possessive: no backtracking) whose last word is secret, checked with
# fixed-width look-behinds because `re` has no variable-width ones.
_NAME = r"[A-Za-z0-9_.-]++(?:" + "|".join(f"(?<=(?i:{word}))" for word in _WORDS) + ")"
# Values that name a secret instead of holding one.
_PLACEHOLDER = re.compile(
    r"^(?:\$|<|\{|%|\*{3}|\[REDACTED|x{4,}$|(?:str|int|bytes|bool|float|None|null|true|false"
    r"|Optional|SecretStr|Any|string|~)\b)",
    re.IGNORECASE,
)
# Each pattern is (context kept, value replaced), as groups "keep" and "value".
_CONTEXT: dict[str, str] = {
    # scheme://user:PASSWORD@host (anchored on "://" so the scan can skip ahead)
    "url": r"(?P<keep>://(?<=[A-Za-z0-9]://)[^\s:/@\[\]]*:)(?P<value>[^\s@/]+)(?=@)",
    # Authorization: Bearer TOKEN (a digit keeps "Bearer tokens expire" intact)
    "bearer": (
        r"(?P<keep>earer(?<=[Bb]earer)(?<![A-Za-z0-9_][Bb]earer)\s+)"
        r"(?P<value>(?=[A-Za-z._~+/-]*[0-9])[A-Za-z0-9._~+/-]{16,}=*)"
    ),
    # "name": "value" / name = 'value' (JSON, YAML, code). Anchored on the separator
    # for speed; the name before it is checked in `_replace_value`.
    "quoted": r"(?P<keep>[:=][ \t]*(?P<q>[\"']))(?P<value>[^\"'\n]+)(?P=q)",
    # NAME=value in .env files and shells: upper-case names, unquoted values
    "env": (
        r"(?P<keep>^[ \t]*(?:export[ \t]+)?[A-Z0-9_]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET"
        r"|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SECRET_?KEY|CREDENTIALS?)[ \t]*=[ \t]*)"
        r"(?P<value>[^\s\"'`$(){}<>\[\],;#]+)"
    ),
    # aws_secret_access_key = value (INI, any case): a digit tells a value from a
    # variable name, as in `api_key = api_key`
    "ini": (
        rf"(?P<keep>^[ \t]*{_NAME}[ \t]*=[ \t]*)"
        r"(?P<value>(?=[^\s\"'()\[\]]*[0-9])[^\s\"'()\[\]#]+)(?=[ \t]*$)"
    ),
    # --password=value / --token value
    "flag": (
        r"(?P<keep>--(?:password|passwd|token|api-key|secret|access-token)(?:=|[ \t]+))"
        r"(?P<value>[^\s\"'-][^\s\"']*)"
    ),
    # password: hunter2 alone on a YAML line
    "yaml": rf"(?P<keep>^[ \t]*-?[ \t]*{_NAME}:[ \t]+)(?P<value>[^\s\"'#]\S*)(?=[ \t]*$)",
}
_CONTEXT_RES = [(kind, re.compile(pattern, re.MULTILINE)) for kind, pattern in _CONTEXT.items()]
_LABELS = {"url": "url-password", "bearer": "bearer-token"}


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
        for kind, regex in _TOKEN_RES:
            text = regex.sub(functools.partial(self._replace_token, kind), text)
        for kind, regex in _CONTEXT_RES:
            text = regex.sub(functools.partial(self._replace_value, kind), text)
        return text

    def _replace_token(self, kind: str, match: re.Match[str]) -> str:
        self.by_kind[kind] += 1
        return f"[REDACTED:{kind}]"

    def _replace_value(self, kind: str, match: re.Match[str]) -> str:
        value = match.group("value")
        if _PLACEHOLDER.match(value):
            return match.group(0)
        if kind == "quoted":
            before = match.string[max(0, match.start() - 64) : match.start()]
            if not _WORD_AT_END.search(before):
                return match.group(0)
        label = _LABELS.get(kind, "secret")
        self.by_kind[label] += 1
        closing = match.groupdict().get("q") or ""
        return f"{match.group('keep')}[REDACTED:{label}]{closing}"


def redact(text: str) -> tuple[str, int]:
    """Redact secrets from `text`; returns the new text and how many were replaced."""
    redactor = Redactor()
    return redactor.redact(text), redactor.count
