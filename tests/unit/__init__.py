"""Unit tests: synthetic data only (no ../shared/data), fast."""
