"""Agent hooks: the receiver agents run on their events, and the SessionStart restoration.

Kept empty: ``opencode-restore hook`` must start fast, so importing the package loads nothing.
"""
