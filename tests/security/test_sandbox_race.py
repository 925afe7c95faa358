"""Issue 14.3: a directory of the path swapped for a symlink between the sandbox's check
and its open must never let a read escape the workspace, and no `OSError` may escape."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from opencode_restore.pipeline.evidence.sandbox import Refused, Workspace

SECRET = "SECRET-OUTSIDE-THE-WORKSPACE"
# Reads attempted while the swapper runs; the test stops earlier on its deadline.
READS = 20_000
DEADLINE_SECONDS = 20.0


@pytest.fixture
def swappable(tmp_path: Path) -> tuple[Workspace, Path, Path]:
    """A workspace whose ``d/f.txt`` is harmless, and outside it a ``f.txt`` with a secret."""
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "f.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text(SECRET + "\n")
    return Workspace.choose(None, str(ws)), ws, outside


def _swap_to_symlink(ws: Path, outside: Path) -> None:
    os.rename(ws / "d", ws / "d.real")
    os.symlink(outside, ws / "d")


def _swap_back(ws: Path) -> None:
    os.unlink(ws / "d")
    os.rename(ws / "d.real", ws / "d")


def test_directory_swapped_after_the_check_is_refused(
    swappable: tuple[Workspace, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic: the swap happens right after the path was resolved and checked."""
    chosen, ws, outside = swappable
    real_realpath = os.path.realpath

    def realpath_then_swap(path: str | os.PathLike[str], **kwargs: bool) -> str:
        resolved = real_realpath(path, **kwargs)
        if str(path).endswith("f.txt") and not (ws / "d.real").exists():
            _swap_to_symlink(ws, outside)
        return resolved

    monkeypatch.setattr(os.path, "realpath", realpath_then_swap)
    with pytest.raises(Refused, match="symlink"):
        chosen.read_text("d/f.txt")


def test_reads_racing_a_symlink_swapper_never_escape(
    swappable: tuple[Workspace, Path, Path],
) -> None:
    """Reads run while a thread keeps swapping ``d`` for a symlink to the outside."""
    chosen, ws, outside = swappable
    stop = threading.Event()

    def swapper() -> None:
        while not stop.is_set():
            try:
                _swap_to_symlink(ws, outside)
                _swap_back(ws)
            except OSError:  # pragma: no cover - a reader held nothing; try again
                continue

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    leaks = refusals = 0
    deadline = time.monotonic() + DEADLINE_SECONDS
    try:
        for _ in range(READS):
            if time.monotonic() > deadline:
                break
            try:
                _, text = chosen.read_text("d/f.txt")
            except Refused:
                refusals += 1
                continue
            if SECRET in text:
                leaks += 1
                break
    finally:
        stop.set()
        thread.join(DEADLINE_SECONDS)
    assert not thread.is_alive()
    assert leaks == 0
    assert refusals > 0  # the swapper really raced the reads


def test_hard_link_to_a_file_outside_is_refused(swappable: tuple[Workspace, Path, Path]) -> None:
    chosen, ws, outside = swappable
    os.link(outside / "f.txt", ws / "linked.txt")
    with pytest.raises(Refused, match="hard links"):
        chosen.read_text("linked.txt")


def test_os_errors_while_resolving_become_refusals(
    swappable: tuple[Workspace, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen, _, _ = swappable

    def failing_realpath(path: str | os.PathLike[str], **kwargs: bool) -> str:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os.path, "realpath", failing_realpath)
    with pytest.raises(Refused, match="Input/output error"):
        chosen.read_text("d/f.txt")
    assert not chosen.is_file(Path("/nonexistent\x00"))
