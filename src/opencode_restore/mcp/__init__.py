"""``opencode-restore mcp``: the session history as Model Context Protocol tools."""
