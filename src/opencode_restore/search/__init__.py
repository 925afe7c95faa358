"""Cross-session search: a SQLite FTS5 index of every registered session (``index``) and
the queries every front end runs on it (``query``).

The index is its own file, ``search.sqlite3``, next to the store's: its writes never
lock the store, and a rebuild replaces it whole.
"""
