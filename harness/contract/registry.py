"""Finding adapters: built-in folders (adapters/<name>/adapter.py), the `stopbench.adapters` entry-point
group (a third party adds one without forking), or an import path `package.module:Class`.

An adapter module in a framework folder is imported with the folder's declared environment already set
(framework.toml `[environment]`: telemetry off before the framework is imported, also at module level)."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import re
from pathlib import Path
from typing import Any

from harness import ADAPTERS
from harness.contract.adapter import Adapter, stop_method_name
from harness.frameworks import MANIFEST, FrameworkError, load

ADAPTERS_DIR = Path(__file__).resolve().parent.parent.parent / "adapters"
ENTRY_POINT_GROUP = "stopbench.adapters"


class AdapterError(LookupError):
    """An adapter name, import path or mode that does not resolve; the message says what exists."""


def _folder(name: str) -> str:
    return name.replace("-", "_")


def builtin_adapter_names() -> list[str]:
    if not ADAPTERS_DIR.is_dir():
        return []
    return sorted(p.name.replace("_", "-") for p in ADAPTERS_DIR.iterdir()
                  if (p / "adapter.py").exists() and not p.name.startswith("_"))


def entry_point_names() -> list[str]:
    return sorted(ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def available_adapters() -> list[str]:
    return sorted(set(builtin_adapter_names()) | set(entry_point_names()))


def load_adapter(name: str) -> type[Adapter]:
    """Resolve an adapter by built-in name, entry point name, or `package.module:Class`."""
    if ":" in name:
        module_name, _, attr = name.partition(":")
        if not module_name or not attr:
            raise AdapterError(f"adapter {name!r}: give it as package.module:Class")
        try:
            module = _import(module_name, attr)
        except ImportError as e:
            raise AdapterError(f"adapter {name!r}: cannot import {module_name}: {e}") from e
        cls = getattr(module, attr, None)
        if cls is None:
            raise AdapterError(f"adapter {name!r}: {module_name} has no {attr}")
        return _checked(cls, name)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            _import(ep.module, ep.attr or "")
            return _checked(ep.load(), name)
    if not re.fullmatch(r"[a-z][a-z0-9_-]*", name) or name not in builtin_adapter_names():
        known = ", ".join(available_adapters()) or "none"
        raise AdapterError(f"unknown adapter {name!r} (known: {known}; or give package.module:Class)")
    module_name = f"{ADAPTERS}.{_folder(name)}.adapter"
    try:
        module = _import(module_name, "ADAPTER")
    except ImportError as e:
        raise AdapterError(
            f"adapter {name!r} is not installed in this environment ({e}); run it in its own nox "
            f"session: nox -s \"bench(adapter='{name}')\""
        ) from e
    cls = getattr(module, "ADAPTER", None)
    if cls is None:
        raise AdapterError(f"{module_name} must define ADAPTER = <its Adapter subclass>")
    return _checked(cls, name)


def _import(module_name: str, attr: str) -> Any:
    """Import the module, with the environment its framework folder declares for `attr` set first."""
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        spec = None
    folder = Path(spec.origin).parent if spec is not None and spec.origin else None
    try:
        if folder is not None and (folder / MANIFEST).exists():
            declaration = load(folder).declaration(module_name, attr.split(".")[0])
            os.environ.update(declaration.environment if declaration else {})
        return importlib.import_module(module_name)
    except FrameworkError as e:
        raise AdapterError(str(e)) from e


def _checked(cls: Any, origin: str) -> type[Adapter]:
    if not (isinstance(cls, type) and issubclass(cls, Adapter)):
        raise AdapterError(f"adapter {origin!r}: {cls!r} is not a harness.contract.adapter.Adapter subclass")
    if not getattr(cls, "stop_modes", None):
        raise AdapterError(f"adapter {origin!r}: declares no stop_modes")
    if cls.stop is Adapter.stop:
        missing = [m for m in cls.stop_modes if not callable(getattr(cls, stop_method_name(m), None))]
        if missing:
            raise AdapterError(f"adapter {origin!r}: no {', '.join(stop_method_name(m) + '()' for m in missing)} "
                               "for its declared stop mode(s)")
    return cls
