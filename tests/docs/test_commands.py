"""Every `opencode-restore` command in README.md and docs/*.md runs as the docs say.

Which commands: the fenced ```sh and ```console blocks (other blocks are sample output or
config and are never run). In a ```sh block every line is a command (a line ending in `\\`
goes on on the next); in a ```console block only the lines starting with `$ ` are, the
rest being what they print. A command is run when it calls `opencode-restore` (also after
`cd DIR &&`, after `VAR=value`, inside `$(...)`); the others (pip, curl, python bench/...)
are not, as they install things or need a checkout's extras.

How: each block runs its commands in order, each with `bash -c`, in a HOME of its own:

- HOME holds the recorded devset's sessions (fixtures/devset) where Claude Code, Codex,
  Gemini CLI and pi keep them, recorded as working in `~/project` (which exists); the data
  directory is the default one under that HOME, empty. Commands start in HOME.
- `opencode-restore` on PATH is a wrapper around this checkout's: a loopback URL argument
  (`--base-url http://127.0.0.1:11434/v1`) is pointed at the fake LLM server of
  tests/fakes, which OPENAI_BASE_URL and ANTHROPIC_BASE_URL (and dummy keys) name too, so a
  command with `-m openai:...` or `anthropic:...` never leaves the machine. `serve` gets a
  free port.
- `serve` and `mcp` run until they answer once (GET /healthz; an MCP `initialize`), then
  are stopped. Every other command must exit 0, or the block's `exit=N`.

An HTML comment right before a block sets it up (GitHub does not show it):

    <!-- doc-test: cwd=project exit=1 files=~/.claude/settings.json -->

- `cwd=project`: start in ~/project; `cwd=repo`: start in this repository's root (for
  its fixtures; such commands must not write there).
- `exit=N`: each command of the block must exit N.
- `files=P,Q`: after the block these paths exist (`~` is the block's HOME).
- `all=yes`: every line of the block runs, not only ours (a block that makes a file its
  commands then read).
- `skip="why"`: the block is not run; the reason is required (say which test covers it).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fakes.fake_llm_server import FakeLLMServer
from tests.waits import RUNAWAY_S

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DEVSET = ROOT / "fixtures" / "devset"
#: The devset's native folders, and where each agent keeps them under HOME.
AGENT_HOMES = {
    "claude-code/print-continue/native/dot-claude": ".claude",
    "codex/exec-resume/native/codex-home": ".codex",
    "gemini/prompt-resume/native/dot-gemini": ".gemini",
    "pi/print-continue/native/dot-pi": ".pi",
}
RECORDED_CWD = "/home/dev/src/shrinkray"
DIRECTIVE = re.compile(r"^<!--\s*doc-test:(?P<body>.*?)-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
CALLS_US = re.compile(
    r"(?:^|&&|\|\|?|;|\$\()\s*(?:\w+=\S*\s+)*(?:\S*/)?opencode-restore(?=\s|\)|$)"
)
LONG_RUNNING = re.compile(r"\bopencode-restore(?:\s+--[\w-]+)*\s+(?P<name>serve|mcp)\b")
KNOWN_KEYS = {"all", "cwd", "exit", "files", "skip"}
#: Generous guards against a runaway command, never a speed target.
COMMAND_TIMEOUT = 600
START_TIMEOUT = RUNAWAY_S

WRAPPER = """\
#!{python}
# The doc tests' opencode-restore: loopback URLs go to the fake LLM server, serve to a free port.
import os, re, sys
args = [re.sub(r"^http://(?:127\\.0\\.0\\.1|localhost):\\d+", os.environ["DOC_TEST_LLM_URL"], a)
        for a in sys.argv[1:]]
words = [a for a in args if not a.startswith("-")]
if words[:1] == ["serve"]:
    args += ["--port", os.environ["DOC_TEST_PORT"]]
real = {real!r}
os.execv(real[0], [*real, *args])
"""


@dataclass
class Command:
    """One command of a block: its text and the line of the page it starts on."""

    text: str
    line: int


@dataclass
class Block:
    """A fenced block of a page, with its doc-test settings."""

    page: str
    line: int
    lang: str
    commands: list[Command]
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        """`README.md:42`: where the block starts."""
        return f"{self.page}:{self.line}"


def parse_settings(body: str, where: str) -> dict[str, str]:
    """The `key=value` words of a doc-test comment; an unknown key is an error."""
    settings = dict(word.partition("=")[::2] for word in shlex.split(body))
    unknown = set(settings) - KNOWN_KEYS
    if unknown:
        raise ValueError(f"{where}: unknown doc-test setting {sorted(unknown)}")
    if "skip" in settings and not settings["skip"].strip():
        raise ValueError(f"{where}: skip needs a reason")
    return settings


def commands_of(lang: str, lines: list[tuple[int, str]], every: bool) -> list[Command]:
    """The commands of a block's lines (joined over `\\`): those that call us, or `every` one."""
    out: list[Command] = []
    going_on = False
    for number, raw in lines:
        text = raw.rstrip()
        if going_on:
            out[-1].text += " " + text.removesuffix("\\").strip()
        elif lang == "sh" or text.startswith("$ "):
            out.append(Command(text.removeprefix("$ ").removesuffix("\\").strip(), number))
        else:
            continue
        going_on = text.endswith("\\")
    return [c for c in out if every or CALLS_US.search(c.text)]


