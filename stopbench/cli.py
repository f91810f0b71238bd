"""`stopbench` (the command): the harness's CLI, under the one import name the wheel claims."""

from __future__ import annotations

from harness.cli import main

__all__ = ["main"]
