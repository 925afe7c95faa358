"""Gemini CLI chat recordings (``~/.gemini/tmp/<project>/chats/session-*.json[l]``)."""
