"""The stages of a restore: turn_parser -> turn_summarizer -> evidence_gatherer -> synthesizer."""
