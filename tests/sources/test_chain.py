"""Files given as one chain: different sessions are refused, a continued session is not
(issue 20 item 6)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import orjson
import pytest

from opencode_restore.errors import SourceError
from opencode_restore.sources import get_reader
from opencode_restore.sources.chain import ChainLink, check_chain, continues

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CC = FIXTURES / "claude-code"
TUI = next((CC / "recorded" / "tui-compact").glob("*.jsonl"))
ROLLOUT = next((FIXTURES / "codex" / "recorded" / "tui-compact").glob("rollout-*.jsonl"))


def _check(agent: str, *paths: Path) -> None:
    check_chain(list(paths), get_reader(agent))


def _lines(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(obj) + b"\n" for obj in lines))
    return path


def test_two_claude_sessions_are_refused_naming_both() -> None:
    short, heavy = CC / "spotter" / "short.jsonl", CC / "spotter" / "tool_heavy.jsonl"
    with pytest.raises(SourceError) as err:
        _check("claude-code", short, heavy)
    message = str(err.value)
    assert "\n" not in message
    for part in (str(short), str(heavy), "55604662-cf2a-4331-851a-ec234028f8ca"):
        assert part in message
    assert "d6e0bada-1959-4eec-a9d2-0bfade768d8f" in message
    assert "--merge" in message


@pytest.mark.parametrize(
    "pair",
    [
        ("slug_session_1.jsonl", "slug_session_2.jsonl"),  # a plan carried into a new context
        ("slug_multi_clear_file1.jsonl", "slug_multi_clear_file2.jsonl"),
        ("agent_session.jsonl", "agent-atest01.jsonl"),  # a sub-agent file beside its parent
    ],
)
def test_claude_chains_the_tests_read_as_one_pass(pair: tuple[str, str]) -> None:
    _check("claude-code", *(CC / "scout" / name for name in pair))


def test_a_resumed_claude_session_in_a_new_file_passes(tmp_path: Path) -> None:
    """Claude Code's resume: a new file, a new sessionId, a summary line naming the earlier
    leaf and a first entry hanging off it."""
    earlier = _lines(TUI)
    leaf = next(obj["uuid"] for obj in reversed(earlier) if "uuid" in obj)
    new_sid = "0b7d2c1e-9f3a-4c55-8e21-5a6b7c8d9e0f"
    later = _write(
        tmp_path / f"{new_sid}.jsonl",
        [
            {"type": "summary", "summary": "Greet CLI --shout flag", "leafUuid": leaf},
            {
                "parentUuid": leaf,
                "isSidechain": False,
                "type": "user",
                "message": {"role": "user", "content": "One more: add a --name default."},
                "uuid": "5e0c7a9b-1d2f-4e3a-8b4c-6d7e8f9a0b1c",
                "timestamp": "2026-11-21T12:00:00.000Z",
                "sessionId": new_sid,
                "cwd": "/home/dev/src/greet-cli",
            },
        ],
    )
    _check("claude-code", TUI, later)
    lines = _lines(later)[1:]  # the same file with no link back is another session
    lines[0]["parentUuid"] = None
    unlinked = _write(tmp_path / "unlinked.jsonl", lines)
    with pytest.raises(SourceError, match=new_sid):
        _check("claude-code", TUI, unlinked)


def test_a_resumed_codex_rollout_passes_and_another_thread_is_refused(tmp_path: Path) -> None:
    earlier = _lines(ROLLOUT)
    meta = next(obj for obj in earlier if obj["type"] == "session_meta")
    payload = dict(cast(dict[str, object], meta["payload"]))
    payload["id"] = "01a1fdff-0000-7000-8000-000000000001"
    resumed = _write(tmp_path / "rollout-resumed.jsonl", [*earlier, {**meta, "payload": payload}])
    _check("codex", ROLLOUT, resumed)
    forked = _write(
        tmp_path / "rollout-forked.jsonl",
        [{**meta, "payload": {**payload, "forked_from_id": meta["payload"]["id"]}}],  # type: ignore[index]
    )
    _check("codex", ROLLOUT, forked)
    other = FIXTURES / "codex" / "recorded" / "exec-resume"
    with pytest.raises(SourceError, match="01a1fde9-539c-77f2-9e0a-d405fab49546"):
        _check("codex", ROLLOUT, next(other.glob("rollout-*.jsonl")))


def test_a_forked_pi_session_names_its_parent_file(tmp_path: Path) -> None:
    tree = FIXTURES / "pi" / "own" / "tree-v3.jsonl"
    lines = _lines(tree)
    fork = _write(
        tmp_path / "fork.jsonl", [{**lines[0], "id": "sess-fork", "parentSession": str(tree)}]
    )
    _check("pi", tree, fork)
    with pytest.raises(SourceError, match="sess-fork"):
        _check("pi", tree, _write(tmp_path / "alone.jsonl", [{**lines[0], "id": "sess-fork"}]))


def test_a_gemini_chat_continued_in_jsonl_keeps_its_id() -> None:
    own = FIXTURES / "gemini" / "own"
    _check(
        "gemini",
        own / "session-2026-02-04T07-00-gemresum.json",
        own / "session-2026-02-04T07-00-gemresum.jsonl",
    )
    with pytest.raises(SourceError, match="sess-uuid-1"):
        _check(
            "gemini",
            own / "session-2026-02-04T07-00-gemresum.json",
            FIXTURES / "gemini" / "agentsview" / "standard_session.json",
        )


def test_a_file_naming_no_session_is_never_refused() -> None:
    assert continues(ChainLink(None), ChainLink("b"))
    assert continues(ChainLink("a"), ChainLink(None))
    assert not continues(ChainLink("a", names=frozenset({"x"})), ChainLink("b"))
    assert continues(
        ChainLink("a", names=frozenset({"x"})), ChainLink("b", points_to=frozenset({"x"}))
    )
