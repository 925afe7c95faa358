"""Credential stores are never read, wherever the workspace root sits (issue 31).

The campaign's finding: with ``--workspace ~/.config`` (or a restore run from ``~`` of a
session whose cwd is ``~/.config``) READ_FILE returned ``gh/hosts.yml`` and a dozen other
stores, because the refusal list was matched against home-relative paths only; the
offline provider then put them into the nightly JSON. Each case plants a canary in a
store and asserts it reaches no tool answer and no restoration. Every case runs under the
security suite's deadline (tests/security/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import orjson
import pytest
from click.testing import CliRunner

from opencode_restore.api import jobs
from opencode_restore.cli import cli
from opencode_restore.config import load_config
from opencode_restore.llm.offline import OfflineProvider
from opencode_restore.model import Message
from opencode_restore.pipeline.evidence.credentials import credential_signature
from opencode_restore.pipeline.evidence.log_search import Limits
from opencode_restore.pipeline.evidence.sandbox import Workspace, root_refusal
from opencode_restore.pipeline.evidence.tools import EvidenceTools
from opencode_restore.pipeline.run import RestoreOptions, restore_session
from opencode_restore.pipeline.state import RestoreState
from opencode_restore.redact import Redactor
from opencode_restore.store.store import Store
from opencode_restore.timeline.numbering import Numbering
from tests.pipeline.helpers import make_session

CANARY = "CANARY-CREDENTIAL-STORE-0123456789"
#: A recorded Claude Code session (its cwd is rewritten per test).
CLAUDE_LOG = "claude-code/recorded/print-continue/d703ad6a-fc57-46ca-94d6-a6af7cf0c933.jsonl"

#: The stores the campaign read, as they sit under ``~/.config`` or ``~``.
CONFIG_STORES = [
    "gh/hosts.yml",
    "gcloud/application_default_credentials.json",
    "git/credentials",
    "hub",
    "rclone/rclone.conf",
    "containers/auth.json",
    "op/config",
    "doctl/config.yaml",
    "heroku/credentials",
    "pip/pip.conf",
    "configstore/firebase-tools.json",
]
HOME_STORES = [
    ".local/share/opencode-restore/api-token",
    ".local/share/opencode/auth.json",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json",
    ".local/share/keyrings/login.keyring",
    ".git-credentials",
    ".netrc",
    ".docker/config.json",
    ".aws/credentials",
    ".mozilla/firefox/abc.default/logins.json",
    ".config/google-chrome/Default/Login Data",
    ".kaggle/kaggle.json",
    ".composer/auth.json",
    ".m2/settings.xml",
    ".gitcookies",
    ".pgpass",
]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder holding every store, with a canary in each."""
    h = tmp_path / "home" / "me"
    for rel in [f".config/{p}" for p in CONFIG_STORES] + HOME_STORES:
        target = h / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"token: {CANARY}\n")
    (h / "project").mkdir()
    (h / "project" / "app.py").write_text("print('hi')\n")
    monkeypatch.setenv("HOME", str(h))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    return h


def tools_for(ws: Workspace) -> EvidenceTools:
    session = make_session([], cwd=str(ws.root) if ws.root else None)
    return EvidenceTools(session, [], RestoreState(), Numbering(), ws, Redactor().redact, Limits())


def assert_never_read(ws: Workspace, path: str) -> None:
    tools = tools_for(ws)
    for result in (
        tools.run("READ_FILE", {"path": path}),
        tools.run("SEARCH_FILE", {"path": path, "pattern": "CANARY"}),
    ):
        assert not result.ok, (path, result.text)
        assert CANARY not in result.text


@pytest.mark.parametrize(
    "folder", [".config", ".local/share", ".local", ".ssh", ".aws", ".gnupg", ".docker", ".claude"]
)
def test_settings_and_credential_folders_are_never_roots(home: Path, folder: str) -> None:
    (home / folder).mkdir(parents=True, exist_ok=True)
    explicit = Workspace.choose(None, str(home / folder))
    assert explicit.root is None
    assert explicit.refused
    assert "refusing" in explicit.why_none
    # Run from the home folder (cron, systemd, `serve` started in ~): the recorded cwd.
    recorded = Workspace.choose(str(home / folder), None, here=str(home))
    assert recorded.root is None
    assert recorded.refused
    assert "\n" not in recorded.why_none  # one line, for the warning


