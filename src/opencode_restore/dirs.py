"""The user's directories: config file and data (store, restore timelines, logs).

The places are the platform's (``platformdirs``: ``$XDG_CONFIG_HOME/opencode-restore`` and
``$XDG_DATA_HOME/opencode-restore`` on Linux, ``~/Library/Application Support`` on macOS,
``%LOCALAPPDATA%`` on Windows). Earlier versions always used ``~/.config/opencode-restore``
and ``~/.local/share/opencode-restore``: when the platform's place does not exist and the
old one does, the old one is used, so nobody's config or sessions go missing.

The hook imports this on every agent event: only ``os`` at import time.
"""

from __future__ import annotations

import os

APP_NAME = "opencode-restore"
CONFIG_NAME = "config.toml"
#: Where versions before platformdirs kept them, on every platform.
LEGACY_CONFIG_DIR = "~/.config/opencode-restore"
LEGACY_DATA_DIR = "~/.local/share/opencode-restore"
#: Directories made for our data hold private conversations: their owner's only (also
#: the XDG rule for the directories an application creates).
PRIVATE_DIR_MODE = 0o700


def _platform_or_legacy(platform: str, legacy: str) -> str:
    """``platform``, unless only ``legacy`` exists (an install from before platformdirs)."""
    legacy = os.path.expanduser(legacy)
    if platform != legacy and not os.path.exists(platform) and os.path.exists(legacy):
        return legacy
    return platform


def user_config_path() -> str:
    """The user's config file (it may not exist)."""
    import platformdirs

    directory = _platform_or_legacy(
        platformdirs.user_config_dir(APP_NAME, appauthor=False), LEGACY_CONFIG_DIR
    )
    return os.path.join(directory, CONFIG_NAME)


def default_data_dir() -> str:
    """The data directory when neither the environment nor the user file names one."""
    import platformdirs

    return _platform_or_legacy(
        platformdirs.user_data_dir(APP_NAME, appauthor=False), LEGACY_DATA_DIR
    )


def make_private_dirs(path: str | os.PathLike[str]) -> None:
    """``mkdir -p path`` where every directory it creates is `PRIVATE_DIR_MODE`.

    Directories that already exist keep their mode (``os.makedirs`` would give the
    missing parents the default mode, so they are made one at a time).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        return
    missing = [path]
    parent = os.path.dirname(path)
    while parent and parent != missing[-1] and not os.path.exists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(directory):  # a file in the way (else: made meanwhile)
                raise
