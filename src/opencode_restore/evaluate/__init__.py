"""Scoring restorations against ground-truth facts (`opencode-restore eval`)."""
