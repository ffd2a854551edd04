"""Targets: the servers under test, started, measured and stopped."""
