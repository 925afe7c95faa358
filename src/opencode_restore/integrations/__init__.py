"""Agent integrations: hook entries in settings files, the opencode plugin, install."""
