"""Which rows were measured on the code that runs now; a bench reruns the others.

A row's `trial_id` says what was measured, its `adapter_digest`, `versions` and `sources` with what: a digest of
the adapter's folder (its Python files, framework.toml and constraints.txt; not its README or claims, which measure
nothing), the versions of the framework's packages and where they came from when not from an index (a checkout or
a git ref of a patch carries the release's version number: harness/contract/sources.py). A row is current when all
three match the code about to run; a row written before `adapter_digest` existed never is.

stopbench's own code is not in the key. A change of the instrument (the world, the trial machinery, the metrics)
is recorded in every row's `git_sha` and remeasured on purpose, into an empty `--out`: asv, likewise, keeps
results when only asv changes and drops those whose benchmark's own code changed.
"""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path
from typing import Any

from harness.contract.adapter import Adapter

MANIFEST = "framework.toml"
#: the files of an adapter folder that the digest covers (an adapter process's code and its lockfile too)
DIGESTED = ("*.py", MANIFEST, "constraints.txt", "*.mjs", "*.cjs", "*.js", "package.json", "package-lock.json")
#: installed packages and caches inside a folder are not the adapter's code
NOT_DIGESTED = frozenset({"__pycache__", "node_modules"})


def _folder(adapter_cls: type[Adapter]) -> Path:
    """An adapter process's framework folder (harness/contract/protocol.py), else the defining module's folder."""
    folder = getattr(adapter_cls, "folder", None)
    return Path(folder).resolve() if folder is not None else Path(inspect.getfile(adapter_cls)).resolve().parent


def adapter_files(adapter_cls: type[Adapter]) -> list[Path]:
    """The files that make the adapter: its framework folder's (the folder of the module that defines the class,
    when it declares itself with framework.toml, or an adapter process's folder), else that module alone."""
    folder = _folder(adapter_cls)
    if not (folder / MANIFEST).exists():
        return [Path(inspect.getfile(adapter_cls)).resolve()]
    found = {p for pattern in DIGESTED for p in folder.rglob(pattern) if not NOT_DIGESTED & set(p.parts)}
    return sorted(found)


def adapter_digest(adapter_cls: type[Adapter]) -> str:
    """sha256 over the adapter's files (each one's path in its folder and its bytes), 16 hex digits."""
    files = adapter_files(adapter_cls)
    root = files[0].parent if len(files) == 1 else _folder(adapter_cls)
    h = hashlib.sha256()
    for path in files:
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def is_current(row: dict[str, Any], digest: str, versions: dict[str, str],
               sources: dict[str, dict[str, Any]] | None = None) -> bool:
    """The row was measured on this adapter code and these framework versions, from these sources (none: every
    package from an index)."""
    return (row.get("adapter_digest") == digest and row.get("versions") == versions
            and (row.get("sources") or {}) == (sources or {}))
