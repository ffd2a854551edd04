"""Typed, validated configurations: what the CLI and the Python API build
before anything runs."""

from corebench.config.settings import LoadConfig

__all__ = ["LoadConfig"]
