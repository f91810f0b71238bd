"""`stopbench new-adapter NAME`: a new framework folder, copied from the template next to this file.

The template (harness/contract/template/) is a real adapter: linted with the rest of the code and run
through the contract tests by the test suite, so what a newcomer gets is known to work. It is the two files a
framework is: adapter.py, a `KitAdapter` (harness/contract/kit.py) that is the framework's calls plus its stop
buttons, and framework.toml, what it declares (dependencies, stop modes, resume, packages, environment). The
README's table of stop modes is written from framework.toml's, so the two name the same modes.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.frameworks import folder_name, load

TEMPLATE = Path(__file__).resolve().parent / "template"
TEMPLATE_NAME = "my-framework"
#: the line of the template README that becomes one table row per stop mode of framework.toml
MODE_ROWS = "STOP_MODE_ROWS"


def _names(name: str) -> dict[str, str]:
    """The template's spellings of its name -> this adapter's."""
    words = re.split(r"[-_]", name)
    return {"my-framework": name, "my_framework": folder_name(name),
            "MyFramework": "".join(w.title() for w in words), "My Framework": " ".join(w.title() for w in words)}


def write_skeleton(name: str, adapters_dir: Path) -> list[Path]:
    if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        raise ValueError(f"adapter name {name!r}: use lower-case letters, digits and dashes")
    folder = adapters_dir / folder_name(name)
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
    readme = folder / "README.md"
    readme.write_text(files[readme].replace(MODE_ROWS, mode_rows(load(folder).adapter.stop_modes)))
    return list(files)


def mode_rows(stop_modes: dict[str, str]) -> str:
    """The README's stop-mode rows, one per `[stop_modes]` entry of the framework.toml."""
    return "\n".join(f"| {mode} | {' '.join(primitive.split())} | TODO: the docs page or source file |"
                     for mode, primitive in stop_modes.items())
