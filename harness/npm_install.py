"""A JS adapter's packages installed by npm running on the Node the adapter runs on.

An adapter whose packages need a newer Node than the machine's takes its Node from the npm registry: the `node`
package, pinned in its package.json, whose binary its framework.toml runs (`node_modules/.bin/node`). npm checks
each package's `engines` against the Node that runs npm itself, so `npm ci` on the machine's Node warns
(EBADENGINE) for packages that will never run on it. Here npm runs on the adapter's Node: that `node` package is
first installed once into a folder of its own, then its binary runs npm's own CLI (a script any Node runs) for
`npm ci` in the adapter's folder. Standard library only: noxfile.py imports it before any environment exists.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from harness.frameworks import NPM_LOCKFILE

#: the npm package that ships the Node binary
NODE_PACKAGE = "node"


def runtime_node(folder: Path) -> str | None:
    """The version of the `node` package the folder's package.json pins (the Node its adapter runs on); None when
    it runs on the machine's Node."""
    try:
        manifest = json.loads((folder / "package.json").read_text())
    except FileNotFoundError:
        return None
    version = manifest.get("dependencies", {}).get(NODE_PACKAGE)
    return str(version) if version else None


def npm_cli() -> str:
    """npm's CLI script (what the `npm` command runs), for another Node to run."""
    npm = shutil.which("npm")
    if npm is None:
        raise FileNotFoundError("npm is not on PATH: install Node.js (it brings npm)")
    return os.path.realpath(npm)


def install_commands(folder: Path, cache: Path) -> list[list[str]]:
    """The commands that install the folder's packages: `npm ci` from its lockfile (`npm install` without one),
    run by the adapter's own Node when it pins one (that Node installed into `cache` first, when not there yet)."""
    verb = "ci" if (folder / NPM_LOCKFILE).exists() else "install"
    version = runtime_node(folder)
    if version is None:
        return [["npm", verb, "--prefix", str(folder)]]
    home = cache / f"{NODE_PACKAGE}-{version}"
    node = home / "node_modules" / ".bin" / "node"
    first = [] if node.exists() else [["npm", "install", "--prefix", str(home), "--no-save", "--no-package-lock",
                                       "--no-audit", "--no-fund", f"{NODE_PACKAGE}@{version}"]]
    return [*first, [str(node), npm_cli(), verb, "--prefix", str(folder)]]
