"""Credential stores: the files no evidence tool returns, wherever they sit.

Two tests, both applied by the sandbox to every file it would hand back (READ_FILE,
SEARCH_FILE, and the offline provider's reads of the most-edited files, which go through
the same tools):

* `is_credential_path` matches the *whole* real path, not the part below the workspace
  root: a root of ``~/.config`` (or a copy of it under ``/backup``) made ``gh/hosts.yml``
  a harmless-looking relative path when only home-relative pairs such as
  ``(".config", "gh")`` were checked. A store is named by a run of trailing or inner
  components (``gh/hosts.yml``, ``containers/auth.json``), so it is found whether the
  root is above, at or inside the folder that holds it.
* `credential_signature` looks at what a file holds, for the stores no name list will
  ever cover (a netrc under another name, a key pasted into ``notes.txt``): an OAuth or
  refresh token with a token-like value, an AWS secret key, a docker/podman ``"auth"``
  entry, a netrc ``machine … password`` entry, a private-key block.

Refusing is the point: redaction downstream recognises most token shapes, but a store
holds them by design, and one unrecognised kind is a leaked account.
"""

from __future__ import annotations

from collections.abc import Iterable

import regex

#: Names that are a credential store wherever they appear (a folder entered or a file).
STORE_NAMES = frozenset(
    {
        ".ssh", ".gnupg", ".aws", ".azure", ".docker", ".kube", ".minikube", ".netrc",
        "_netrc", ".pgpass", ".git-credentials", ".npmrc", ".yarnrc", ".pypirc", ".gem",
        ".vault-token", ".password-store", ".terraformrc", ".histfile", ".zhistory",
        "Keychains", ".boto", ".s3cfg", ".passwd-s3fs", ".my.cnf", ".mylogin.cnf",
        ".credentials.json", "oauth_creds.json", "credentials.tfrc.json", ".databrickscfg",
        ".oci", ".dockercfg", ".htpasswd", ".authinfo", ".authinfo.gpg", ".msmtprc",
        ".fetchmailrc", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk",
        "id_ed25519_sk", ".gitcookies", ".wakatime.cfg", ".ngrok2", "Login Data",
        "wallet.dat", ".vault_pass", ".thunderbird",
    }
)  # fmt: skip
#: Runs of consecutive components that name a store (a file, or a folder entered).
STORE_RUNS: frozenset[tuple[str, ...]] = frozenset(
    {
        (".config", "gh"), ("gh", "hosts.yml"),
        (".config", "gcloud"), ("gcloud", "application_default_credentials.json"),
        ("gcloud", "credentials.db"), ("gcloud", "access_tokens.db"),
        ("gcloud", "legacy_credentials"),
        (".config", "hub"),
        (".config", "git", "credentials"), ("git", "credentials"),
        (".config", "op"), (".op", "config"), ("op", "config"),
        (".config", "doctl"), ("doctl", "config.yaml"),
        (".config", "rclone"), ("rclone", "rclone.conf"),
        (".config", "containers"), ("containers", "auth.json"),
        (".config", "heroku"), ("heroku", "credentials"),
        (".config", "pip"), ("pip", "pip.conf"), (".pip", "pip.conf"),
        (".config", "configstore"), ("configstore", "firebase-tools.json"),
        (".config", "github-copilot"), ("github-copilot", "hosts.json"),
        ("github-copilot", "apps.json"),
        (".config", "glab-cli"), (".config", "hcloud"), (".config", "stripe"),
        (".config", "netlify"), ("netlify", "config.json"),
        (".wrangler", "config"), (".fly", "config.yml"), (".supabase", "access-token"),
        ("com.vercel.cli", "auth.json"), (".huggingface", "token"), ("huggingface", "token"),
        (".cargo", "credentials"), (".cargo", "credentials.toml"),
        (".terraform.d", "credentials.tfrc.json"),
        (".m2", "settings.xml"), (".m2", "settings-security.xml"),
        (".gradle", "gradle.properties"),
        (".pulumi", "credentials.json"),
        (".claude", ".credentials.json"), (".codex", "auth.json"),
        (".gemini", "oauth_creds.json"), ("opencode", "auth.json"),
        # This product's own API token (data directory, platform or legacy place).
        ("opencode-restore", "api-token"),
        ("opencode-restore", "config.toml"),
        ("share", "keyrings"), ("share", "kwalletd"),
        # Browsers' saved logins and cookies, wallets.
        (".mozilla", "firefox"), (".config", "google-chrome"), (".config", "chromium"),
        (".ethereum", "keystore"), ("ethereum", "keystore"),
        # More tools that keep a token or password in a file of their own.
        ("ngrok", "ngrok.yml"), (".kaggle", "kaggle.json"), (".config", "linode-cli"),
        ("composer", "auth.json"), (".composer", "auth.json"), (".bundle", "config"),
        (".ivy2", ".credentials"), (".sbt", ".credentials"), (".dbt", "profiles.yml"),
        (".snowsql", "config"), (".subversion", "auth"), ("subversion", "auth"),
    }
)  # fmt: skip
STORE_SUFFIXES = ("_history", ".keychain", ".keychain-db")
_RUN_LENGTHS = sorted({len(run) for run in STORE_RUNS})

