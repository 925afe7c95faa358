"""opencode sessions: the SQLite database, the JSON storage tree and ``opencode export`` files."""
