"""The wheel claims one import name, `stopbench`, while the repository keeps its harness/ and adapters/ layout.

A built wheel (not an editable install) holds `stopbench/` with the repository's `harness/` and `adapters/`
moved under it as `stopbench/harness` and `stopbench/adapters`, every import of them rewritten to match, and
the scenarios and data files beside them (`stopbench/scenarios`, `stopbench/data`, found where the code looks:
next to the harness). Everything else is in pyproject.toml.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

MOVED = ("harness", "adapters")
DATA_DIRS = ("scenarios", "data")
# what names a module: `harness.x` (code, docstrings, "adapters.pkg.mod:Class" in framework.toml),
# `from harness import ...`, `import harness`; prose ("the harness never ...") is left as it is
_NAME = re.compile(r"(?<![\w.])(harness|adapters)(?=\.[A-Za-z_])|(?<=\bfrom )(harness|adapters)(?= import)"
                   r"|(?<=\bimport )(harness|adapters)\b")
REWRITTEN = (".py", ".toml", ".j2", ".md", ".txt")


def _rewrite(text: str) -> str:
    return _NAME.sub(lambda m: f"stopbench.{m.group(0)}", text)


class BuildUnderOneName(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install runs from the checkout as it is
            return
        lib = Path(self.build_lib)
        target = lib / "stopbench"
        for name in MOVED:
            if (lib / name).exists():
                shutil.rmtree(target / name, ignore_errors=True)
                shutil.move(str(lib / name), str(target / name))
        for name in DATA_DIRS:
            shutil.copytree(Path(name), target / name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
        for path in target.rglob("*"):
            if path.is_file() and path.suffix in REWRITTEN:
                text = path.read_text()
                new = _rewrite(text)
                if new != text:
                    path.write_text(new)


setup(cmdclass={"build_py": BuildUnderOneName})
