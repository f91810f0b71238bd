"""`stopbench new-adapter NAME`: a new framework folder, copied from the template next to this file.

The template (harness/contract/template/) is a real adapter: linted with the rest of the code and run
through the contract tests by the test suite, so what a newcomer gets is known to work. It is the two files a
framework is: adapter.py, a `KitAdapter` (harness/contract/kit.py) that is the framework's calls plus its stop
buttons, and framework.toml, what it declares (dependencies, stop modes, resume, packages, environment).
"""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parent / "template"
TEMPLATE_NAME = "my-framework"


def _names(name: str) -> dict[str, str]:
    """The template's spellings of its name -> this adapter's."""
    words = re.split(r"[-_]", name)
    return {"my-framework": name, "my_framework": name.replace("-", "_"),
            "MyFramework": "".join(w.title() for w in words), "My Framework": " ".join(w.title() for w in words)}


def write_skeleton(name: str, adapters_dir: Path) -> list[Path]:
    if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        raise ValueError(f"adapter name {name!r}: use lower-case letters, digits and dashes")
    folder = adapters_dir / name.replace("-", "_")
    if folder.exists():
        raise FileExistsError(f"{folder} already exists")
    folder.mkdir(parents=True)
    files = {folder / "__init__.py": "",
             folder / "constraints.txt": f"# TODO: pin {name} and everything it pulls in (uv pip compile)\n"}
    for source in ("adapter.py", "README.md", "framework.toml"):
        text = (TEMPLATE / source).read_text()
        for old, new in _names(name).items():
            text = text.replace(old, new)
        files[folder / source] = text
    for path, text in files.items():
        path.write_text(text)
    return list(files)
