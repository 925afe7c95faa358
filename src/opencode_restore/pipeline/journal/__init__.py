"""The journal: the saved state of one restore (data, store on disk, lock, batch store)."""
