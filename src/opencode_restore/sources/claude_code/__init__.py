"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) and the
``claude -p --output-format stream-json`` output."""
