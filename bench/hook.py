"""How long an agent waits for ``opencode-restore hook``, per event: real payloads, fresh processes.

Agents run the hook on their events and wait for it, so its wall time is their cost. Each
event below is a fresh ``opencode-restore hook`` (the console script's route: no click,
no readers), timed alone: wall, and CPU of the hook with the restore child it waited for
(``wait4``). Targets (issue 26): an event with nothing to restore <= 100 ms wall; a
compact/clear restored with the offline provider <= 1.5 s wall.

* Claude Code: SessionStart startup, resume (the conversation is reloaded: nothing),
  UserPromptSubmit, Stop; SessionStart compact and clear (offline restore, answered);
  SessionStart startup with ``--memory`` (issue 29: the project's digest, read from
  ``MEMORY_SESSIONS`` saved restorations; target: an event's that restores nothing).
* Gemini CLI: SessionStart startup, BeforeAgent with nothing due (the chat file as it was,
  then grown by a turn without a compression: the bytes it gained are read);
  PreCompress(manual) then the BeforeAgent that delivers (the restore runs in between, in
  the background); an automatic compression appended to the chat file (no hook ran) and the
  BeforeAgent that finds it, restores and delivers within its budget.

Then the start-ups a user waits for (issue 27): ``--version``, ``--help`` and one TAB of
bash completion, which import no command module (target <= 150 ms CPU, user+sys of the
child by ``wait4``), and a TAB that completes an option of ``restore`` (its module is
imported: shown without a target).

And the time added to each Gemini model request: Gemini CLI 0.61 runs BeforeModel,
AfterModel, BeforeToolSelection and PreCompress(auto) around every request and waits for
them; the line counts the groups ``install gemini`` writes that match those (a
PreCompress group with matcher "manual" does not), times the nothing-to-do wall. BeforeAgent
runs once per prompt: its share of a 6-request turn is printed beside it.

With ``--gemini BIN`` (a Gemini CLI 0.61, e.g. ``/tmp/agents-gemini/node_modules/.bin/gemini``)
it also times the real thing: ``gemini -p`` turns of 1 and of 6 model requests against the
fake Gemini API (``tests/agents/fake_gemini.py``: tool calls, then the answer), without
hooks, with ``install gemini`` and with the hooks earlier versions installed (AfterAgent,
PreCompress on every request), interleaved. The 5 extra requests' extra time over no hooks
is the time added per model request; the 1-request turn's is what a process and a prompt
pay (SessionStart, BeforeAgent, SessionEnd). Run it offline (``unshare --net``, loopback
up) so Gemini makes no other traffic.

    python bench/hook.py [--runs 7] [--gemini BIN]
    python bench/hook.py --smoke        # 2 runs each (CI sanity; the figures mean nothing)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import FIXTURES, ROOT, precompile

CLAUDE_LOG = (
    FIXTURES / "claude-code/recorded/tui-compact/e57fea98-e10e-4cce-a470-5de2e7413154.jsonl"
)
CLAUDE_ID = CLAUDE_LOG.stem
GEMINI_LOG = FIXTURES / "gemini/own/compression.jsonl"
CLI = [sys.executable, "-m", "opencode_restore"]
HOOK = [*CLI, "hook"]
#: Gemini CLI 0.61's events around every model request (AfterModel: every streamed chunk).
PER_REQUEST = ("BeforeModel", "AfterModel", "BeforeToolSelection", "PreCompress")
TURN_REQUESTS = 6
NOTHING_MS = 100.0
RESTORE_MS = 1500.0
#: Restored sessions of the project in the store when startup answers with its memory.
MEMORY_SESSIONS = 20
#: CPU (user+sys) of a start-up that imports no command module (issue 27: --version).
STARTUP_CPU_MS = 150.0


def _tab(words: str) -> dict[str, str]:
    """The variables of the completion request bash sends for a TAB after ``words``."""
    return {
        "_OPENCODE_RESTORE_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - 1),
    }


#: Start-ups a user waits for: name, arguments, environment, CPU target (None: shown only).
#: A completion request is what one TAB in bash sends (``bash_complete``).
STARTUPS: list[tuple[str, list[str], dict[str, str], float | None]] = [
    ("--version", ["--version"], {}, STARTUP_CPU_MS),
    ("--help", ["--help"], {}, STARTUP_CPU_MS),
    ("TAB: opencode-restore re", [], _tab("opencode-restore re"), STARTUP_CPU_MS),
    ("TAB: opencode-restore restore --la", [], _tab("opencode-restore restore --la"), None),
]
#: A turn the chat file gains: the prompt, the reply, their ``lastUpdated`` lines.
TURN_LINES = [
    {"id": "u-{n}", "timestamp": "2026-02-04T07:20:00Z", "type": "user", "content": "go on {n}"},
    {"$set": {"lastUpdated": "2026-02-04T07:20:00Z"}},
    {"id": "g-{n}", "timestamp": "2026-02-04T07:20:01Z", "type": "gemini", "content": "Done."},
    {"$set": {"lastUpdated": "2026-02-04T07:20:01Z"}},
]


def _child(
    what: str, cmd: list[str], env: dict[str, str], stdin: bytes = b""
) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (with the children it waited for) and stdout of one
    process fed ``stdin``; a non-zero exit ends the bench with ``what`` and its stderr."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    out = proc.stdout.read()
    err = proc.stderr.read() if proc.stderr is not None else b""
    # wait4 gives this child's own rusage (and that of the restore child it waited for).
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{what} exited with {proc.returncode}: {err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, out.decode()


def _hook(payload: dict[str, Any], env: dict[str, str], *args: str) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (with the children it waited for) and stdout of one hook."""
    what = f"hook on {payload['hook_event_name']}"
    return _child(what, [*HOOK, *args], env, json.dumps(payload).encode())


