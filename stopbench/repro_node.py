"""The reproducer's adapter when it is a process in another language (harness/contract/protocol.py): its framework
folder's files and the packages it takes from files (package.json `file:` dependencies, stopbench-tools), verbatim,
written out beside the reproducer when it runs, its packages installed there once (harness/npm_install.py), and
its class made from the folder as the harness makes it (`protocol_adapter(load(folder))`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import PACKAGE
from harness.contract import registry

#: the files of a folder that a process adapter runs from (its sources, its manifest, its packages' pins)
SOURCE_SUFFIXES = (".mjs", ".cjs", ".js", ".mts", ".cts", ".ts", ".json", ".toml")
#: and the settings its package manager reads there (install-links: how a `file:` dependency is installed)
SETTINGS_FILES = (".npmrc",)
#: what a reproducer leaves out of a folder: installed packages and what no process reads
SKIPPED_DIRS = {"node_modules", ".git", "__pycache__"}
PACKAGE_JSON = "package.json"


@dataclass(frozen=True)
class NodeAdapter:
    """A process adapter's folder as a reproducer carries it: `files` (path under the common root -> text) and the
    adapter's folder under that root."""

    files: dict[str, str]
    folder: str


def protocol_folder(row: dict[str, Any]) -> Path | None:
    """The framework folder of the row's adapter when it is a built-in process adapter (a framework.toml with
    `[protocol]`); None for a Python adapter (an import path, an entry point, an adapter.py)."""
    ref = str(row.get("adapter_ref") or row["adapter"])
    if ":" in ref:
        return None
    framework = registry.builtin_frameworks().get(ref)
    return framework.folder if framework is not None and framework.protocol is not None else None


def _sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and (p.suffix in SOURCE_SUFFIXES or
                  p.name in SETTINGS_FILES) and not SKIPPED_DIRS & set(p.relative_to(folder).parts))


def _file_dependencies(folder: Path) -> list[Path]:
    """The folders its package.json takes packages from (`file:` dependencies), resolved."""
    try:
        manifest = json.loads((folder / PACKAGE_JSON).read_text())
    except FileNotFoundError:
        return []
    deps = {**manifest.get("dependencies", {}), **manifest.get("devDependencies", {})}
    return [(folder / spec.removeprefix("file:")).resolve() for spec in deps.values()
            if isinstance(spec, str) and spec.startswith("file:")]


def node_adapter(folder: Path) -> NodeAdapter:
    """The folder and every folder it takes packages from (transitively), under their common root, so the
    relative `file:` paths (and the lockfile that records them) hold where the reproducer writes them."""
    folder = folder.resolve()
    folders, todo = [folder], [folder]
    while todo:
        for dep in _file_dependencies(todo.pop()):
            if dep not in folders:
                folders.append(dep)
                todo.append(dep)
    root = folders[0]
    while not all(f.is_relative_to(root) for f in folders):
        root = root.parent
    files = {str(p.relative_to(root)): p.read_text() for f in folders for p in _sources(f)}
    return NodeAdapter(files, str(folder.relative_to(root)))


def node_adapter_lines(node: NodeAdapter, py: Any) -> list[str]:
    """The reproducer's definition of the adapter: its files, and `adapter_class()` that writes and installs them
    beside the reproducer (once) and makes the class. `py`: the reproducer's literal writer."""
    rule = f"# {'=' * 100}"
    lines = [rule, f"# the adapter process: {node.folder}/ and the packages it takes from files, verbatim", rule,
             "NODE_FILES = {"]
    for path, text in node.files.items():
        lines.append(f"    {path!r}: {py(text)},")
    lines += [
        "}",
        f"ADAPTER_FOLDER = {node.folder!r}",
        "",
        "",
        "def adapter_class() -> type:",
        '    """The adapter process\'s folder written next to this file (its packages installed there once), and its',
        '    class made from the folder as stopbench makes it."""',
        "    import subprocess",
        "    from pathlib import Path",
        "",
        f"    from {PACKAGE}.contract.protocol import protocol_adapter",
        f"    from {PACKAGE}.frameworks import load",
        f"    from {PACKAGE}.npm_install import install_commands",
        "",
        "    here = Path(__file__).resolve()",
        "    root = here.with_name(here.stem + '_node')",
        "    for name, text in NODE_FILES.items():",
        "        path = root / name",
        "        path.parent.mkdir(parents=True, exist_ok=True)",
        "        if not path.exists() or path.read_text() != text:",
        "            path.write_text(text)",
        "    folder = root / ADAPTER_FOLDER",
        "    if not (folder / 'node_modules').is_dir():  # npm on the Node the adapter runs on",
        "        for command in install_commands(folder, root):",
        "            subprocess.run(command, cwd=folder, check=True)",
        "    return protocol_adapter(load(folder))",
        "",
        "",
    ]
    return lines
