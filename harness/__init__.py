"""stopbench's framework-neutral core. It never imports an agent framework."""

import sys

__version__ = "0.1.0"

#: the import names of the harness and of the adapters: `harness` and `adapters` in the repository,
#: `stopbench.harness` and `stopbench.adapters` in a built wheel (setup.py moves them there)
PACKAGE = __name__
ADAPTERS = __name__[: -len("harness")] + "adapters"


def python_module(module: str) -> list[str]:
    """The command that runs `<PACKAGE>.<module>` in a new interpreter. Installed under `stopbench.` (a built
    wheel), it starts with -P: the current folder is not put on the path, so a `stopbench/` folder there (a
    checkout of stopbench) cannot stand in for the installed package."""
    safe = ["-P"] if PACKAGE != "harness" else []  # in a checkout, `python -m harness...` finds it from there
    return [sys.executable, *safe, "-m", f"{PACKAGE}.{module}"]