class Hooks:
    """A throw-away HOME and data dir holding one Claude and one Gemini session."""

    def __init__(self, root: Path) -> None:
        self.home = root / "home"
        claude = self.home / ".claude/projects/-work-greet"
        claude.mkdir(parents=True)
        self.claude_log = claude / CLAUDE_LOG.name
        shutil.copy(CLAUDE_LOG, self.claude_log)
        gemini = self.home / ".gemini/tmp/greet/chats"
        gemini.mkdir(parents=True)
        self.gemini_log = gemini / "session-2026-02-04T07-00-compress.jsonl"
        shutil.copy(GEMINI_LOG, self.gemini_log)
        self.data = root / "data"
        self.env = dict(
            os.environ,
            HOME=str(self.home),
            OPENCODE_RESTORE_DATA_DIR=str(self.data),
            XDG_CONFIG_HOME=str(self.home / ".config"),
        )
        self.env.pop("OPENCODE_RESTORE_MODEL", None)

    def claude(self, event: str, session: str = CLAUDE_ID, **fields: Any) -> dict[str, Any]:
        return {
            "session_id": session,
            "transcript_path": str(self.claude_log.with_name(f"{session}.jsonl")),
            "cwd": "/work/greet",
            "hook_event_name": event,
            **fields,
        }

    def remember(self, count: int) -> None:
        """``count`` restored sessions of the project in the store, as ``nightly`` and
        ``restore`` save them (the Claude log's offline restoration each, made with
        redaction on, the default)."""
        from opencode_restore.store import open_store
        from opencode_restore.store.db import record_transcript

        restored = subprocess.run(
            [*CLI, "restore", str(self.claude_log), "--format", "json", "-q"],
            env=self.env,
            capture_output=True,
            check=True,
        )
        summary = json.loads(restored.stdout)
        store = open_store(self.data)
        try:
            for n in range(count):
                sid = f"{n:08x}-0000-4000-8000-00000000mem0"
                stamp = f"2026-01-{n % 28 + 1:02d}T10:00:00.000000Z"
                record_transcript(
                    store.conn,
                    sid,
                    "claude-code",
                    None,
                    cwd="/work/greet",
                    created_at=stamp,
                    updated_at=stamp,
                )
                store.add_restoration(
                    sid,
                    provider="offline",
                    summary_markdown="",
                    summary=summary,
                    usage={},
                    errors={},
                    redacted=True,
                )
        finally:
            store.close()

    def gemini_grows(self, n: int, *, compressed: bool = False) -> None:
        """Append a turn to the Gemini chat file; ``compressed``: then a compression
        checkpoint (a new summary and Gemini 0.61's acknowledgement), as Gemini writes it."""
        lines = [json.loads(json.dumps(x).replace("{n}", str(n))) for x in TURN_LINES]
        if compressed:
            summary = f"<state_snapshot>Turn {n}: greet.py has --shout.</state_snapshot>"
            ack = "Got it. Thanks for the additional context!"
            messages = [
                {
                    "id": f"auto-{n}",
                    "timestamp": "",
                    "type": "user",
                    "content": [{"text": summary}],
                },
                {
                    "id": f"auto-ack-{n}",
                    "timestamp": "",
                    "type": "gemini",
                    "content": [{"text": ack}],
                },
            ]
            lines += [{"$set": {"sessionId": "gem-bench"}}, {"$set": {"messages": messages}}]
        with self.gemini_log.open("a", encoding="utf-8") as fh:
            fh.writelines(json.dumps(x, separators=(",", ":")) + "\n" for x in lines)

    def gemini(self, event: str, **fields: Any) -> dict[str, Any]:
        return {
            "session_id": "gem-bench",
            "transcript_path": str(self.gemini_log),
            "cwd": "/work/greet",
            "hook_event_name": event,
            "timestamp": "2026-02-04T07:10:00Z",
            **fields,
        }


