"""Inspect eval logs (``.eval`` zip archives and ``.json`` logs), one session per sample."""
