"""Remove secrets from text before it is sent to an LLM provider.

Compiled regexes, each run only on a text that holds what its matches need (a token's
prefix, a context's anchor, a gitleaks keyword: all found in one pass, see ``prefilter``):
first, self-identifying tokens (keys with a vendor prefix, JWTs, private key blocks)
anywhere in the text; then contextual secrets, where only the value is replaced and the
context is kept: passwords in URLs,
bearer and basic credentials, API-key headers, `--password=...` flags and assignments to
secret-named variables anywhere on a line (`DB_PASSWORD=...`, `"apiKey": "..."`,
`password: hunter2`, `curl ...?token=abc123&...`).

Then every rule of the public gitleaks config (``gitleaks.py``; vendored with its licence
in ``data/``), keyword-gated as gitleaks runs them, finds the ~220 vendor kinds ours do not
name (Mapbox, Discord, Datadog, ...). A text holding JSON string escapes (a JSON document
in a tool input, a raw log line) is searched by them decoded, and a named field of a tool
input is redacted with its name in view (``redact_field``).

Deliberately left alone: git SHAs, UUIDs, hashes and base64 blobs (no vendor prefix),
"sk-" or "password" in prose, counters such as `TOKEN_COUNT=5` or `max_tokens`, type
annotations (`password: str`), placeholders (`${TOKEN}`, `$TOKEN`, `<your-key>`,
`sk-ant-...`, `xxxx`, `changeme`) and text that is already redacted, so redacting twice
changes nothing.

Counts are of distinct secrets: the same key found again (in another message, or in
the same text redacted for a second request) is replaced but not counted twice.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from ..model import Message, Session
from .gitleaks import GITLEAKS_COMMIT, rule_set, trailing_name
from .prefilter import Prefilter, cased_as_ascii

#: The edition of what redaction removes: part of a saved journal's fingerprint
#: (``pipeline.resume``), so that a journal redacted by an earlier edition, which may
#: hold a secret this one finds, is not served again. Raise it with every rule change.
REDACTION_EDITION = f"2 gitleaks {GITLEAKS_COMMIT[:12]}"

_KEY_CHAR = "[A-Za-z0-9_-]"
_E = rf"(?!{_KEY_CHAR})"  # end of a token


def _token(prefix: str, rest: str) -> str:
    """A token starting with the fixed-width `prefix`, not preceded by a key character.

    The literal comes first (the boundary check is a look-behind after it) so the
    regex engine can skip quickly to positions where a prefix starts.
    """
    return rf"{prefix}(?<!{_KEY_CHAR}{prefix}){rest}"


def _tokens(prefixes: str, rest: str) -> tuple[str, ...]:
    """``_token`` for each of the space-separated ``prefixes`` (look-behinds need one width)."""
    return tuple(_token(prefix, rest) for prefix in prefixes.split())


# A kind with several shapes lists them apart: a pattern starting with an alternation
# has no literal prefix, so `re` tries it at every position (about 10x slower).
_TOKENS: dict[str, str | tuple[str, ...]] = {
    "private-key": (
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
        # A block cut before its END line (a truncated paste or tool output): the
        # base64 body and its headers, as written or escaped in a JSON string.
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[A-Za-z0-9+/=:,. -]|\s|\\[nrt])*",
    ),
    "age-secret-key": _token("AGE-SECRET-KEY-1", r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    "anthropic-key": _token("sk-ant-", r"[A-Za-z0-9_-]{20,}"),
    # At least one digit: long hyphenated words after "sk-" in prose are not keys.
    "openai-key": _token(
        "sk-", rf"(?:proj-|svcacct-|admin-)?(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{{20,}}{_E}"
    ),
    "aws-access-key": _token("(?:AKIA|ASIA|ABIA|ACCA)", r"[0-9A-Z]{16}\b"),
    "alibaba-key": _token("LTAI", rf"[A-Za-z0-9]{{20}}{_E}"),
    "github-token": (
        _token("gh[pousr]_", rf"[A-Za-z0-9]{{36,}}{_E}"),
        _token("github_pat_", rf"[A-Za-z0-9_]{{22,}}{_E}"),
    ),
    "gitlab-token": (
        *_tokens(
            "glp[at]t- glrt- gldt- glptt- glft- glsoat- glcbt- glimt- glagent- gloas- glffct-",
            rf"[A-Za-z0-9_-]{{20,}}{_E}",
        ),
        _token("GR1348941", rf"[A-Za-z0-9_-]{{20,}}{_E}"),
    ),
    "slack-token": (
        _token("xox[abposre]-", rf"[A-Za-z0-9-]{{10,}}{_E}"),
        _token("xoxe\\.xox[bp]-", rf"[A-Za-z0-9-]{{10,}}{_E}"),
        _token("xapp-", rf"[A-Za-z0-9-]{{20,}}{_E}"),
    ),
    "slack-webhook": r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
    "discord-webhook": r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]+",
    "google-api-key": _token("AIza", rf"[0-9A-Za-z_-]{{35}}{_E}"),
    "google-oauth-secret": _token("GOCSPX-", rf"[A-Za-z0-9_-]{{28}}{_E}"),
    "stripe-key": (
        *(_token(f"{c}k_(?:live|test)_", rf"[0-9A-Za-z]{{16,}}{_E}") for c in "sr"),
        _token("whsec_", rf"[A-Za-z0-9]{{32,}}{_E}"),
    ),
    "hf-token": (
        _token("hf_", rf"[A-Za-z0-9]{{30,}}{_E}"),
        _token("api_org_", rf"[A-Za-z0-9]{{30,}}{_E}"),
    ),
    "npm-token": _token("npm_", rf"[A-Za-z0-9]{{36}}{_E}"),
    "pypi-token": _token("pypi-", rf"AgE[A-Za-z0-9_-]{{50,}}{_E}"),
    "rubygems-token": _token("rubygems_", rf"[a-f0-9]{{48}}{_E}"),
    "digitalocean-token": _token("do[opr]_v1_", rf"[a-f0-9]{{64}}{_E}"),
    "docker-token": _token("dckr_pat_", rf"[A-Za-z0-9_-]{{27,}}{_E}"),
    "sendgrid-key": _token("SG\\.", rf"[A-Za-z0-9_-]{{22}}\.[A-Za-z0-9_-]{{43}}{_E}"),
    "mailgun-key": _token("key-", rf"[0-9a-f]{{32}}{_E}"),
    "mailchimp-key": rf"(?<![A-Za-z0-9_-])[0-9a-f]{{32}}-us[0-9]{{1,2}}{_E}",
    "shopify-token": _token("shp(?:at|ca|pa|ss)_", rf"[a-fA-F0-9]{{32}}{_E}"),
    "vault-token": _token("hv[sb]\\.", rf"[A-Za-z0-9_-]{{24,}}{_E}"),
    "databricks-token": _token("dapi", rf"[a-f0-9]{{32}}(?:-[0-9])?{_E}"),
    "grafana-token": (
        _token("glsa_", rf"[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}{_E}"),
        _token("glc_", r"[A-Za-z0-9+/]{32,}={0,2}"),
        _token("eyJrIjoi", r"[A-Za-z0-9+/]{40,}={0,2}"),
    ),
    "twilio-key": _token("SK", rf"[0-9a-f]{{32}}{_E}"),
    "telegram-bot-token": rf"(?<![0-9A-Za-z_-])[0-9]{{8,10}}:AA[A-Za-z0-9_-]{{33}}{_E}",
    "notion-token": (
        _token("ntn_", rf"[0-9]{{11}}[A-Za-z0-9]{{35}}{_E}"),
        _token("secret_", rf"(?=[A-Za-z]*[0-9])[A-Za-z0-9]{{43}}{_E}"),
    ),
    "atlassian-token": _token("AT(?:ATT|CTT)3", rf"[A-Za-z0-9_=-]{{100,}}{_E}"),
    "linear-key": _tokens("lin_api_ lin_oauth_", rf"[A-Za-z0-9]{{40}}{_E}"),
    "postman-key": _token("PMAK-", rf"[a-f0-9]{{24}}-[a-f0-9]{{34}}{_E}"),
    "pulumi-token": _token("pul-", rf"[a-f0-9]{{40}}{_E}"),
    "terraform-token": rf"(?<![A-Za-z0-9])[A-Za-z0-9]{{14}}\.atlasv1\.[A-Za-z0-9_=-]{{60,}}{_E}",
    "doppler-token": _tokens(
        "dp\\.pt\\. dp\\.s[ta]\\. dp\\.ct\\. dp\\.scim\\. dp\\.audit\\.", rf"[A-Za-z0-9]{{40,}}{_E}"
    ),
    "newrelic-key": (
        _token("NR(?:AK|II|AA)-", rf"[A-Z0-9]{{27}}{_E}"),
        _token("NRJS-", rf"[a-f0-9]{{19}}{_E}"),
    ),
    "sentry-token": (
        _token("sntrys_", r"eyJ[A-Za-z0-9+/=_-]{50,}"),
        _token("sntryu_", rf"[a-f0-9]{{64}}{_E}"),
    ),
    "planetscale-token": _tokens(
        "pscale_tkn_ pscale_pw_ pscale_oauth_", rf"[A-Za-z0-9=._-]{{32,64}}{_E}"
    ),
    "flyio-token": (
        _token("fo1_", rf"[A-Za-z0-9_-]{{39,}}{_E}"),
        *_tokens("fm[12]_ fm[12][ar]_", r"[A-Za-z0-9+/]{100,}={0,3}"),
    ),
    "shippo-token": _token("shippo_(?:live|test)_", rf"[a-f0-9]{{40}}{_E}"),
    "square-token": (
        _token("sq0(?:atp|csp)-", rf"[0-9A-Za-z_-]{{22,43}}{_E}"),
        _token("EAAA", rf"[A-Za-z0-9_-]{{60}}{_E}"),
    ),
    "jwt": _token("eyJ", rf"[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{8,}}{_E}"),
}


# One pass per pattern: a lone literal-first regex is scanned ~25x faster by `re`
# than one big alternation, which must try every branch at every position.
def _needle(pattern: str) -> str | None:
    """The literal a pattern starts with: a text without it is not scanned at all.

    ``in`` finds a literal several times faster than a regex scan for it, and most
    texts hold none of the 70-odd prefixes.
    """
    literal = re.match(r"[A-Za-z0-9_-]+", pattern)
    return literal.group(0) if literal is not None and len(literal.group(0)) >= 2 else None


_TOKEN_RES = [
    (kind, re.compile(pattern), _needle(pattern))
    for kind, shapes in _TOKENS.items()
    for pattern in ((shapes,) if isinstance(shapes, str) else shapes)
]
# Token kinds whose pattern cannot start with a literal are tried only when the text
# holds their fixed middle part (a pattern starting with a class is tried everywhere);
# so are those whose literal is in most texts (``do``, ``https``, ``dp``, ``fm``),
# where more of each match is fixed (the one-pass scan finds these too).
_TOKEN_GATES = {
    "aws-access-key": re.compile(r"AKIA|ASIA|ABIA|ACCA"),
    "mailchimp-key": re.compile(r"-us[0-9]"),
    "telegram-bot-token": re.compile(r"[0-9]:AA"),
    "terraform-token": re.compile(r"\.atlasv1\."),
    "digitalocean-token": re.compile(r"do[opr]_v1_"),
    "slack-webhook": re.compile(r"hooks\.slack\.com/"),
    "discord-webhook": re.compile(r"\.com/api/webhooks/"),
    "doppler-token": re.compile(r"dp\.(?:pt|s[ta]|ct|scim|audit)\."),
    "flyio-token": re.compile(r"f(?:o1|m[12][ar]?)_"),
}
# The token patterns in order, each run of patterns that share a needle as one group,
# with the gate of each pattern: a text is searched for each needle once.
_TOKEN_GROUPS: list[
    tuple[str | None, list[tuple[str, re.Pattern[str], re.Pattern[str] | None]]]
] = []
for _kind, _regex, _literal in _TOKEN_RES:
    if not _TOKEN_GROUPS or _literal is None or _TOKEN_GROUPS[-1][0] != _literal:
        _TOKEN_GROUPS.append((_literal, []))
    _TOKEN_GROUPS[-1][1].append((_kind, _regex, _TOKEN_GATES.get(_kind)))
# The groups each needle (or gate) lets run, by their place in ``_TOKEN_GROUPS``, and
# those that run on every text (a pattern with neither).
_GROUPS_BY_FIND: dict[str, list[int]] = {}
_EVERY_TEXT_GROUPS: set[int] = set()
for _index, (_literal, _patterns) in enumerate(_TOKEN_GROUPS):
    if _literal is not None:
        _GROUPS_BY_FIND.setdefault(_literal, []).append(_index)
        continue
    for _shape in _patterns:
        _gate = _shape[2]
        if _gate is None:
            _EVERY_TEXT_GROUPS.add(_index)
        else:
            _GROUPS_BY_FIND.setdefault(_gate.pattern, []).append(_index)
# A token whose random part is a run of one filler is a documentation placeholder
# (`ghp_xxxxxxxx…`, `sk-XXXX…`), not a key.
_FILLER = re.compile(r"x{4,}|X{4,}|\*{4,}")

# Words that make a variable name secret when the name ends with them (any case):
# DB_PASSWORD, apiKey, csrf_token; not TOKEN_COUNT, max_tokens or passwordless.
_WORDS = [
    "password", "passwd", "passphrase", "secret", "token", "credential", "credentials",
    "accountkey",
    *(f"{a}{sep}key" for a in ("api", "access", "private", "secret") for sep in ("", "_", "-")),
]  # fmt: skip
_SECRET_ENDINGS = tuple(_WORDS)


def _ends_with_secret_word(before: str) -> bool:
    """True when ``before`` ends with a secret word, then maybe a quote and blanks.

    A plain ``endswith`` instead of a regex: this runs for every ``"key": "value"``
    pair in a JSON log.
    """
    tail = before.rstrip(" \t")
    if tail[-1:] in ('"', "'"):
        tail = tail[:-1]
    return tail[-20:].lower().endswith(_SECRET_ENDINGS)


# The name before an `=`: its last word must be secret (see `_ends_with_secret_word`).
# HTTP headers that carry a key (the name just before the colon).
_HEADER_NAME = re.compile(
    r"(?<![A-Za-z0-9_-])(?:x-)?(?:api-key|auth-token|access-token|private-token|goog-api-key)\Z",
    re.IGNORECASE,
)
# A dotted name on the right of `=` refers to a value kept elsewhere.
# (Parts of identifier length: `pat…Kf.aa6c…` with a 64-character part is a token.)
_REFERENCE = re.compile(r"[A-Za-z_]\w{0,39}(?:\.[A-Za-z_]\w{0,39})+\Z")


def _word_alternation(words: list[str]) -> str:
    """The words, any case, as ``[pPsS](?:(?<=[pP])(?i:assword|...)|(?<=[sS])(?i:ecret))``.

    A case-insensitive alternation is tried by `re` at every position (~20x slower); a
    first character in an explicit class lets it skip to the places a word can start.
    """
    by_first: dict[str, list[str]] = {}
    for word in sorted(words, key=len, reverse=True):
        by_first.setdefault(word[0].lower(), []).append(re.escape(word[1:]))
    # One class first (`re` scans for a class only when the pattern starts with it),
    # then each word's rest after a look-behind at its first letter.
    firsts = "".join(f"{c}{c.upper()}" for c in by_first)
    rests = "|".join(
        f"(?<=[{c}{c.upper()}])(?i:{'|'.join(words)})" for c, words in by_first.items()
    )
    return f"[{firsts}](?:{rests})"


_WORD_ALT = _word_alternation(_WORDS)
# A whole name (possessive: no backtracking) whose last word is secret, checked with
# fixed-width look-behinds because `re` has no variable-width ones.
_NAME = r"[A-Za-z0-9_.-]++(?:" + "|".join(f"(?<=(?i:{word}))" for word in _WORDS) + ")"
# Values that name a secret instead of holding one.
_PLACEHOLDER = re.compile(
    r"^(?:\$|<|\{|%|\*{3}|\[REDACTED|(?:str|int|bytes|bool|float|None|null|true|false"
    r"|Optional|SecretStr|Any|string|~)\b|your[-_]|(?:change[-_]?me|placeholder)$)"
    # elided (`sk-ant-...`) or filled with x (`sk-xxxx`)
    r"|(?:\.\.\.|…)$|x{4,}|X{4,}"
    # a call (`api_key: anthropic_api_key()`): code that fetches the secret
    r"|^[A-Za-z_][\w.]*\([^)]*\)[;,]?$",
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
    # Authorization: Basic base64(user:password); `_replace_value` decodes it to be sure
    "basic": (
        r"(?P<keep>asic(?<=[Bb]asic)(?<![A-Za-z0-9_][Bb]asic)[ \t]+)"
        r"(?P<value>[A-Za-z0-9+/]{6,}={0,2})(?![A-Za-z0-9+/=_-])"
    ),
    # X-Api-Key: value / Private-Token: value (HTTP headers, also inside a quoted -H).
    # Anchored on the colon; `_replace_value` checks the header name before it.
    "header": r"(?P<keep>:(?<=[A-Za-z]:)[ \t]*)(?P<value>[^\s\"'<$%{\[]{8,})",
    # "name": "value" / name = 'value' (JSON, YAML, code): the name ends with a secret
    # word. Anchored on the word, not on the separator, which a JSON log holds at every
    # pair (one Python check per pair made this the slowest pattern).
    "quoted": (
        # (a backslash before a quote: the same pair inside a JSON-encoded string)
        rf"(?P<keep>(?i:{_WORD_ALT})\\?[\"']?[ \t]*[:=][ \t]*(?P<q>\\?[\"']))"
        # (not from an escaped quote: in `"PASSWORD": "\"pw\""` the value is `"pw"`,
        # which the gitleaks rules find decoded, not the backslash before it)
        r"(?P<value>(?!\\[\"'])[^\"'\n]+)(?P=q)"
    ),
    # NAME=value anywhere on a line (.env files, shells, INI, query strings), anchored on
    # the `=`; `_replace_value` checks the name. Lower-case names need a digit in the
    # value, which tells a value from a variable, as in `api_key = api_key`.
    "assign": (
        r"(?P<keep>=(?<![=!<>]=)(?!=)[ \t]*)"  # the literal first: `re` skips to each `=`
        # A value ends at a blank or at an escaped line break or quote (`\n`, `\"`: the
        # text is a JSON string, as in a raw log line); other backslashes belong to it.
        # It does not start with an escaped backslash either: `\\n` is a line break in
        # text encoded twice (`PASSWORD=\\nAPI_KEY=…`, an empty value).
        r"(?P<value>(?:[^\s\"'`$(){}<>\[\],;&#=\\]|\\(?![nrt\"\\]))"
        r"(?:[^\s\"'`$(){}<>\[\],;&#\\]|\\(?![nrt\"]))*)(?=[\s,;&)\"']|\\[nrt\"]|$)"
    ),
    # --password=value / --token value
    "flag": (
        r"(?P<keep>--(?:password|passwd|token|api-key|secret|access-token)(?:=|[ \t]+))"
        r"(?P<value>[^\s\"'-][^\s\"']*)"
    ),
    # curl -u user:PASSWORD / --user=user:PASSWORD
    "user": (
        r"(?P<keep>-(?<![\w-]-)(?:u|-user)(?:[ \t]+|=)[\"']?[^\s:\"'@]+:)"
        r"(?P<value>[^\s\"'@]+)"
    ),
    # mysql -pPASSWORD (the value joined to the flag, as the client wants it)
    "mysql": (
        r"(?P<keep>(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?[ \t]-p)"
        r"(?P<value>[^\s\"'-][^\s\"']*)"
    ),
    # sshpass -p PASSWORD
    "sshpass": r"(?P<keep>sshpass[ \t]+(?:-[A-Za-z][ \t]+)*-p[ \t]*)(?P<value>[^\s\"'-][^\s\"']*)",
    # Cookie: a=b; c=d (every value of the header, as written or quoted in -H)
    "cookie": (
        r"(?P<keep>ookie(?<=[Cc]ookie)(?<![A-Za-z0-9_][Cc]ookie)[\"']?:[ \t]*)"
        r"(?P<value>[^\s\"'\\=;]+=[^\r\n\"'\\]{6,})"
    ),
    # ~/.docker/config.json: "auth": "base64(user:password)"
    "docker": (
        r"(?P<keep>\"auth\\?\"[ \t]*:[ \t]*\\?\")"
        r"(?P<value>[A-Za-z0-9+/]{8,}={0,2})(?=\\?\")"
    ),
    # password: hunter2 alone on a YAML line
    "yaml": (
        rf"(?P<keep>^[ \t]*-?[ \t]*{_NAME}:[ \t]+)"
        r"(?P<value>(?:[^\s\"'#\\]|\\(?![nrt\"\\]))(?:[^\s\\]|\\(?![nrt\"]))*)"
        r"(?=[ \t]*(?:$|\\[nr]))"
    ),
    # The same line inside a JSON string (a tool input rendered as JSON): after an
    # escaped line break, or first in the string.
    **{
        kind: (
            rf"(?P<keep>{start}[ \t]*-?[ \t]*{_NAME}:[ \t]+)"
            r"(?P<value>(?:[^\s\"'#\\]|\\(?![nrt\"\\]))(?:[^\s\\]|\\(?![nrt\"]))*)"
            r"(?=[ \t]*(?:\\[nr]|\"))"
        )
        for kind, start in (("yaml-escaped", r"\\n"), ("yaml-first", r"\""))
    },
}
_CONTEXT_RES = [(kind, re.compile(pattern, re.MULTILINE)) for kind, pattern in _CONTEXT.items()]
# A pattern that starts at a line start is tried at every position; these run only
# when the text has a secret word followed by its colon somewhere.
_YAML_HINT = re.compile(":(?:" + "|".join(f"(?<=(?i:{re.escape(w)}):)" for w in _WORDS) + r")[ \t]")
_HINTS = {"yaml": _YAML_HINT, "yaml-escaped": _YAML_HINT, "yaml-first": _YAML_HINT}
# Patterns that can only match where a secret word starts: in text cased as ASCII is
# (see ``cased_as_ascii``) those places are found by ``str.find``, and the pattern is
# tried there alone; a scan of the whole text stopped at every letter that can start a
# word (half the redaction time of a JSON prompt).
_AT_WORDS = frozenset({"quoted"})
# Patterns that can only match on a line where a secret word is followed by one of these
# (a YAML name ends with the word, before its colon and a blank): tried at the start of
# those lines alone, as above (a scan of a long tool output with `token: ` in one line
# tried the line-start pattern at every line).
_HINTED_BY_WORDS = {"yaml": (": ", ":\t")}
# Each context pattern with how it is tried: its hint, whether it runs at secret words
# only, and the text a secret word must be followed by on a line it runs at.
#
# A literal every match of a pattern holds (``need``): a text without it is not scanned.
# In text cased as ASCII is (see ``cased_as_ascii``) two patterns ask more, since an anchor
# alone (a colon, an `=`) is in most strings of a log: `_replace_value` keeps what
# "header" finds unless a key header's name is just before the colon, and what "assign"
# finds unless the name before the `=` ends with a secret word or is `*_KEY`; the
# patterns anchored on secret words run only where one is. (Not all of them exactly: a
# regex of each for `re` cost more, where Hyperscan is missing, than it saved.)
_NEEDS = {
    "url": "://", "bearer": "earer", "basic": "asic", "header": ":", "assign": "=",
    "flag": "--", "user": "-u", "mysql": "-p", "sshpass": "sshpass", "cookie": "ookie",
    "docker": '"auth', "yaml": ":", "yaml-escaped": "\\n", "yaml-first": '"',
}  # fmt: skip


# Literals (any of which will do) that a match needs in text cased as ASCII is: the
# secret words are looked for in any case, ``_KEY`` as written.
_HEADER_NAMES = ("api-key:", "auth-token:", "access-token:", "private-token:")
_KEY_ENDINGS = ("_KEY", "-KEY")
_ASCII_NEEDS = {
    "header": frozenset(_HEADER_NAMES),
    "assign": frozenset((*_WORDS, *_KEY_ENDINGS)),
    **dict.fromkeys(("quoted", *_HINTS), frozenset(_WORDS)),
}
_CONTEXT_STEPS = [
    (
        kind,
        regex,
        _NEEDS.get(kind),
        _ASCII_NEEDS.get(kind),
        _HINTS.get(kind),
        kind in _AT_WORDS,
        _HINTED_BY_WORDS.get(kind),
    )
    for kind, regex in _CONTEXT_RES
]


# The context steps (their places in ``_CONTEXT_STEPS``) each literal found lets run, and
# those that run on every text (none so far: each pattern needs a literal).
_STEPS_BY_NEED: dict[str, list[int]] = {}
for _index, _step in enumerate(_CONTEXT_STEPS):
    _STEPS_BY_NEED.setdefault(_step[2] or "", []).append(_index)
_EVERY_TEXT_STEPS = frozenset(_STEPS_BY_NEED.pop("", ()))


def _steps_after(done: int, found: set[str]) -> list[int]:
    """The context steps after the ``done``-th that a text holding ``found`` lets run."""
    steps = {i for key in found for i in _STEPS_BY_NEED.get(key, ()) if i > done}
    return sorted(steps.union(i for i in _EVERY_TEXT_STEPS if i > done))


@functools.cache
def _prefilter(fast: bool = True) -> Prefilter:
    """One pass that finds every needle, gate and need of our own patterns (``fast``:
    with Hyperscan where it is installed)."""
    # The gitleaks keywords too (one pass for both); a needle that is also a keyword is
    # looked for as the keyword (any case): a weaker gate, but one a match still needs.
    keywords = rule_set().keywords.caseless
    cased = [
        *(needle for needle, _ in _TOKEN_GROUPS if needle is not None),
        *(need for need in _NEEDS.values() if need is not None),
        *_KEY_ENDINGS,
    ]
    return Prefilter(
        cased=[literal for literal in cased if literal not in keywords],
        caseless=[*_WORDS, *_HEADER_NAMES, *keywords],
        patterns=[gate.pattern for gate in _TOKEN_GATES.values()],
        fast=fast,
    )


def expect_much_text() -> None:
    """Say that megabytes of text are about to be redacted (an index build): the one-pass
    scan is compiled now, not after its first megabyte (see ``prefilter.COMPILE_AFTER``)."""
    _prefilter().compile_now()


@functools.cache
def _inert() -> frozenset[str]:
    """What ``_prefilter`` may find in a text cased as ASCII, without backslashes, while
    no rule can match in it: the anchors (``:``, ``=``, ``"``) of the patterns that also
    need a secret word or a header name, which the scan found none of then. (Not the
    escapes: a gitleaks keyword may be in the decoded view only.)"""
    if _EVERY_TEXT_GROUPS:
        return frozenset()
    anchors = {
        need
        for need, steps in _STEPS_BY_NEED.items()
        if all(_CONTEXT_STEPS[i][3] is not None for i in steps)
    }
    if any(_CONTEXT_STEPS[i][3] is None for i in _EVERY_TEXT_STEPS):
        return frozenset()
    return frozenset(anchors - _GROUPS_BY_FIND.keys() - rule_set().gated.keys())


# Line breaks and indentation inside a secret, as written or escaped in a JSON string.
_LAYOUT = re.compile(r"\s+|\\[nrt]")
_LABELS = {
    "url": "url-password",
    "bearer": "bearer-token",
    "basic": "basic-auth",
    "user": "password",
    "mysql": "password",
    "sshpass": "password",
    "cookie": "cookie",
    "docker": "docker-auth",
}


def _basic_credentials(value: str) -> bool:
    """True when ``value`` is base64 of ``user:password``, as HTTP Basic auth sends."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and decoded.isascii()


def _assigned_secret(before: str, value: str) -> bool:
    """True when the name in ``before`` (the text ahead of ``=``) makes ``value`` a secret."""
    # The name before the `=` (blanks and a closing quote skipped), maybe empty.
    tail = before.rstrip(" \t")
    name = trailing_name(tail[:-1] if tail[-1:] in ('"', "'") else tail)
    # Environment variables named *_KEY (STRIPE_KEY, MY_SERVICE_KEY) hold keys; a
    # lower-case `sort_key` in code usually does not.
    env_key = name.isupper() and name.endswith(("_KEY", "-KEY"))
    if not env_key and not _ends_with_secret_word(before):
        return False
    if _REFERENCE.match(value):
        return False  # API_KEY = settings.API_KEY
    # Upper-case names (environment variables) hold secrets whatever they look like;
    # other names are often code, where a value without a digit is another variable
    # and a short number is a count (`token=5`).
    if name.isupper():
        return True
    return any(c.isdigit() for c in value) and not (value.isdigit() and len(value) < 8)


class Redactor:
    """Redacts text and keeps counts per kind of distinct secret across calls."""

    def __init__(self) -> None:
        self.by_kind: Counter[str] = Counter()
        self._seen: set[tuple[str, str]] = set()
        # Made once: a redaction runs for every string of a session and every prompt. A
        # pattern runs only where the text holds what it needs, so its replacer is made
        # when first needed (`redact()` makes a Redactor per text, most of which no
        # pattern runs on).
        self._replacers: dict[tuple[bool, str], Callable[[re.Match[str]], str]] = {}
        # The secrets found while a decoded view is searched (see `_gitleaks_escaped`).
        self._recording: list[tuple[str, str]] | None = None

    @property
    def count(self) -> int:
        """How many distinct secrets were redacted so far."""
        return sum(self.by_kind.values())

    def redact(self, text: str) -> str:
        """`text` with every recognised secret replaced by `[REDACTED:kind]`.

        A text with nothing to redact comes back as the same object: a pattern that
        matched a value it then kept still built a copy, and redacting a session in
        place swapped half its text for equal copies (53 MB churned on a 200 MB log).
        """
        if not text:
            return text  # (every emptied body of a hollow session, every missing field)
        found = _prefilter().found(text)
        if found <= _inert() and "\\" not in text and cased_as_ascii(text):
            return text  # (most strings of a log: no rule has what it needs to run)
        original = text
        text, found = self._redact_ours(text, found)
        view = _unescape(_unescape(text))
        text = self._gitleaks(text, found) if view == text else self._gitleaks_escaped(text, view)
        return original if text == original else text

    def _redact_ours(self, text: str, found: set[str]) -> tuple[str, set[str]]:
        """One pass of our own rules over ``text``, in which ``_prefilter`` found ``found``:
        vendor tokens, then contexts; and what ``_prefilter`` finds in the text it returns.

        A pattern runs only where the text holds what every match of it needs (see
        ``_NEEDS``), all found in one pass (``_prefilter``), found again only when a
        pattern changed the text.
        """
        scanned = text
        groups = {i for key in found for i in _GROUPS_BY_FIND.get(key, ())}
        groups |= _EVERY_TEXT_GROUPS
        for index in sorted(groups):
            for kind, regex, gate in _TOKEN_GROUPS[index][1]:
                if gate is None or gate.pattern in found:
                    text = regex.sub(self._replacer(kind, token=True), text)
        text, found = self._rescanned(text, scanned, found)
        scanned = text
        ascii_text = cased_as_ascii(text)
        steps = _steps_after(-1, found)
        words_of: str | None = None
        words: list[tuple[int, int]] | None = None
        while steps:
            index = steps.pop(0)
            kind, regex, _, ascii_need, hint, at_words, hinted_by = _CONTEXT_STEPS[index]
            if ascii_need is not None and ascii_text and ascii_need.isdisjoint(found):
                continue
            replace = self._replacer(kind, token=False)
            by_words = at_words or hinted_by is not None
            if by_words and words_of is not text:
                # Found again only when a pattern changed the text (`sub` returns the
                # same object when it replaced nothing).
                words_of, words = text, _secret_words(text, found)
            if not by_words or words is None:  # (see ``_secret_words``)
                if hint is None or hint.search(text):
                    text = regex.sub(replace, text)
            elif at_words:
                text = _sub_at(regex, text, sorted({start for start, _ in words}), replace)
            elif hinted_by is not None:
                lines = {
                    text.rfind("\n", 0, start) + 1
                    for start, end in words
                    if text.startswith(hinted_by, end)
                }
                text = _sub_at(regex, text, sorted(lines), replace)
            if text is not scanned:
                text, found = self._rescanned(text, scanned, found)
                if text is not scanned:  # (a label may hold what a later step needs)
                    steps = _steps_after(index, found)
                scanned, ascii_text = text, cased_as_ascii(text)
        return text, found

    @staticmethod
    def _rescanned(text: str, scanned: str, found: set[str]) -> tuple[str, set[str]]:
        """``text`` after a pattern ran on ``scanned``, and what it holds: the same object
        when nothing changed (a match that was kept still built an equal copy, which
        would be scanned again and its secret words found again)."""
        if text is scanned or text == scanned:
            return scanned, found
        return text, _prefilter().found(text)

    def _gitleaks_escaped(self, text: str, view: str) -> str:
        """``text``, which holds JSON string escapes, with what the gitleaks rules find in
        ``view`` (its escapes decoded, once and twice: a tool input holding a JSON
        document, a raw log line quoting one) replaced where it sits encoded.

        The escapes (``\\"`` before a value, ``\\n`` after it) hide the delimiters most
        gitleaks rules need around a secret, so a key found in plain text leaked there.
        The rules run on the view alone (it holds all the text does), not on both: a
        text full of escapes (a raw log line) would pay twice. Ours read escaped text
        as written (a value ends at ``\\"`` or ``\\n``).
        """
        found: list[tuple[str, str]] = []
        self._recording = found
        try:
            self._gitleaks(view)
        finally:
            self._recording = None
        for kind, secret in sorted(set(found), key=lambda f: -len(f[1])):
            if len(secret) < 4:
                continue  # too short to replace by value: it could be any word
            label = f"[REDACTED:{kind}]"
            for form in _encoded_forms(secret):
                if form not in text:
                    continue
                if len(secret) >= 12:  # found anywhere it is the secret, or a piece of it
                    text = text.replace(form, label)
                    continue
                # A short one only where it stands whole (maybe after `\\n`), not in a word.
                bounded = rf"(?:(?<![\w+/-])|(?<=\\[nrt])){re.escape(form)}(?![\w+/=-])"
                text = re.sub(bounded, label, text)  # (no backslash in a label)
        return text

    def _gitleaks(self, text: str, holds: set[str] | None = None) -> str:
        """``text`` with what the gitleaks rules find replaced (after our own rules,
        whose labels and context handling come first): overlapping finds are merged.
        ``holds``: what ``_prefilter`` found in ``text``, when it was run on it."""
        parts: list[str] = []
        done = 0
        label = ""
        finds = rule_set().findings(text, holds)
        for found in sorted(finds, key=lambda f: (f.start, -f.end)):
            if found.start < done:  # overlaps the previous find: widen it
                done = max(done, found.end)
                continue
            secret = text[found.start : found.end]
            if _FILLER.search(secret):
                continue
            if label:
                parts.append(label)
            parts.append(text[done : found.start])
            self._found(found.rule, secret)
            label, done = f"[REDACTED:{found.rule}]", found.end
        if not label:
            return text
        parts += (label, text[done:])
        return "".join(parts)

    def _replacer(self, kind: str, *, token: bool) -> Callable[[re.Match[str]], str]:
        """The ``re.sub`` replacer of a token ``kind`` or of a context pattern's."""
        replace = self._replacers.get((token, kind))
        if replace is None:
            method = self._replace_token if token else self._replace_value
            replace = self._replacers[token, kind] = functools.partial(method, kind)
        return replace

    def _found(self, kind: str, secret: str) -> None:
        if self._recording is not None:
            self._recording.append((kind, secret))
        # The same secret quoted inside JSON has `\n` for its line breaks: one secret.
        key = (kind, _LAYOUT.sub("", secret))
        if key not in self._seen:
            self._seen.add(key)
            self.by_kind[kind] += 1

    def _replace_token(self, kind: str, match: re.Match[str]) -> str:
        if _FILLER.search(match.group(0)):
            return match.group(0)
        self._found(kind, match.group(0))
        return f"[REDACTED:{kind}]"

    def _replace_value(self, kind: str, match: re.Match[str]) -> str:
        value = match.group("value")
        if _PLACEHOLDER.search(value):
            return match.group(0)
        before = match.string[max(0, match.start() - 64) : match.start()]
        if kind == "assign" and not _assigned_secret(before, value):
            return match.group(0)
        if kind == "header" and not _HEADER_NAME.search(before):
            return match.group(0)
        if kind == "basic" and not _basic_credentials(value):
            return match.group(0)
        if kind == "user" and value.isdigit():
            return match.group(0)  # docker run -u 1000:1000 is a uid and a gid
        label = _LABELS.get(kind, "secret")
        self._found(label, value)
        closing = match.groupdict().get("q") or ""
        return f"{match.group('keep')}[REDACTED:{label}]{closing}"


# JSON string escapes and what they stand for; `\u` escapes are left as they are (a
# secret is ASCII). An escaped backslash is set aside first so that `\\n` stays a
# backslash and an `n`.
_ESCAPES = (("\\\\", "\ue000"), ('\\"', '"'), ("\\n", "\n"), ("\\r", "\r"), ("\\t", "\t"),
            ("\\/", "/"), ("\ue000", "\\"))  # fmt: skip


def _unescape(text: str) -> str:
    """``text`` with one level of JSON string escapes decoded (a view, not a parse:
    a backslash that starts no escape is kept). ``str.replace`` in turn: a regex with a
    function per escape cost more than the rules on a raw log line."""
    if "\\" not in text or "\ue000" in text:
        return text
    for escaped, plain in _ESCAPES:
        text = text.replace(escaped, plain)
    return text


def _encoded_forms(secret: str) -> tuple[str, ...]:
    """``secret`` as it is written inside a JSON string, and inside one nested in another."""
    once = json.dumps(secret, ensure_ascii=False)[1:-1]
    twice = json.dumps(once, ensure_ascii=False)[1:-1]
    return tuple(dict.fromkeys((secret, once, twice)))


def _secret_words(text: str, holds: set[str]) -> list[tuple[int, int]] | None:
    """(start, end) of every secret word in ``text``, any case; None unless it is
    ``cased_as_ascii`` (elsewhere the offsets of ``lower()`` may not be the text's).
    ``holds``: what ``_prefilter`` found in ``text`` (only the words it holds are looked for)."""
    if not cased_as_ascii(text):
        return None
    lower = text.lower()
    found = []
    for word in _WORDS:
        if word not in holds:
            continue
        start = lower.find(word)
        while start >= 0:
            found.append((start, start + len(word)))
            start = lower.find(word, start + 1)
    return found


def _sub_at(
    regex: re.Pattern[str],
    text: str,
    starts: list[int],
    replace: Callable[[re.Match[str]], str],
) -> str:
    """``regex.sub(replace, text)`` for a pattern that can only match at ``starts``."""
    parts: list[str] = []
    done = 0
    for start in starts:
        if start < done:
            continue
        match = regex.match(text, start)
        if match is not None:
            parts += (text[done:start], replace(match))
            done = match.end()
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def redact(text: str) -> tuple[str, int]:
    """Redact secrets from `text`; returns the new text and how many distinct secrets it held."""
    redactor = Redactor()
    return redactor.redact(text), redactor.count


def redact_optional(text: str | None) -> str | None:
    """``text`` redacted; None and "" as they are (a session's cwd or title)."""
    return redact(text)[0] if text else text


def redact_value(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with every string in it redacted; dicts, lists and tuples are walked.

    A string under a name (a tool input's ``{"DATADOG_APP_KEY": "..."}``) is redacted
    with its name in view (see ``redact_field``): alone, the value of a rule that needs
    the name (most keyword rules, ``*_KEY=``) was kept.

    A dict or list in which nothing changed comes back as itself, not a copy: a copy of
    a long restore's facts (every turn's, in the synthesis request) was about 20 MB of
    its peak at 200 MB (bench/scale.py). Tuples still come back as lists.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        done = {
            key: redact_field(key, item, redact)
            if isinstance(item, str)
            else redact_value(item, redact)
            for key, item in value.items()
        }
        return value if _unchanged(done.values(), value.values()) else done
    if isinstance(value, list | tuple):
        items = [redact_value(item, redact) for item in value]
        return value if isinstance(value, list) and _unchanged(items, value) else items
    return value


def _unchanged(done: Iterable[Any], items: Iterable[Any]) -> bool:
    """True when each of ``done`` is its item of ``items`` (or an equal string)."""
    return all(
        new is old or (type(new) is str and type(old) is str and new == old)
        for new, old in zip(done, items, strict=True)
    )


# A field name that reads as a variable name: only such names are put before the value.
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}\Z")


def redact_field(name: Any, value: str, redact: Callable[[str], str]) -> str:
    """``value``, the string a field ``name`` holds, redacted as the line ``name=value``.

    Every rule that reads an assignment (``NAME=value``) or a name before a value (the
    gitleaks keyword rules: ``datadog…=``) then sees the name; the value comes back
    without it. A name that is no identifier (prose, a path) is left out.
    """
    if not value or not isinstance(name, str) or not _FIELD_NAME.match(name):
        return redact(value)
    if _ends_with_secret_word(name) and '"' not in value and "\n" not in value:
        # As the JSON pair it was: the whole value of a secret-named field goes, as it
        # does in a raw log line (``NAME=`` would end it at a `$` or `;`).
        head = f'"{name}": '
        encoded = json.dumps(value, ensure_ascii=False)
        done = redact(head + encoded)
        if done != head + encoded and done.startswith(head):
            with contextlib.suppress(ValueError):
                kept = json.loads(done[len(head) :])
                if isinstance(kept, str):
                    return kept
    head = f"{name}="
    done = redact(head + value)
    return done[len(head) :] if done.startswith(head) else redact(value)


def redact_message(message: Message, redact: Callable[[str], str]) -> Message:
    """``message`` with every string it holds redacted, in place; returns it.

    The decoded strings are redacted (a tool input's ``"content"`` with its real line
    breaks), never their JSON encoding, where ``\\n`` would glue a ``.env`` value to
    the next line.
    """
    message.text = redact(message.text)
    if message.tool_input:
        message.tool_input = redact_value(message.tool_input, redact)
    if message.compaction is not None and message.compaction.summary:
        message.compaction.summary = redact(message.compaction.summary)
    if message.meta:
        message.meta = redact_value(message.meta, redact)
    return message


#: Characters of a message text kept on each side of a cut (see ``redact_session``).
KEEP_CHARS = 1_000_000


def head_and_tail(text: str) -> str:
    """``text`` cut to its first and last ``KEEP_CHARS`` when it is longer than both
    (see ``redact_session``'s ``cap``)."""
    if len(text) <= 2 * KEEP_CHARS:
        return text
    cut = len(text) - 2 * KEEP_CHARS
    return f"{text[:KEEP_CHARS]}\n[… {cut} characters omitted …]\n{text[-KEEP_CHARS:]}"


def redact_session(session: Session, redact: Callable[[str], str], *, cap: bool = False) -> Session:
    """Every message of every span (branches, sub-agents, model and tool events) and the
    title redacted, in place, before anything is rendered, saved, sent or served.

    With ``cap`` a message text over 2 MB keeps its first and last ``KEEP_CHARS``
    (the middle is marked omitted) before it is redacted: a restore reads only the head
    and the end of such a text (prompts cap tool output far lower), and redacting a
    30 MB tool output whole cost seconds.
    """
    if cap:
        for span in session.timeline.root.walk():
            for m in span.messages():
                m.text = head_and_tail(m.text)
    if session.title:
        session.title = redact(session.title)
    if session.cwd:  # (also redacted as it is read: see ``sources.open_session``)
        session.cwd = redact(session.cwd)
    for span in session.timeline.root.walk():
        for event in span.events():
            if event.message is not None:
                redact_message(event.message, redact)
            if event.text:
                event.text = redact(event.text)
            if event.compaction is not None and event.compaction.summary:
                event.compaction.summary = redact(event.compaction.summary)
            if event.model is not None:
                for m in (*event.model.input, *event.model.output):
                    redact_message(m, redact)
            if event.tool is not None:
                tool = event.tool
                tool.arguments = redact_value(tool.arguments, redact)
                tool.result = redact(tool.result)
                tool.error = redact(tool.error) if tool.error else tool.error
    return session
