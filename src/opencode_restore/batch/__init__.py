"""Batch and nightly restores: many sessions through one provider, resumable, with a manifest."""
