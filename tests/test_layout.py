"""Imports run one way: the CLI on top; the trial machinery over results, the contract and the tools;
the world apart (it runs in its own process); the harness never imports a framework or an adapter; and no
two modules import each other, not even from inside a function.

Every import counts, wherever it stands: at the top of a module, inside a function (imported on use), or
relative. The frameworks are not listed here: they are whatever the framework folders (adapters/*/) import
or depend on that the harness itself does not depend on, so a new folder is covered as it lands.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from harness.frameworks import discover

ROOT = Path(__file__).resolve().parent.parent

# part -> the parts it may import (besides itself)
ALLOWED = {
    "vocabulary": set(),
    "clock": set(),
    "providers": set(),  # standard library only: the model providers a trial can talk to, as data
    "frameworks": {"providers"},  # standard library only: nox and CI read it before anything is installed
    "owner": set(),  # standard library only: subjects, the world and the CLI read it
    "stop_button": set(),  # standard library only: the harness presses it, the tools' sends may ask it
    "install_state": set(),  # standard library only: noxfile.py reads it before any environment exists
    "npm_install": {"frameworks"},  # standard library only: noxfile.py installs JS adapters with it
    "bench_plan": {"frameworks", "billing", "providers"},  # standard library only: noxfile.py's bench matrices
    "billing": set(),  # standard library only: the providers' billing profiles, data with their sources
    "model_rule": set(),  # standard library only: how the world's model reads tool results, data with its source
    "tools": {"vocabulary", "clock", "stop_button"},
    "scenario": {"tools", "billing", "model_rule"},
    "world": {"scenario", "tools", "vocabulary", "clock", "owner", "billing", "model_rule"},
    "contract": {"scenario", "tools", "vocabulary", "owner", "stop_button", "frameworks", "providers"},
    "results": {"scenario", "tools", "vocabulary", "clock", "frameworks", "billing", "providers",
                "model_rule"},
    "trial": {"contract", "results", "scenario", "tools", "vocabulary", "clock", "owner", "stop_button", "billing",
              "providers"},
    "testing": {"contract", "trial", "results", "scenario", "tools", "vocabulary", "owner", "stop_button"},
    "cli": {"contract", "trial", "results", "scenario", "tools", "vocabulary", "world", "frameworks", "owner",
            "billing", "providers"},
    "migrate_summary": {"results"},  # a report summary of an older format, once: beside the CLI, over results
    "__init__": set(),
}


def _bare(requirement: str) -> str:
    """`pydantic-ai-slim[openai]>=2` -> `pydantic_ai_slim`."""
    return re.split(r"[\[<>=!~;@ ]", requirement, maxsplit=1)[0].strip().lower().replace("-", "_").replace(".", "_")


def _import_names(distribution: str) -> set[str]:
    """The top-level modules an installed distribution provides (its own name when it is not installed)."""
    found = {top for top, dists in importlib.metadata.packages_distributions().items()
             if distribution in {_bare(d) for d in dists}}
    return found or {distribution}


def _top_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def framework_imports(root: Path = ROOT) -> set[str]:
    """What an adapter brings and the harness must not import: every top-level module the framework folders'
    code imports, and every dependency their framework.toml declares, less the standard library, stopbench's
    own packages and the harness's own dependencies (pyproject.toml)."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    harness_needs = {name for dep in project["dependencies"] for name in _import_names(_bare(dep))}
    names: set[str] = {"adapters"}
    for framework in discover(root):
        for source in framework.folder.rglob("*.py"):
            if "node_modules" not in source.relative_to(framework.folder).parts:  # a JS adapter's packages
                names |= _top_names(source)
        names |= {_bare(d) for d in framework.dependencies}
    return names - set(sys.stdlib_module_names) - {"harness", "__future__"} - harness_needs


