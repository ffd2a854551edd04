"""Typed, validated configurations: what the CLI and the Python API build
before anything runs."""

from corebench.config.load import LoadConfig

__all__ = ["LoadConfig"]