def parse_page(text: str, page: str) -> list[Block]:
    """The ```sh and ```console blocks of a markdown page that hold a command of ours."""
    blocks: list[Block] = []
    settings: dict[str, str] = {}
    lang: str | None = None
    start = 0
    body: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if lang is not None:
            if line.strip() == "```":
                every = "all" in settings
                if lang in ("sh", "console") and (cmds := commands_of(lang, body, every)):
                    blocks.append(Block(page, start, lang, cmds, settings))
                lang, settings, body = None, {}, []
            else:
                body.append((number, line))
            continue
        if m := DIRECTIVE.match(line.strip()):
            settings = parse_settings(m["body"], f"{page}:{number}")
        elif m := FENCE.match(line):
            lang, start = m["lang"], number
        elif line.strip():
            settings = {}
    return blocks


def all_blocks() -> list[Block]:
    """Every block of every page."""
    return [b for p in PAGES for b in parse_page(p.read_text(), p.relative_to(ROOT).as_posix())]


def make_home(home: Path) -> None:
    """The devset's sessions where the agents keep them, recorded as working in ~/project."""
    project = home / "project"
    project.mkdir(parents=True)
    for source, target in AGENT_HOMES.items():
        shutil.copytree(DEVSET / source, home / target)
    for path in home.rglob("*"):
        if path.is_file() and path.suffix in (".jsonl", ".json"):
            text = path.read_text()
            path.write_text(text.replace(RECORDED_CWD, str(project)))


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def llm_url() -> Iterator[str]:
    """The fake LLM server's root URL (auto mode: it answers every request)."""
    with FakeLLMServer() as server:
        yield server.base_url