def test_folders_under_data_trees_and_xdg_folders_are_refused(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / ".local/share/opencode").mkdir(parents=True, exist_ok=True)
    assert root_refusal(home / ".local/share/opencode") is not None
    xdg = tmp_path / "xdg-config"
    xdg.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    assert root_refusal(xdg.resolve()) is not None
    # A project below a settings folder stays a project (people edit ~/.config/nvim).
    assert root_refusal(home / ".config" / "nvim") is None
    assert root_refusal(home / "project") is None
    # A variable naming / or the home folder itself refuses no project by that.
    for odd in ("/", str(home), str(home.parent)):
        monkeypatch.setenv("XDG_DATA_HOME", odd)
        assert root_refusal(home / "project") is None


@pytest.mark.parametrize("store", CONFIG_STORES)
def test_config_stores_are_refused_under_a_copy_of_the_config_folder(
    home: Path, tmp_path: Path, store: str
) -> None:
    # A backup of ~/.config under another name: the stores' own names still tell, but
    # for `hub`, a name too plain to refuse alone: what it holds tells.
    backup = tmp_path / "backup" / "dotfiles"
    target = backup / "config" / store
    target.parent.mkdir(parents=True, exist_ok=True)
    held = f"github.com:\n- user: me\n  oauth_token: {CANARY}\n" if store == "hub" else ""
    target.write_text(held or f"token: {CANARY}\n")
    ws = Workspace.choose(None, str(backup / "config"))
    assert ws.root is not None
    assert_never_read(ws, store)
    # With the folder's own name kept, from the backup's root.
    kept = backup / ".config" / store
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(f"token: {CANARY}\n")
    assert_never_read(Workspace.choose(None, str(backup)), f".config/{store}")


@pytest.mark.parametrize(
    # The product's own config (it may hold API keys) is only in the mirror: the tests'
    # home folder must keep a valid one.
    "store",
    [*HOME_STORES, ".config/opencode-restore/config.toml"],
)
def test_home_stores_are_refused_in_a_workspace_that_holds_them(tmp_path: Path, store: str) -> None:
    ws_dir = tmp_path / "mirror-of-home"
    target = ws_dir / store
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(f"token: {CANARY}\n")
    assert_never_read(Workspace.choose(None, str(ws_dir)), store)


SIGNED = {
    "hosts.txt": f"github.com:\n    oauth_token: gho_{CANARY}\n    user: me\n",
    "adc.json": f'{{"client_id": "x", "refresh_token": "1//0g{CANARY}", "type": "user"}}',
    "creds.ini": f"[default]\naws_secret_access_key = {CANARY}/abc\n",
    "registry.json": f'{{"auths": {{"quay.io": {{"auth": "dXNlcjpwYXNz{CANARY[:8]}"}}}}}}',
    "logins": f"machine api.example.com\n  login me\n  password {CANARY}\n",
    "oneline-netrc": f"machine example.com login me password {CANARY}\n",
    "key.txt": f"notes\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA{CANARY}\n",
    "sa.json": f'{{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIE{CANARY}\\n"}}',
    "npm.cfg": f"//registry.npmjs.org/:_authToken=npm_{CANARY}\n",
}


@pytest.mark.parametrize("name", sorted(SIGNED))
def test_files_holding_credentials_are_refused_by_content(tmp_path: Path, name: str) -> None:
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    (ws_dir / name).write_text(SIGNED[name])
    ws = Workspace.choose(None, str(ws_dir))
    assert_never_read(ws, name)
    assert "holds credentials" in tools_for(ws).run("READ_FILE", {"path": name}).text


