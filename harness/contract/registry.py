"""Finding adapters: built-in folders (adapters/<name>/adapter.py, or a framework.toml that declares an adapter
process speaking the adapter protocol: harness/contract/protocol.py), the `stopbench.adapters` entry-point
group (a third party adds one without forking), or an import path `package.module:Class`.

An adapter module in a framework folder is imported with the folder's declared environment already set
(framework.toml `[environment]`: telemetry off before the framework is imported, also at module level)."""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import os
import re
from pathlib import Path
from typing import Any

from harness import ADAPTERS
from harness.contract.adapter import Adapter, stop_method_name
from harness.contract.protocol import ProtocolAdapter, ProtocolError, protocol_adapter
from harness.frameworks import MANIFEST, NPM_LOCKFILE, ROOT, Framework, FrameworkError, discover, load

ADAPTERS_DIR = ROOT / "adapters"
ENTRY_POINT_GROUP = "stopbench.adapters"


class AdapterError(LookupError):
    """An adapter name, import path or mode that does not resolve; the message says what exists."""


def builtin_frameworks() -> dict[str, Framework]:
    """The framework folders of ADAPTERS_DIR by adapter name (harness/frameworks.py's `discover`, the one scan)."""
    try:
        return {f.name: f for f in discover(ADAPTERS_DIR.parent)}
    except FrameworkError as e:
        raise AdapterError(str(e)) from e


def builtin_adapter_names() -> list[str]:
    """Folders with an adapter.py, and folders whose framework.toml declares a [protocol] adapter process."""
    return sorted(builtin_frameworks())


@functools.cache
def _protocol_adapter(folder: Path) -> type[Adapter]:
    """The class of a folder's adapter process (made once per folder: its probe is asked once)."""
    try:
        framework = load(folder)
    except FrameworkError as e:
        raise AdapterError(str(e)) from e
    name = framework.name
    if framework.protocol is not None and framework.protocol.npm and not (folder / "node_modules").is_dir():
        raise AdapterError(f"adapter {name!r} is not installed here: {folder} has a {NPM_LOCKFILE} but no "
                           f"node_modules; run `npm ci` there, or its nox session: nox -s \"tests(suite='{name}')\"")
    return protocol_adapter(framework)


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
    framework = builtin_frameworks().get(name) if re.fullmatch(r"[a-z][a-z0-9_-]*", name) else None
    if framework is None:
        known = ", ".join(available_adapters()) or "none"
        raise AdapterError(f"unknown adapter {name!r} (known: {known}; or give package.module:Class)")
    if framework.protocol is not None:
        return _checked(_protocol_adapter(framework.folder), name)
    module_name = f"{ADAPTERS}.{framework.folder.name}.adapter"
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
    if issubclass(cls, ProtocolAdapter):  # its process, asked once: refused here, before any trial, if it is wrong
        try:
            cls.probe()
        except ProtocolError as e:
            raise AdapterError(str(e)) from e
    if not getattr(cls, "stop_modes", None):
        raise AdapterError(f"adapter {origin!r}: declares no stop_modes")
    if cls.stop is Adapter.stop:
        missing = [m for m in cls.stop_modes if not callable(getattr(cls, stop_method_name(m), None))]
        if missing:
            raise AdapterError(f"adapter {origin!r}: no {', '.join(stop_method_name(m) + '()' for m in missing)} "
                               "for its declared stop mode(s)")
    return cls
