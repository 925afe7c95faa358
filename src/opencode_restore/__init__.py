"""opencode-restore: restore coding-agent sessions into cited session summaries."""

__version__ = "0.1.0"