# Every pattern below runs on up to a megabyte a model chose to read, so each is linear:
# repeats that could rescan the rest of the file from every keyword (a file of
# ``refresh_token=`` repeated) are bounded, and a match stops at the shortest proof.
#
# A value that looks like a token: long, of token characters, with a digit (a variable
# name such as ``self.refresh_token_value`` is no token; real tokens nearly always have one).
_TOKEN_VALUE = r"""["']?(?=[^\s"',;]{0,64}\d)[A-Za-z0-9_\-./+=~]{16}"""
#: (kind, the pattern, a pattern the file must also hold for it to count, or None)
_SIGNATURES: tuple[tuple[str, regex.Pattern[str], regex.Pattern[str] | None], ...] = (
    (
        "a private key",
        regex.compile(
            r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[ \t\r]*\n|\\n)[ \t]*[A-Za-z0-9+/=:\-][A-Za-z0-9+/=:\- ]{15}"
        ),
        None,
    ),
    ("a private key", regex.compile(r""""private_key"[ \t]*:[ \t]*"-----BEGIN"""), None),
    (
        "an OAuth or cloud token",
        regex.compile(
            r"(?i)(?<![A-Za-z0-9])(?:oauth_token|refresh_token|aws_secret_access_key"
            r"|aws_session_token|client_secret)[\"']?[ \t]*[:=][ \t]*" + _TOKEN_VALUE
        ),
        None,
    ),
    # docker/podman: {"auths": {"registry": {"auth": "base64(user:password)"}}}. The
    # "auths" key is looked for apart: a gap between the two in one pattern rescanned
    # kilobytes from each of 100,000 "auths" keys (13 s for a megabyte).
    (
        "a registry login",
        regex.compile(r""""(?:auth|identitytoken)"[ \t]*:[ \t]*"[A-Za-z0-9+/=]{8}"""),
        regex.compile(r""""auths"[ \t]*:"""),
    ),
    (
        "a netrc login",
        regex.compile(
            r"(?m)^[ \t]*(?:machine[ \t]+\S{1,255}|default)"
            r"(?:\s{1,100}(?:login|account|port)\s{1,100}\S{1,255}){0,3}"
            r"\s{1,100}password\s{1,100}\S"
        ),
        None,
    ),
    (
        "a package-registry token",
        regex.compile(
            r"(?m)^[ \t]*(?://[^\s:]{1,255}(?::[^\s:]{1,255})?/?:)?"
            r"_(?:authToken|auth|password)[ \t]*=[ \t]*(?!\$)\S{8}"
        ),
        None,
    ),
)


def is_credential_path(parts: Iterable[str]) -> bool:
    """True when a path (as its components, best the whole real path) names or enters a store."""
    names = tuple(parts)
    for i, name in enumerate(names):
        if name in STORE_NAMES or name.endswith(STORE_SUFFIXES):
            return True
        for length in _RUN_LENGTHS:
            if names[i : i + length] in STORE_RUNS:
                return True
    return False


def credential_signature(text: str) -> str | None:
    """What kind of credential ``text`` holds (for a refusal message), or None."""
    for kind, pattern, context in _SIGNATURES:
        if context is not None and context.search(text) is None:
            continue
        if pattern.search(text) is not None:
            return kind
    return None