@pytest.fixture(scope="module")
def wrapper_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the wrapper `opencode-restore` (see the module's docstring)."""
    script = Path(sys.executable).with_name("opencode-restore")
    real = [str(script)] if script.exists() else [sys.executable, "-m", "opencode_restore"]
    folder = tmp_path_factory.mktemp("bin")
    wrapper = folder / "opencode-restore"
    wrapper.write_text(WRAPPER.format(python=sys.executable, real=real))
    wrapper.chmod(0o755)
    return folder


def block_env(home: Path, bin_dir: Path, llm_url: str) -> dict[str, str]:
    """The environment of a block's commands: its HOME, no machine settings, the fake LLM."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENCODE_RESTORE_", "XDG_", "OPENAI_", "ANTHROPIC_"))
        and k not in ("CODEX_HOME", "CLAUDE_CONFIG_DIR")
        and "proxy" not in k.lower()
    }
    env.update(
        HOME=str(home),
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        DOC_TEST_LLM_URL=llm_url,
        DOC_TEST_PORT=str(free_port()),
        OPENAI_BASE_URL=f"{llm_url}/v1",
        OPENAI_API_KEY="sk-doc-test",
        ANTHROPIC_BASE_URL=llm_url,
        ANTHROPIC_API_KEY="sk-ant-doc-test",
        NO_COLOR="1",
    )
    return env


def _http_answers(port: int, proc: subprocess.Popen[bytes]) -> int:
    """The status of GET /healthz once `serve` answers (401 counts: a token was asked for)."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        assert proc.poll() is None, f"serve exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
                return int(r.status)
        except urllib.error.HTTPError as e:
            return int(e.code)
        except OSError:
            assert time.monotonic() < deadline, "serve did not answer"
            time.sleep(0.1)


def _mcp_answers(proc: subprocess.Popen[bytes]) -> dict[str, object]:
    """The MCP server's answer to `initialize`."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "doc-test", "version": "0"},
        },
    }
    proc.stdin.write(json.dumps(request).encode() + b"\n")
    proc.stdin.flush()
    answer: dict[str, object] = json.loads(proc.stdout.readline())
    return answer


def run_long(cmd: Command, name: str, cwd: Path, env: dict[str, str]) -> str | None:
    """Start `serve` or `mcp`, ask it once, stop it: None when it answered, else why not."""
    proc = subprocess.Popen(
        ["bash", "-c", cmd.text],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: bash and the server stop together
    )
    try:
        if name == "serve":
            status = _http_answers(int(env["DOC_TEST_PORT"]), proc)
            ok = status in (200, 401)
            return None if ok else f"GET /healthz answered {status}"
        answer = _mcp_answers(proc)
        return None if "result" in answer else f"initialize answered {answer}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.communicate(timeout=START_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def run_block(block: Block, home: Path, bin_dir: Path, llm_url: str) -> list[str]:
    """Run a block's commands in a fresh HOME; one line per command that did not do as said."""
    make_home(home)
    env = block_env(home, bin_dir, llm_url)
    where = block.settings.get("cwd", "home")
    cwd = {"home": home, "project": home / "project", "repo": ROOT}[where]
    expected = int(block.settings.get("exit", "0"))
    failures: list[str] = []
    for cmd in block.commands:
        at = f"{block.page}:{cmd.line}: {cmd.text}"
        if m := LONG_RUNNING.search(cmd.text):
            if why := run_long(cmd, m["name"], cwd, env):
                failures.append(f"{at}\n    {why}")
            continue
        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", cmd.text],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        if done.returncode != expected:
            failures.append(
                f"{at}\n    exit {done.returncode} (expected {expected}): "
                + textwrap.shorten(done.stderr or done.stdout, 400)
            )
    for path in filter(None, block.settings.get("files", "").split(",")):
        if not Path(path.replace("~", str(home), 1)).exists():
            failures.append(f"{block.id}: {path} was not made")
    return failures


BLOCKS = all_blocks()


@pytest.mark.slow  # a block runs real processes: several seconds each on a loaded machine
@pytest.mark.timeout(1800)  # a runaway guard (a server that never answers), not a target
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_documented_commands_run(
    block: Block, tmp_path: Path, wrapper_bin: Path, llm_url: str
) -> None:
    if "skip" in block.settings:
        pytest.skip(block.settings["skip"])
    assert run_block(block, tmp_path / "home", wrapper_bin, llm_url) == []


def test_every_page_has_commands_under_test() -> None:
    """A page is not silently left out (a typo in a fence's language would do it)."""
    pages = {b.page for b in BLOCKS}
    assert {"README.md", "docs/formats.md", "docs/api.md", "docs/mcp.md"} <= pages


SAMPLE = """\
Intro.

<!-- doc-test: exit=2 -->
```sh
opencode-restore restore --no-such-option   # a comment
```

```console
$ opencode-restore restore --demo \\
    --quiet
# SESSION SUMMARY
$ ls
```

```text
opencode-restore not-run
```

```sh
pip install opencode-restore
~/.cache/opencode-restore-models/venv/bin/pip install x
cd project && opencode-restore formats
```
"""


def test_blocks_are_read_with_their_settings_and_continued_lines() -> None:
    blocks = parse_page(SAMPLE, "x.md")
    assert [(b.line, b.settings, [c.text for c in b.commands]) for b in blocks] == [
        (4, {"exit": "2"}, ["opencode-restore restore --no-such-option   # a comment"]),
        (8, {}, ["opencode-restore restore --demo --quiet"]),
        (19, {}, ["cd project && opencode-restore formats"]),
    ]


@pytest.mark.parametrize(
    "body", ["opencode-restore nonsuch", "opencode-restore restore --demo --no-such-option"]
)
def test_a_command_that_does_not_exist_fails_its_block(
    body: str, tmp_path: Path, wrapper_bin: Path, llm_url: str
) -> None:
    (block,) = parse_page(f"```sh\n{body}\n```\n", "x.md")
    assert len(run_block(block, tmp_path / "home", wrapper_bin, llm_url)) == 1


def test_an_unknown_setting_or_a_skip_without_reason_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown doc-test setting"):
        parse_page("<!-- doc-test: cwdd=repo -->\n```sh\nopencode-restore formats\n```\n", "x")
    with pytest.raises(ValueError, match="skip needs a reason"):
        parse_page('<!-- doc-test: skip="" -->\n```sh\nopencode-restore formats\n```\n', "x")


LINK = re.compile(r"\]\((?P<path>[^)#\s]*)(?:#(?P<anchor>[^)\s]+))?\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_links_between_pages_resolve(page: Path) -> None:
    broken = []
    for m in LINK.finditer(page.read_text()):
        if m["path"].startswith(("http:", "https:")):
            continue
        target = (page.parent / m["path"]).resolve() if m["path"] else page
        if not target.exists():
            broken.append(m[0])
        elif m["anchor"] and target.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", target.read_text(), re.MULTILINE)
            if m["anchor"] not in {_slug(h) for h in headings}:
                broken.append(m[0])
    assert broken == []