def _modules(harness: Path) -> dict[str, Path]:
    """`harness.results.site` -> its file, for every module of the harness (the adapter template apart)."""
    out = {}
    for path in sorted(harness.rglob("*.py")):
        if "template" in path.relative_to(harness).parts:
            continue
        parts = (harness.name, *path.relative_to(harness).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(absolute name imported, line) for every import of the file, function-local and relative ones too;
    `from a import b` names both `a` and `a.b` (b may be a module)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found += [(name, node.lineno)] + [(f"{name}.{a.name}", node.lineno) for a in node.names]
    return found


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layering_problems(harness: Path, frameworks: set[str]) -> list[str]:
    """Imports of a framework or an adapter, and imports of a part the layout does not allow, wherever they
    stand in the file."""
    wrong = []
    modules = _modules(harness)
    for module, path in modules.items():
        part = _part(module)
        where = path.relative_to(harness.parent)
        for name, line in _imports(module, path):
            top = name.split(".")[0]
            if top in frameworks:
                wrong.append(f"{where}:{line} imports {name} (a framework or an adapter)")
            elif top == harness.name and "." in name:
                target = _part(name)
                if target not in ALLOWED:  # a name of harness/__init__.py (its version, its import names)
                    target = "__init__"
                if target not in (part, "__init__") and target not in ALLOWED.get(part, set()):
                    wrong.append(f"{where}:{line} ({part}) imports {name}")
    return sorted(set(wrong))


def import_cycles(harness: Path) -> list[list[str]]:
    """Groups of harness modules that import each other, directly or round a longer loop (Tarjan's strongly
    connected components of the module graph, every import counted)."""
    modules = _modules(harness)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for name, _ in _imports(module, path):
            while name and name not in modules:  # `harness.results.site.render` -> `harness.results.site`
                name = name.rpartition(".")[0]
            if name and name != module:
                edges[module].add(name)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for m in sorted(modules):
        if m not in index:
            visit(m)
    return sorted(cycles)


def test_imports_run_one_way():
    wrong = layering_problems(ROOT / "harness", framework_imports())
    assert not wrong, "\n".join(wrong)


def test_no_two_modules_import_each_other():
    cycles = import_cycles(ROOT / "harness")
    assert not cycles, "modules that import each other (inside functions too): " + \
        "; ".join(" <-> ".join(c) for c in cycles)


def test_the_parts_are_the_ones_named():
    parts = {_part(m) for m in _modules(ROOT / "harness")}
    assert parts <= set(ALLOWED), f"a part with no place in the layout: {parts - set(ALLOWED)}"


def test_every_framework_folder_is_covered():
    found = framework_imports()
    for name in ("agents", "crewai", "langgraph", "autogen_agentchat", "pydantic_ai", "google", "llama_index",
                 "workflows", "agent_framework", "openai", "adapters"):
        assert name in found, name
    assert not found & {"httpx", "yaml", "mcp", "uvicorn", "psutil", "harness", "asyncio"}, found


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_broken_layout_is_caught(tmp_path):
    """A framework folder that lands with its own SDK, a harness that imports it inside a function, a results
    module that imports the trial machinery on use, and two results modules that import each other on use."""
    root = _tree(tmp_path, {
        "pyproject.toml": '[project]\nname = "x"\ndependencies = ["httpx>=0.27", "pyyaml>=6"]\n',
        "adapters/newfw/framework.toml": 'dependencies = ["newfw-sdk>=1"]\n',
        "adapters/newfw/adapter.py": "import httpx\nfrom newfw_sdk.agent import Agent\n",
        "harness/__init__.py": "",
        "harness/results/__init__.py": "",
        "harness/results/history.py": "def pages():\n    from harness.results.site import render\n",
        "harness/results/site.py": "import yaml\n\n\ndef render():\n    from . import history\n",
        "harness/results/cells.py": "def cell():\n    from harness.trial.runner import run_matrix\n",
        "harness/trial/__init__.py": "",
        "harness/trial/runner.py": "def run_matrix():\n    import newfw_sdk\n",
    })
    frameworks = framework_imports(root)
    assert {"newfw_sdk", "adapters"} <= frameworks and not frameworks & {"httpx", "yaml"}
    assert layering_problems(root / "harness", frameworks) == [
        "harness/results/cells.py:2 (results) imports harness.trial.runner",
        "harness/results/cells.py:2 (results) imports harness.trial.runner.run_matrix",
        "harness/trial/runner.py:2 imports newfw_sdk (a framework or an adapter)",
    ]
    assert import_cycles(root / "harness") == [["harness.results.history", "harness.results.site"]]
