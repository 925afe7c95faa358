"""Where packaged data (default config, prompts) lives: inside the wheel or in the checkout."""

from __future__ import annotations

from pathlib import Path

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
