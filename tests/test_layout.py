"""Imports run one way: the CLI on top; the trial machinery over results, the contract and the tools;
the world apart (it runs in its own process); the harness never imports a framework or an adapter."""

from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent / "harness"

# part -> the parts it may import (besides itself)
ALLOWED = {
    "vocabulary": set(),
    "clock": set(),
    "frameworks": set(),  # standard library only: nox and CI read it before anything is installed
    "owner": set(),  # standard library only: subjects, the world and the CLI read it
    "stop_button": set(),  # standard library only: the harness presses it, the tools' sends may ask it
    "tools": {"vocabulary", "clock", "stop_button"},
    "scenario": {"tools"},
    "world": {"scenario", "tools", "vocabulary", "clock", "owner"},
    "contract": {"scenario", "tools", "vocabulary", "owner", "stop_button", "frameworks"},
    "results": {"scenario", "tools", "vocabulary", "clock", "frameworks"},
    "trial": {"contract", "results", "scenario", "tools", "vocabulary", "clock", "owner", "stop_button"},
    "testing": {"contract", "trial", "results", "scenario", "tools", "vocabulary", "owner", "stop_button"},
    "cli": {"contract", "trial", "results", "scenario", "tools", "vocabulary", "world", "frameworks", "owner"},
    "__init__": set(),
}
FRAMEWORKS = {"openai", "agents", "langgraph", "langchain_core", "langchain_openai", "crewai", "autogen_agentchat",
              "autogen_core", "autogen_ext", "adapters"}


def _part(path: Path) -> str:
    rel = path.relative_to(HARNESS)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if node.module == "harness":
                names |= {f"harness.{a.name}" for a in node.names}
    return names


def test_imports_run_one_way():
    wrong = []
    for path in sorted(HARNESS.rglob("*.py")):
        if "template" in path.parts:
            continue
        part = _part(path)
        for name in _imports(path):
            top = name.split(".")[0]
            if top in FRAMEWORKS:
                wrong.append(f"{path.relative_to(HARNESS)} imports {name} (a framework or an adapter)")
            if top == "harness" and name != "harness" and "." in name:
                target = name.split(".")[1]
                if target not in ALLOWED:  # a name of harness/__init__.py (its version, its import names)
                    target = "__init__"
                if target not in (part, "__init__") and target not in ALLOWED[part]:
                    wrong.append(f"{path.relative_to(HARNESS)} ({part}) imports {name}")
    assert not wrong, "\n".join(wrong)


def test_the_parts_are_the_ones_named():
    parts = {_part(p) for p in HARNESS.rglob("*.py") if "template" not in p.parts}
    assert parts <= set(ALLOWED), f"a part with no place in the layout: {parts - set(ALLOWED)}"
