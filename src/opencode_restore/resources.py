"""Where packaged data (default config, prompts, the demo sample) lives: wheel or checkout."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent.parent


def data_path(name: str) -> Path:
    """The packaged ``config.toml`` or ``prompts`` directory.

    A wheel carries them under ``opencode_restore/_data``; an editable install reads
    them from the checkout's top level.
    """
    packaged = _PACKAGE / "_data" / name
    if packaged.exists():
        return packaged
    return _CHECKOUT / name


#: The sample session ``--demo`` reads: a real opencode export (three turns with a
#: compaction, recorded for the fixtures), shipped as package data so that an installed
#: wheel can run it without a checkout.
DEMO_SAMPLE = "opencode-export.json"


def demo_sample() -> Traversable:
    """The packaged demo session (``importlib.resources``, so it is found in any install)."""
    # Imported here: it brings tempfile and shutil, which only --demo needs.
    from importlib import resources

    return resources.files("opencode_restore") / "samples" / DEMO_SAMPLE
