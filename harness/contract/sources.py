"""Where each framework package came from, when not from a package index: its PEP 610 `direct_url.json`.

pip and uv write `direct_url.json` into a distribution's metadata when it was installed from a folder, a git URL
or a wheel file (https://packaging.python.org/en/latest/specifications/direct-url-data-structure/), and nothing
when it came from an index. A row records this per package (`sources`), so a row measured on a patched framework
(a checkout, a branch) is never taken for a row of the release with the same version number.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


def package_sources(names: tuple[str, ...] | list[str]) -> dict[str, dict[str, Any]]:
    """package -> where it came from, for the packages of `names` installed from a direct URL (index installs are
    left out): `url`; `path` of a local folder or file; `ref` and `commit` of a VCS checkout (for a local folder
    that is a git work tree, its HEAD, `-dirty` when modified); `editable` when installed so."""
    found: dict[str, dict[str, Any]] = {}
    for name in names:
        try:
            text = importlib.metadata.distribution(name).read_text("direct_url.json")
        except importlib.metadata.PackageNotFoundError:
            continue
        if not text:
            continue
        try:
            found[name] = describe(json.loads(text))
        except (ValueError, TypeError, AttributeError):
            found[name] = {"url": "unreadable direct_url.json"}
    return found


def describe(direct: dict[str, Any]) -> dict[str, Any]:
    """The fields of one direct_url.json that say which code it was."""
    url = str(direct.get("url", ""))
    out: dict[str, Any] = {"url": url}
    parsed = urlparse(url)
    if parsed.scheme == "file":
        out["path"] = unquote(parsed.path)
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict):
        if vcs.get("requested_revision"):
            out["ref"] = str(vcs["requested_revision"])
        if vcs.get("commit_id"):
            out["commit"] = str(vcs["commit_id"])
    dir_info = direct.get("dir_info")
    if isinstance(dir_info, dict):
        if dir_info.get("editable"):
            out["editable"] = True
        if "path" in out and "commit" not in out:
            commit = _git_head(Path(out["path"]))
            if commit:
                out["commit"] = commit
    archive = direct.get("archive_info")
    if isinstance(archive, dict) and isinstance(archive.get("hashes"), dict):
        out["hashes"] = dict(sorted(archive["hashes"].items()))
    return out


def _git_head(folder: Path) -> str | None:
    """The commit a local checkout is at (`-dirty` when its tree was modified), None when it is not one."""
    try:
        top = subprocess.run(["git", "-C", str(folder), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=10)
        if top.returncode or Path(top.stdout.strip()).resolve() != folder.resolve():
            return None  # not a checkout of its own (perhaps a folder inside another repository)
        head = subprocess.run(["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode:
            return None
        dirty = subprocess.run(["git", "-C", str(folder), "status", "--porcelain"], capture_output=True,
                               text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")

