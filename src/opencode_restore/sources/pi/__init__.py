"""pi coding-agent session files (``~/.pi/agent/sessions/<cwd>/*.jsonl``), a tree of entries."""
