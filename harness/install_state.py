"""Whether a reused environment already holds what an install would put there.

nox reuses each session's virtualenv, but `uv pip install -e .` rebuilds the project every time (uv always rebuilds
a local directory given explicitly), byte-compiling walks every installed file again, and `npm ci` deletes and
rewrites node_modules: ~20 s before a session's first trial, 17 times a run. A marker in the environment records
the digest of everything the install read: its arguments, pyproject.toml, and the files they name (`-c`, `-r`, a
lockfile, every file of a `file:` dependency, which npm copies in: `install-links`). An equal digest means the
install would change nothing; an editable install's code is read live, so only what the digest covers can make it
stale. A recreated environment has no marker and installs in full.
Standard library only: noxfile.py imports it before any environment exists.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

#: the marker's name in the environment's folder (a virtualenv, a node_modules folder)
MARKER = ".stopbench-install"
#: install options whose next argument is a file the install reads
FILE_OPTIONS = frozenset({"-c", "--constraint", "-r", "--requirement"})


def install_digest(args: Iterable[str], files: Iterable[Path] = ()) -> str:
    """sha256 over the install's arguments and the bytes of the files it reads (those named after -c / -r in
    `args`, and `files`); a file that does not exist counts as absent, so creating it changes the digest."""
    args = list(args)
    named = [Path(args[i + 1]) for i, a in enumerate(args[:-1]) if a in FILE_OPTIONS]
    h = hashlib.sha256()
    for a in args:
        h.update(a.encode() + b"\0")
    for path in [*named, *files]:
        h.update(str(path).encode() + b"\0")
        h.update(path.read_bytes() if path.is_file() else b"\x00absent")
        h.update(b"\0")
    return h.hexdigest()


def is_installed(env: Path, digest: str) -> bool:
    """The environment holds the install with this digest (its marker says so)."""
    marker = env / MARKER
    return marker.is_file() and marker.read_text().strip() == digest


def mark_installed(env: Path, digest: str) -> None:
    """Record, after a finished install, what it was."""
    (env / MARKER).write_text(digest + "\n")


def npm_inputs(folder: Path) -> list[Path]:
    """What `npm ci` in `folder` reads: package.json, package-lock.json, and every file of each dependency given as
    a local folder (`"file:../../js/stopbench-tools"`), which npm copies into node_modules, so a change there must
    install again."""
    manifest = folder / "package.json"
    found = [manifest, folder / "package-lock.json"]
    data = json.loads(manifest.read_text()) if manifest.is_file() else {}
    for section in ("dependencies", "devDependencies", "optionalDependencies"):
        for spec in (data.get(section) or {}).values():
            if isinstance(spec, str) and spec.startswith("file:"):
                local = (folder / spec.removeprefix("file:")).resolve()
                found += sorted(p for p in local.rglob("*") if p.is_file() and "node_modules" not in p.parts)
    return found
