"""Property tests: damaged Claude Code logs never raise, and every damaged line is reported."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opencode_restore.diagnostics import WarningSink
from opencode_restore.sources.claude_code.reader import READER, split_transcripts

from .tree_helpers import deadline

CC = Path(__file__).resolve().parents[3] / "fixtures" / "claude-code"
GOOD = [
    line
    for f in (
        CC / "recorded" / "tui-compact" / "e57fea98-e10e-4cce-a470-5de2e7413154.jsonl",
        CC / "claude-code-log" / "dag_compact_after_rewind_preserved.jsonl",
        CC / "scout" / "tool_call_conversation.jsonl",
    )
    for line in f.read_bytes().splitlines()
]


def _is_bad(line: bytes) -> bool:
    if not line.strip():
        return False
    try:
        return not isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return True


garbage = st.binary(min_size=1, max_size=300).map(lambda b: b.replace(b"\n", b" ")).filter(_is_bad)
bad_utf8 = st.sampled_from(GOOD).flatmap(
    lambda line: st.integers(0, len(line) - 1).map(lambda i: line[:i] + b"\xff\xfe" + line[i:])
)
non_object = st.sampled_from([b"42", b'"massive error"', b"[1]", b"null", b"true", b"[]", b"-1.5"])
huge = st.integers(200_000, 2_000_000).map(
    lambda n: orjson.dumps(
        {"type": "user", "uuid": f"huge-{n}", "sessionId": "S", "message": {"content": "y" * n}}
    )
)
line = st.one_of(st.sampled_from(GOOD), garbage, bad_utf8, non_object, st.sampled_from(GOOD))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(line, min_size=1, max_size=25),
    big=st.lists(huge, max_size=1),
    cut=st.none() | st.integers(1, 400),
)
def test_damaged_logs_never_raise_and_bad_lines_are_reported(
    lines: list[bytes], big: list[bytes], cut: int | None
) -> None:
    lines = lines + big
    body = b"\n".join(lines) + b"\n"
    truncated_line = None
    if cut is not None and len(lines[-1]) > cut:
        body = body[: len(body) - 1 - cut]  # the writer died mid-line: no newline at the end
        if _is_bad(body.rsplit(b"\n", 1)[-1]):
            truncated_line = len(lines)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "damaged.jsonl"
        path.write_bytes(body)
        sink = WarningSink()
        session = READER.read([path], sink)
        streamed = list(READER.iter_messages([path], WarningSink()))
        split = split_transcripts([path], WarningSink())
    assert [m.id for m in streamed] == [m.id for m in session.messages()]
    assert sum(len(t.messages()) for t in split) <= len(session.messages())
    reported = {w.line for w in sink.warnings}
    for n, raw in enumerate(body.split(b"\n"), 1):
        if _is_bad(raw):
            assert n in reported, (n, raw[:80])
    if truncated_line is not None:
        assert any(w.line == truncated_line and "truncated" in w.message for w in sink.warnings)
    assert all(w.path == str(path) for w in sink.warnings)


@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(
        st.fixed_dictionaries(
            {
                "type": st.sampled_from(
                    ["user", "assistant", "system", "progress", "summary", None]
                ),
                "uuid": st.one_of(
                    st.none(), st.sampled_from(["a", "b", "c", "d"]), st.integers(-9, 9)
                ),
                "parentUuid": st.one_of(
                    st.none(), st.sampled_from(["a", "b", "c", "x"]), st.just([])
                ),
                "logicalParentUuid": st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
                "subtype": st.sampled_from(["compact_boundary", "local_command", None]),
                "isSidechain": st.one_of(st.booleans(), st.just("yes")),
                "message": st.one_of(
                    st.none(),
                    st.just("error"),
                    st.fixed_dictionaries(
                        {
                            "id": st.one_of(st.none(), st.just("m1"), st.integers(-9, 9)),
                            "content": st.one_of(
                                st.text(max_size=5),
                                st.lists(
                                    st.one_of(
                                        st.fixed_dictionaries(
                                            {
                                                "type": st.sampled_from(
                                                    ["text", "tool_use", "tool_result", "x"]
                                                ),
                                                "text": st.one_of(
                                                    st.text(max_size=3), st.integers(-9, 9)
                                                ),
                                            }
                                        ),
                                        st.integers(-9, 9),
                                    ),
                                    max_size=3,
                                ),
                            ),
                            "usage": st.one_of(st.none(), st.just({"input_tokens": True})),
                        }
                    ),
                ),
                "compactMetadata": st.one_of(
                    st.none(), st.just({"preservedMessages": {"uuids": ["a", "b", 3]}})
                ),
            }
        ),
        max_size=12,
    )
)
def test_odd_field_types_and_links_never_raise(lines: list[dict[str, object]]) -> None:
    body = b"".join(
        orjson.dumps({k: v for k, v in x.items() if v is not None}) + b"\n" for x in lines
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "odd.jsonl"
        path.write_bytes(body)
        with deadline(5):  # parent loops once hung here; fail instead of hanging
            session = READER.read([path], WarningSink())
            streamed = list(READER.iter_messages([path], WarningSink()))
    assert [m.id for m in streamed] == [m.id for m in session.messages()]
    assert len({m.id for m in streamed}) == len(streamed)