def _installed_per_request(home: Path) -> int:
    """Groups ``install gemini`` writes that Gemini 0.61 runs around every model request."""
    from opencode_restore.integrations.install import install

    settings = home / "gemini-settings.json"
    install("gemini", settings, home / "installs")
    hooks = json.loads(settings.read_text())["hooks"]
    return sum(
        1
        for event in PER_REQUEST
        for group in hooks.get(event, [])
        if group.get("matcher") in (None, "", "*", "auto")
    )


def real_gemini(binary: str, runs: int) -> None:
    """Print the wall of ``gemini -p`` turns of 1 and 6 model requests per set of hooks.

    A ``-p`` process pays its SessionStart and SessionEnd hooks and a prompt its
    BeforeAgent, whatever the turn's length; the time a hook set adds per model request
    is what it adds to the 6-request turn beyond what it adds to the 1-request one, / 5.
    """
    sys.path.insert(0, str(ROOT))
    from tests.agents.fake_gemini import MODEL, FakeGemini

    from opencode_restore.integrations.install import hook_command, install

    base = {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True},
    }
    group = [{"hooks": [{"type": "command", "command": hook_command("gemini")}]}]
    old = dict.fromkeys(("SessionStart", "AfterAgent", "PreCompress", "SessionEnd"), group)
    sets = ("no hooks", "install gemini", "earlier install")
    walls: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeGemini() as fake:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        settings = home / ".gemini/settings.json"
        settings.parent.mkdir(parents=True)
        project.mkdir()
        (project / "greet.py").write_text('print("Hello, world!")\n')
        env = dict(
            os.environ,
            HOME=str(home),
            OPENCODE_RESTORE_DATA_DIR=str(Path(tmp) / "data"),
            GOOGLE_GEMINI_BASE_URL=fake.url,
            GEMINI_API_KEY="fake",
            GEMINI_CLI_NO_RELAUNCH="1",
        )
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        for _ in range(runs):
            for name in sets:
                for requests in (1, TURN_REQUESTS):
                    fake.tool_calls = requests - 1
                    hooks = {**base, "hooks": old} if name == "earlier install" else base
                    settings.write_text(json.dumps(hooks))
                    if name == "install gemini":
                        install("gemini", settings, Path(tmp) / "installs")
                    before = len(fake.requests)
                    start = time.perf_counter()
                    subprocess.run(
                        [binary, "--model", MODEL, "--yolo", "-p", "Add a --shout flag"],
                        cwd=project,
                        env=env,
                        capture_output=True,
                        timeout=300,
                        check=True,
                    )
                    walls.setdefault((name, requests), []).append(time.perf_counter() - start)
                    made = sum(1 for path, _ in fake.requests[before:] if "streamGenerate" in path)
                    if made != requests:
                        sys.exit(f"the turn made {made} model requests, not {requests}")
    med = {key: statistics.median(seconds) for key, seconds in walls.items()}
    for name in sets:
        one, six = med[(name, 1)], med[(name, TURN_REQUESTS)]
        per_request = (six - one) - (med[("no hooks", TURN_REQUESTS)] - med[("no hooks", 1)])
        print(
            f"gemini -p {name:<16} 1-request turn {one:5.2f} s, {TURN_REQUESTS}-request"
            f" {six:5.2f} s: +{1000 * per_request / (TURN_REQUESTS - 1):6.1f} ms per model"
            f" request, +{1000 * (one - med[('no hooks', 1)]):5.0f} ms per process"
            f" (median of {runs})"
        )