LOOK_ALIKES = [
    "token = data['refresh_token']\nself.refresh_token = refresh_token\n",
    'config = {"auth": "required", "mode": "strict"}\n',
    "if key.startswith('-----BEGIN RSA PRIVATE KEY-----'):\n    pass\n",
    "Set aws_secret_access_key = ${AWS_SECRET} in CI.\n",
    "The machine learning model reads the password field.\n",
    "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_code_that_only_names_credentials_stays_readable(tmp_path: Path, text: str) -> None:
    assert credential_signature(text) is None
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    (ws_dir / "code.py").write_text(text)
    assert tools_for(Workspace.choose(None, str(ws_dir))).run("READ_FILE", {"path": "code.py"}).ok


#: Files of a megabyte (the read cap) built to make a signature rescan the rest of the
#: file from every keyword: each pattern must stay linear (one took 13 s on the first).
BOMBS = {
    "keys": "refresh_token=" * 70_000,
    "auths": '"auths":{' * 110_000,
    "begin": "-----BEGIN PRIVATE KEY-----" + "\n" * 1_000_000,
    "netrc": "machine x login a " * 55_000,
    "npm": "//" + "a:" * 500_000,
}


@pytest.mark.timeout(60)  # a runaway guard only: each takes well under a second
@pytest.mark.parametrize("name", sorted(BOMBS))
def test_content_signatures_stay_linear_on_hostile_files(tmp_path: Path, name: str) -> None:
    assert credential_signature(BOMBS[name]) is None
    ws_dir = tmp_path / "ws"
    ws_dir.mkdir()
    (ws_dir / "bomb.txt").write_text(BOMBS[name][:999_999])
    result = tools_for(Workspace.choose(None, str(ws_dir))).run("READ_FILE", {"path": "bomb.txt"})
    assert result.ok, result.text


def _editing(paths: list[str], cwd: str) -> list[Message]:
    msgs = [Message("u1", "user", "text", "Fix my CLI logins", entry_index=1)]
    for n, path in enumerate(paths, start=2):
        msgs.append(
            Message(
                f"a{n}",
                "assistant",
                "tool_use",
                "",
                tool_name="Edit",
                tool_call_id=f"c{n}",
                tool_input={"file_path": path},
                entry_index=n,
            )
        )
    msgs.append(Message("a99", "assistant", "text", "Done.", entry_index=99))
    return msgs


def test_offline_restore_run_from_home_reads_no_store(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nightly case: run in ~, a session in ~/.config that edited two stores."""
    cwd = str(home / ".config")
    edited = [f"{cwd}/gh/hosts.yml", f"{cwd}/rclone/rclone.conf"]
    session = make_session(_editing(edited, cwd), cwd=cwd)
    monkeypatch.chdir(home)
    cfg = load_config(env={})
    restoration = anyio.run(
        lambda: restore_session(session, cfg, OfflineProvider(), options=RestoreOptions())
    )
    assert all(e.tool != "READ_FILE" for e in restoration.evidence)
    dumped = orjson.dumps(restoration.model_dump(mode="json")).decode()
    assert CANARY not in dumped
    assert any("refusing" in w and ".config" in w for w in restoration.warnings)


def _log_in_config(home: Path, directory: Path) -> Path:
    """The recorded session, moved into ``~/.config`` and editing ``gh/hosts.yml``."""
    text = (Path(__file__).parents[2] / "fixtures" / CLAUDE_LOG).read_text()
    text = text.replace("/home/dev/src/greet-cli/greet.py", str(home / ".config/gh/hosts.yml"))
    log = directory / "session.jsonl"
    directory.mkdir(parents=True, exist_ok=True)
    log.write_text(text.replace("/home/dev/src/greet-cli", str(home / ".config")))
    return log


def test_restore_run_from_home_says_why_there_is_no_workspace(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's default root: one warning line on stderr names the refused folder."""
    log = _log_in_config(home, tmp_path / "logs")
    config = tmp_path / "config.toml"
    config.write_text("[restore]\nresume = false\n")
    monkeypatch.chdir(home)
    result = CliRunner().invoke(
        cli, ["restore", str(log), "--config", str(config), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    refused = [line for line in result.stderr.splitlines() if "refusing" in line]
    assert len(refused) == 1
    assert refused[0].startswith("warning: no workspace: refusing ")
    assert str(home / ".config") in refused[0]
    assert CANARY not in result.stdout


def test_batch_run_from_home_reads_no_store(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`batch` (and `nightly`, the same restore per session) started in ~ by cron."""
    _log_in_config(home, tmp_path / "logs")
    out = tmp_path / "out"
    monkeypatch.chdir(home)
    result = CliRunner().invoke(cli, ["batch", str(tmp_path / "logs"), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    written = sorted(out.glob("*.json"))
    assert written
    for path in [*written, *out.glob("*.md")]:
        assert CANARY not in path.read_text()
    warnings = orjson.loads(written[0].read_bytes())["warnings"]
    assert any("refusing" in w and ".config" in w for w in warnings)


def test_api_job_of_a_server_started_in_home_reads_no_store(
    home: Path, tmp_path: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve` started in ~ (systemd): the job's restoration and its stored row."""
    log = _log_in_config(home, tmp_path / "logs")
    session_id = "d703ad6a-fc57-46ca-94d6-a6af7cf0c933"
    store.register(session_id, "claude-code", str(log))
    row = store.session(session_id)
    assert row is not None
    monkeypatch.chdir(home)
    run_id = store.create_run(session_id, "restore")
    anyio.run(jobs.run_restore, store, load_config(env={}), row, run_id, None)
    run = store.run(run_id)
    assert run is not None
    assert run.status == "done", run.error
    stored = store.latest_restoration(session_id)
    assert stored is not None
    dumped = orjson.dumps([stored.summary, stored.summary_markdown, stored.errors]).decode()
    assert CANARY not in dumped
    assert "refusing" in dumped
