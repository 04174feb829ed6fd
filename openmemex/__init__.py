"""open-memex: a git-native, local-first memory layer for AI coding agents."""

from __future__ import annotations

__version__ = "0.1.0"
