"""The evidence search's tools: log search, sandboxed file access, the text protocol."""