def time_startups(env: dict[str, str], runs: int) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU seconds of each of `STARTUPS`, ``runs`` fresh processes each, interleaved."""
    times: dict[str, tuple[list[float], list[float]]] = {}
    for _ in range(runs):
        for name, args, extra, _target in STARTUPS:
            wall, cpu, out = _child(name, [*CLI, *args], {**env, **extra})
            assert out.strip(), f"{name} printed nothing"
            walls, cpus = times.setdefault(name, ([], []))
            walls.append(wall)
            cpus.append(cpu)
    return times


def print_startups(times: dict[str, tuple[list[float], list[float]]]) -> None:
    """The medians of `time_startups` against their CPU targets. The first three import no
    command module; completing an option of ``restore`` imports that command's module
    (its options are defined there), so it is shown without a target."""
    print(f"{'start-up (one process)':<40} {'wall ms':>8} {'cpu ms':>8} {'cpu target':>10}")
    for name, _args, _extra, target in STARTUPS:
        walls, cpus = times[name]
        wall, cpu = 1000 * statistics.median(walls), 1000 * statistics.median(cpus)
        shown = "-" if target is None else f"{target:.0f}"
        mark = "  over" if target is not None and cpu > target else ""
        print(f"{name:<40} {wall:8.1f} {cpu:8.1f} {shown:>10}{mark}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--smoke", action="store_true", help="2 runs each")
    parser.add_argument("--gemini", metavar="BIN", help="also time this real Gemini CLI")
    args = parser.parse_args(argv)
    runs = 2 if args.smoke else args.runs
    precompile()
    rows: dict[str, tuple[list[float], list[float], float]] = {}

    def timed(name: str, target: float, call: Callable[[], tuple[float, float, str]]) -> str:
        wall, cpu, out = call()
        walls, cpus, _ = rows.setdefault(name, ([], [], target))
        walls.append(wall)
        cpus.append(cpu)
        return out

    with tempfile.TemporaryDirectory() as tmp:
        h = Hooks(Path(tmp))
        env = h.env
        gem = ("--agent", "gemini")
        _hook(h.claude("SessionStart", source="startup"), env)  # the store knows the session
        h.remember(MEMORY_SESSIONS)
        for run in range(runs):
            timed(
                "claude SessionStart startup",
                NOTHING_MS,
                lambda: _hook(h.claude("SessionStart", source="startup"), env),
            )
            out = timed(
                "claude SessionStart startup --memory",
                NOTHING_MS,
                lambda: _hook(h.claude("SessionStart", source="startup"), env, "--memory"),
            )
            assert "# Memory: earlier sessions" in out, "startup remembered nothing: hook.log"
            timed(
                "claude SessionStart resume (reloaded)",
                NOTHING_MS,
                lambda: _hook(h.claude("SessionStart", source="resume"), env),
            )
            timed(
                "claude UserPromptSubmit",
                NOTHING_MS,
                lambda: _hook(h.claude("UserPromptSubmit", prompt="go on"), env),
            )
            timed("claude Stop", NOTHING_MS, lambda: _hook(h.claude("Stop"), env))
            out = timed(
                "claude SessionStart compact (offline)",
                RESTORE_MS,
                lambda: _hook(h.claude("SessionStart", source="compact"), env),
            )
            assert "Restored context" in out, "compact restored nothing: see hook.log"
            out = timed(
                "claude SessionStart clear (offline)",
                RESTORE_MS,
                lambda: _hook(
                    h.claude(
                        "SessionStart", "0b7c2d1e-0000-4000-8000-00000000bench", source="clear"
                    ),
                    env,
                ),
            )
            assert "Restored context" in out, "clear restored nothing: see hook.log"
            timed(
                "gemini SessionStart startup",
                NOTHING_MS,
                lambda: _hook(h.gemini("SessionStart", source="startup"), env, *gem),
            )
            timed(
                "gemini BeforeAgent (nothing due)",
                NOTHING_MS,
                lambda: _hook(h.gemini("BeforeAgent", prompt="hi"), env, *gem),
            )
            timed(
                "gemini PreCompress manual (notes)",
                NOTHING_MS,
                lambda: _hook(h.gemini("PreCompress", trigger="manual"), env, *gem),
            )
            out = timed(
                "gemini BeforeAgent (delivers)",
                RESTORE_MS,
                lambda: _hook(h.gemini("BeforeAgent", prompt="go on"), env, *gem),
            )
            assert "Restored context" in out, "BeforeAgent delivered nothing: see hook.log"
            h.gemini_grows(run)
            timed(
                "gemini BeforeAgent (grew, no compression)",
                NOTHING_MS,
                lambda: _hook(h.gemini("BeforeAgent", prompt="go on"), env, *gem),
            )
            h.gemini_grows(run, compressed=True)
            out = timed(
                "gemini BeforeAgent (auto compression)",
                RESTORE_MS,
                lambda: _hook(h.gemini("BeforeAgent", prompt="go on"), env, *gem),
            )
            assert "Restored context" in out, "the compression was not delivered: see hook.log"
        per_request = _installed_per_request(Path(tmp))
        startups = time_startups(env, runs)
        log = h.data / "hook.log"
        problems = log.read_text().strip() if log.exists() else ""
    print(f"{'event (one hook process)':<40} {'wall ms':>8} {'cpu ms':>8} {'target':>8}")
    for name, (walls, cpus, target) in rows.items():
        wall, cpu = 1000 * statistics.median(walls), 1000 * statistics.median(cpus)
        mark = "" if wall <= target else "  over"
        print(f"{name:<40} {wall:8.1f} {cpu:8.1f} {target:8.0f}{mark}")
    nothing = max(
        statistics.median(rows[name][0]) * 1000
        for name in (
            "gemini BeforeAgent (nothing due)",
            "gemini BeforeAgent (grew, no compression)",
        )
    )
    print(
        f"gemini: added per model request: {per_request} hook(s) of {'/'.join(PER_REQUEST)}"
        f" installed -> +{per_request * nothing:.1f} ms (target 20);"
        f" BeforeAgent once per prompt: {nothing:.1f} ms,"
        f" {nothing / TURN_REQUESTS:.1f} ms per request of a {TURN_REQUESTS}-request turn"
    )
    print(f"median of {runs} runs each; hook.log: {problems if problems else 'empty'}")
    print_startups(startups)
    if args.gemini:
        real_gemini(args.gemini, runs)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
