"""Framework folders describe themselves: nox sessions, test suites and CI matrices are derived from them.

`adapters/<folder>/` is one framework: `adapter.py` (its `ADAPTER`), `README.md`, `framework.toml` (its
dependencies and further adapter classes), `constraints.txt` (pins, optional) and `claims.yaml` (what the
article says about it, optional). Adding a framework touches nothing outside its folder.

Standard library only: the noxfile and the CI workflow read this before anything is installed.
`python -m harness.frameworks matrix [--shards N]` prints the CI matrix as JSON (one job per framework, or
per framework x shard); `list` prints one framework a line; `requirements NAME` the `pip install` arguments
of one framework's adapter (`pip install -e . $(python -m harness.frameworks requirements langgraph)`).

It also holds what the framework's adapter declares about itself (its stop modes, resume, packages,
environment), so that the report, `stopbench list` and the checks read them without importing a framework; an
adapter class defined in the folder gets them as its class attributes (harness/contract/adapter.py).

framework.toml:
    dependencies = ["crewai>=1.15,<1.16", ...]   # pip requirements of the adapter (the harness comes too)
    packages = ["crewai", "openai"]               # distributions whose versions every row records
    providers = ["openai", "anthropic"]           # the model providers it has clients for (harness/providers.py),
                                                  #   its home one first; default: ["openai"]
    resume_primitive = "Crew.from_checkpoint..."  # how resume works, one line; absent: the framework has none
    tool_styles = ["sync", "async"]               # the tool styles it runs (default: sync, async, mcp)
    [stop_modes]                                  # mode id -> the primitive it presses, one line, in order;
    cancel = "cancel the asyncio task ..."        #   each has a `stop_<mode>` method on the adapter (a process
                                                  #   adapter: a function in its `stops`)
    [stop_signals]                                # a process adapter's modes pressed by a signal: mode -> SIGTERM
    sigterm = "SIGTERM"                           #   or SIGINT, sent to the process in place of a `stop` request
    [environment]                                 # set before the adapter (and its framework) is imported
    CREWAI_DISABLE_TELEMETRY = "true"
    [unsupported.break_sync]                      # mode -> tool style -> why that pair cannot run at all
    async = "the sync graph.stream cannot call async-only tools"
    [modes_since]                                 # mode -> the release that brought its primitive
    abort_signal = { package = "google-adk", release = "2.11" }
    [[variants]]                                  # more adapter classes of this framework, benched with it
    adapter = "adapters.autogen.adapter:AutogenLoadStateAdapter"
    name = "autogen-load-state"                   # its adapter name (the framework's adapter is the folder's)
    args = ["--scenario", "q3_report"]            # extra `stopbench run` arguments for it
    modes = ["break", "cancel"]                   # the framework's stop modes it has (default: all), or
    resume_primitive = "..."                      #   any field above, replacing the framework's for it
    [history]                                     # the version history (`nox -s history`, issue #22)
    package = "crewai"                            # the dependency whose releases it walks
    releases = ["1.10", "1.11", "1.12"]           # minor releases, oldest first: each installed as ==X.Y.*
    together = ["crewai-tools"]                   # dependencies released in lockstep: ==X.Y.* with it (optional)
    [history.requires]                            # release -> requirements of then, each in place of the
    "1.10" = ["mcp>=1.20,<1.27"]                  #   dependency of the same package (what that release needs)
    counterpart = "langgraph"                     # the same framework's adapter in another language: the report
                                                  #   shows the two side by side, mode by mode
    served = false                                # its full run measures no served stop (a CLI run from a
                                                  #   terminal; default: true, harness/bench_plan.py)
    [protocol]                                    # an adapter in another language: no adapter.py, a process
    command = ["node", "adapter.mjs"]             #   started in the folder that speaks docs/adapter-protocol.md;
                                                  #   a package-lock.json beside it: nox runs `npm ci` there

A process adapter declares nothing of this in its own code: the harness hands it the declaration when it starts
it (harness/contract/protocol.py), and its kit checks that it implements exactly the declared modes.
`[stop_signals]` is a table of its own, not a field of each mode, so that `[stop_modes]` stays one line of text per
mode for every reader (the report, `stopbench list`, the README tables); a mode named there must be declared in
`[stop_modes]`, and only a `[protocol]` folder declares one (a Python adapter's stop is a method call).

Every folder under adapters/ that is a framework is found by `discover()`, the one scan of the folders, and
named by `adapter_name()` (`adapters/vercel_ai/` is the adapter `vercel-ai`; `folder_name()` is its inverse).
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.providers import DEFAULT_PROVIDER, PROVIDERS

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = "framework.toml"
#: the framework that the core test suite covers (it needs no framework of its own)
CORE = "reference"
TOOL_STYLES = ("sync", "async", "mcp")
#: the signals that may press a process adapter's stop mode: what a process manager, a container stop or Ctrl-C
#: sends
STOP_SIGNALS = ("SIGTERM", "SIGINT")


def adapter_name(folder: str) -> str:
    """The adapter name of the framework folder named `folder` (`vercel_ai` -> `vercel-ai`): the folder is an
    importable package name, the adapter name is what rows and the command line say. `folder_name` undoes it."""
    return folder.replace("_", "-")


def folder_name(name: str) -> str:
    """The framework folder of adapter `name` (`vercel-ai` -> `vercel_ai`): the inverse of `adapter_name`."""
    return name.replace("-", "_")


def is_reference(name: str) -> bool:
    """A reference agent: the Python one (CORE) or its port to another language (`reference-<language>`). They
    stop right by design; a count of the frameworks measured leaves them out."""
    return name == CORE or name.startswith(f"{CORE}-")


class FrameworkError(ValueError):
    """A framework folder is malformed; the message names the file and the field."""


@dataclass(frozen=True)
class Declaration:
    """What one adapter class declares about itself: the class attributes of the same names on
    harness.contract.adapter.Adapter (see there what each means)."""

    name: str
    stop_modes: dict[str, str] = field(default_factory=dict)
    resume_primitive: str = ""
    tool_styles: tuple[str, ...] = TOOL_STYLES
    unsupported: dict[tuple[str, str], str] = field(default_factory=dict)
    modes_since: dict[str, tuple[str, str]] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    packages: tuple[str, ...] = ()
    providers: tuple[str, ...] = (DEFAULT_PROVIDER,)
    stop_signals: dict[str, str] = field(default_factory=dict)

    def attributes(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("name", *DECLARED)}


#: the fields of a Declaration that framework.toml holds (its top level, or a variant's)
DECLARED = ("stop_modes", "resume_primitive", "tool_styles", "unsupported", "modes_since", "environment", "packages",
            "providers", "stop_signals")


@dataclass(frozen=True)
class Variant:
    adapter: str  # import path package.module:Class
    args: tuple[str, ...] = ()
    declaration: Declaration | None = None

    def names(self, module: str, cls: str) -> bool:
        """This variant is class `cls` of module `module` (any package prefix: `stopbench.adapters.` in a wheel)."""
        mod, _, attr = self.adapter.partition(":")
        return attr == cls and mod.rsplit(".", 1)[-1] == module.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class History:
    """The releases the version history installs, one environment each: `package==<release>.*` in place of
    the package's requirement in `dependencies`, without constraints.txt (its pins are the newest release's;
    every row records the versions it ran with)."""

    package: str
    releases: tuple[str, ...]
    #: dependencies released in lockstep with `package` (autogen-ext with autogen-agentchat): ==<release>.* too
    together: tuple[str, ...] = ()
    #: release -> requirements that release needs in place of the dependency of the same package (an older
    #: checkpointer for an older graph library), as its documentation of then installs it
    requires: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def walks(self, requirement: str) -> bool:
        """The requirement is the walked package's or one released with it."""
        return _bare(requirement) in (self.package, *self.together)

    def takes(self, release: str) -> bool:
        """A declared release, or a minor newer than all of them (one that appeared since: CI's `--latest`)."""
        return release in self.releases or (MINOR.fullmatch(release) is not None
                                            and _minor(release) > max(map(_minor, self.releases)))

    def newer(self, available: list[str]) -> list[str]:
        """The minors of `available` (versions as PyPI lists them) newer than every declared release, oldest
        first; pre-releases left out."""
        stable = {".".join(v.split(".")[:2]) for v in available if re.fullmatch(r"\d+\.\d+(\.\d+)*", v)}
        return sorted((m for m in stable if self.takes(m) and m not in self.releases), key=_minor)


MINOR = re.compile(r"\d+\.\d+")


def _minor(release: str) -> tuple[int, int]:
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


def release_key(version: str) -> tuple[int, ...]:
    """`1.12.3` -> (1, 12, 3); a pre-release suffix is ignored (`2.0.0rc1` -> (2, 0, 0)). The one ordering of
    releases: the adapters' `modes_since` and the report's history pages use it."""
    parts = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if not digits:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


@dataclass(frozen=True)
class Protocol:
    """An adapter that is a process speaking the adapter protocol (docs/adapter-protocol.md), started as
    `command` in the framework folder; the harness's side of it is harness/contract/protocol.py."""

    command: tuple[str, ...]
    folder: Path

    @property
    def npm(self) -> bool:
        """Its JavaScript packages are pinned by a lockfile, installed with `npm ci` in the folder."""
        return (self.folder / NPM_LOCKFILE).exists()


NPM_LOCKFILE = "package-lock.json"


@dataclass(frozen=True)
class Framework:
    name: str  # the adapter name: the folder with - for _
    folder: Path
    dependencies: tuple[str, ...]
    variants: tuple[Variant, ...] = ()
    docs: str = ""  # the framework's own documentation of its stop / cancel (the report links it)
    history: History | None = None
    adapter: Declaration | None = None  # what its adapter (`ADAPTER` of adapter.py) declares
    protocol: Protocol | None = None  # an adapter process in another language, in place of adapter.py
    counterpart: str = ""  # the adapter of the same framework in another language (shown side by side)
    served: bool = True  # its full run serves it (harness/bench_plan.py SERVED_MATRIX); a CLI is run from a terminal

    @property
    def declarations(self) -> list[Declaration]:
        """The framework's adapter's, then each variant's."""
        found = [self.adapter, *(v.declaration for v in self.variants)]
        return [d for d in found if d is not None]

    def declaration(self, module: str, cls: str) -> Declaration | None:
        """What class `cls` of module `module` in this folder declares: its variant's, else the framework's."""
        variant = next((v for v in self.variants if v.names(module, cls)), None)
        return variant.declaration if variant else self.adapter

    @property
    def npm(self) -> bool:
        """Its JavaScript packages are pinned by a lockfile in the folder (an adapter process's, or an orchestrator
        CLI's and its Node): its sessions run `npm ci` there."""
        return (self.folder / NPM_LOCKFILE).exists()

    @property
    def constraints(self) -> Path | None:
        path = self.folder / "constraints.txt"
        return path if path.exists() else None

    def install_args(self, release: str | None = None) -> list[str]:
        """`pip install` arguments for this framework's adapter (the harness itself is installed apart); with
        `release`, those of that release of the history (History)."""
        if release is None:
            args = list(self.dependencies)
            return args + (["-c", str(self.constraints)] if self.constraints else [])
        if self.history is None or not self.history.takes(release):
            known = ", ".join(self.history.releases) if self.history else "none"
            raise FrameworkError(f"{self.folder / MANIFEST}: no history release {release!r} (releases: {known}, "
                                 "or a newer minor)")
        history = self.history
        extra = history.requires.get(release, ())
        replaced = {_bare(r) for r in extra}
        args = [f"{_name(d)}=={release}.*" if history.walks(d) else d for d in self.dependencies
                if _bare(d) not in replaced or history.walks(d)]
        return args + [r for r in extra if not history.walks(r)]


def _name(requirement: str) -> str:
    """`pkg[extra]>=1,<2` -> `pkg[extra]`."""
    return re.split(r"[<>=!~;@ ]", requirement, maxsplit=1)[0]


def _bare(requirement: str) -> str:
    """`pkg[extra]>=1` -> `pkg` (lowercase, `_` as `-`)."""
    return _name(requirement).split("[")[0].strip().lower().replace("_", "-")


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FrameworkError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(value)


def load(folder: Path) -> Framework:
    path = folder / MANIFEST
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise FrameworkError(f"{path}: cannot read: {e}") from e
    except tomllib.TOMLDecodeError as e:
        raise FrameworkError(f"{path}: not valid TOML: {e}") from e
    known = ("dependencies", "variants", "docs", "history", "protocol", "counterpart", "served", *DECLARED)
    unknown = set(data) - set(known)
    if unknown:
        raise FrameworkError(f"{path}: unknown field(s) {', '.join(sorted(unknown))} (known: {', '.join(known)})")
    docs = data.get("docs", "")
    if not isinstance(docs, str) or (docs and not docs.startswith("https://")):
        raise FrameworkError(f"{path}: docs: expected an https:// link, got {docs!r}")
    deps = _strings(data.get("dependencies", []), f"{path}: dependencies")
    counterpart = data.get("counterpart", "")
    if not isinstance(counterpart, str) or (counterpart and not re.fullmatch(r"[a-z0-9][a-z0-9-]*", counterpart)):
        raise FrameworkError(f"{path}: counterpart: expected an adapter name (a framework folder, - for _), "
                             f"got {counterpart!r}")
    served = data.get("served", True)
    if not isinstance(served, bool):
        raise FrameworkError(f"{path}: served: expected true or false, got {served!r}")
    name = adapter_name(folder.name)
    adapter = _declaration(data, Declaration(name), str(path))
    variants = []
    for i, v in enumerate(data.get("variants", [])):
        where = f"{path}: variants[{i}]"
        if not isinstance(v, dict) or not isinstance(v.get("adapter"), str) or ":" not in v["adapter"]:
            raise FrameworkError(f"{where}.adapter: expected an import path package.module:Class")
        unknown = set(v) - {"adapter", "args", "name", "modes", *DECLARED}
        if unknown:
            raise FrameworkError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} "
                                 f"(known: adapter, args, name, modes, {', '.join(DECLARED)})")
        variants.append(Variant(v["adapter"], _strings(v.get("args", []), f"{where}.args"),
                                _variant(v, adapter, where)))
    names = [d.name for d in (adapter, *(v.declaration for v in variants)) if d]
    if len(set(names)) < len(names):
        raise FrameworkError(f"{path}: variants: names must differ from each other and from {name!r}: {names}")
    protocol = _protocol(data.get("protocol"), folder, path)
    if protocol is None and any(d.stop_signals for d in (adapter, *(v.declaration for v in variants)) if d):
        raise FrameworkError(f"{path}: stop_signals: only an adapter process ([protocol]) is stopped by a signal; a "
                             "Python adapter's stop mode is its stop_<mode> method")
    return Framework(name, folder, deps, tuple(variants), docs, _history(data.get("history"), deps, path), adapter,
                     protocol, counterpart, served)


def _protocol(data: object, folder: Path, path: Path) -> Protocol | None:
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != {"command"}:
        raise FrameworkError(f"{path}: protocol: expected a table with command (and nothing else), got {data!r}")
    command = _strings(data["command"], f"{path}: protocol.command")
    if not command or not all(c.strip() for c in command):
        raise FrameworkError(f"{path}: protocol.command: expected the program and its arguments, got {list(command)}")
    if (folder / "adapter.py").exists():
        raise FrameworkError(f"{path}: protocol: the folder has an adapter.py too; a framework's adapter is one "
                             "or the other")
    return Protocol(command, folder)


def _table(data: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise FrameworkError(f"{where}: {key}: expected a table, got {value!r}")
    return value


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise FrameworkError(f"{where}: expected a line of text, got {value!r}")
    return value


def _declaration(data: dict[str, Any], base: Declaration, where: str) -> Declaration:
    """`base` with the declaration fields `data` has (the top level of framework.toml, or a variant) in place of
    its own; unsupported pairs and modes_since of modes it no longer has are left out."""
    found: dict[str, Any] = {}
    if "stop_modes" in data:
        found["stop_modes"] = {str(m): _text(t, f"{where}: stop_modes.{m}")
                               for m, t in _table(data, "stop_modes", where).items()}
    if "resume_primitive" in data:
        found["resume_primitive"] = _text(data["resume_primitive"], f"{where}: resume_primitive")
    if "tool_styles" in data:
        styles = _strings(data["tool_styles"], f"{where}: tool_styles")
        if not styles or set(styles) - set(TOOL_STYLES):
            raise FrameworkError(f"{where}: tool_styles: expected some of {', '.join(TOOL_STYLES)}, got {list(styles)}")
        found["tool_styles"] = styles
    if "environment" in data:
        env = _table(data, "environment", where)
        if not all(isinstance(v, str) for v in env.values()):
            raise FrameworkError(f"{where}: environment: expected NAME = \"value\" strings, got {env!r}")
        found["environment"] = dict(env)
    if "packages" in data:
        found["packages"] = _strings(data["packages"], f"{where}: packages")
    if "providers" in data:
        providers = _strings(data["providers"], f"{where}: providers")
        if not providers or set(providers) - set(PROVIDERS) or len(set(providers)) < len(providers):
            raise FrameworkError(f"{where}: providers: expected some of {', '.join(PROVIDERS)}, each once, the "
                                 f"home one first, got {list(providers)}")
        found["providers"] = providers
    if "stop_signals" in data:
        signals = {}
        for mode, sig in _table(data, "stop_signals", where).items():
            if sig not in STOP_SIGNALS:
                raise FrameworkError(f"{where}: stop_signals.{mode}: expected one of {', '.join(STOP_SIGNALS)}, "
                                     f"got {sig!r}")
            signals[str(mode)] = sig
        found["stop_signals"] = signals
    if "unsupported" in data:
        pairs = {}
        for mode, styles in _table(data, "unsupported", where).items():
            for style, why in _table({mode: styles}, mode, f"{where}: unsupported").items():
                pairs[(mode, style)] = _text(why, f"{where}: unsupported.{mode}.{style}")
        found["unsupported"] = pairs
    if "modes_since" in data:
        since = {}
        for mode, first in _table(data, "modes_since", where).items():
            if not (isinstance(first, dict) and set(first) == {"package", "release"}
                    and all(isinstance(x, str) for x in first.values()) and release_key(first["release"])):
                raise FrameworkError(f"{where}: modes_since.{mode}: expected {{ package = \"...\", release = "
                                     f"\"X.Y\" }}, got {first!r}")
            since[mode] = (first["package"], first["release"])
        found["modes_since"] = since
    out = Declaration(**{**base.__dict__, **found})
    modes, styles = out.stop_modes, out.tool_styles
    for mode, style in found.get("unsupported", {}):
        if mode not in modes or style not in styles:
            raise FrameworkError(f"{where}: unsupported.{mode}.{style}: not a declared stop mode and tool style "
                                 f"(modes: {', '.join(modes) or 'none'}; tool styles: {', '.join(styles)})")
    for key in ("modes_since", "stop_signals"):
        for mode in found.get(key, {}):
            if mode not in modes:
                raise FrameworkError(f"{where}: {key}.{mode}: not a declared stop mode ({', '.join(modes) or 'none'})")
    return Declaration(**{**out.__dict__,
                          "unsupported": {k: v for k, v in out.unsupported.items() if k[0] in modes and k[1] in styles},
                          "modes_since": {k: v for k, v in out.modes_since.items() if k in modes},
                          "stop_signals": {k: v for k, v in out.stop_signals.items() if k in modes}})


def _variant(data: dict[str, Any], framework: Declaration, where: str) -> Declaration:
    """A variant's declaration: its name, and the framework's with the fields it declares in their place
    (`modes`: the framework's stop modes it has)."""
    name = data.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        raise FrameworkError(f"{where}.name: expected the variant's adapter name (lower case, digits, -), got {name!r}")
    base = Declaration(**{**framework.__dict__, "name": name})
    if "modes" in data:
        if "stop_modes" in data:
            raise FrameworkError(f"{where}: modes and stop_modes: declare one (modes picks the framework's)")
        modes = _strings(data["modes"], f"{where}.modes")
        unknown = [m for m in modes if m not in framework.stop_modes]
        if unknown or not modes:
            raise FrameworkError(f"{where}.modes: {unknown or 'none'}: expected some of the framework's stop modes "
                                 f"({', '.join(framework.stop_modes)})")
        base = Declaration(**{**base.__dict__, "stop_modes": {m: framework.stop_modes[m] for m in modes}})
    return _declaration({k: v for k, v in data.items() if k in DECLARED}, base, where)


def _history(data: object, deps: tuple[str, ...], path: Path) -> History | None:
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) - {"package", "releases", "together", "requires"}:
        raise FrameworkError(f"{path}: history: expected a table with package and releases (together, requires: "
                             "optional)")
    package = data.get("package")
    if not isinstance(package, str) or package.lower().replace("_", "-") not in {_bare(d) for d in deps}:
        raise FrameworkError(f"{path}: history.package: {package!r} is not one of the dependencies "
                             f"({', '.join(_bare(d) for d in deps)})")
    releases = _strings(data.get("releases", []), f"{path}: history.releases")
    bad = [r for r in releases if not MINOR.fullmatch(r)]
    if not releases or bad:
        raise FrameworkError(f"{path}: history.releases: expected minor versions like \"1.12\", got {bad or 'none'}")
    deps_bare = {_bare(d) for d in deps}
    together = _strings(data.get("together", []), f"{path}: history.together")
    stray = [t for t in together if _bare(t) not in deps_bare]
    if stray:
        raise FrameworkError(f"{path}: history.together: {', '.join(stray)} not among the dependencies "
                             f"({', '.join(sorted(deps_bare))})")
    requires = _table(data, "requires", f"{path}: history")
    unknown = [r for r in requires if r not in releases]
    if unknown:
        raise FrameworkError(f"{path}: history.requires: {', '.join(unknown)} not among the releases "
                             f"({', '.join(releases)})")
    return History(package.lower().replace("_", "-"), releases, tuple(_bare(t) for t in together),
                   {r: _strings(v, f"{path}: history.requires.{r}") for r, v in requires.items()})


def discover(root: Path = ROOT) -> list[Framework]:
    """Every folder under adapters/ with an adapter.py, or with a framework.toml that declares a [protocol]
    adapter, sorted by name."""
    folder = root / "adapters"
    folders = sorted(p for p in folder.iterdir() if ((p / "adapter.py").exists() or (p / MANIFEST).exists())
                     and not p.name.startswith("_")) if folder.is_dir() else []
    missing = [f for f in folders if not (f / MANIFEST).exists()]
    if missing:
        raise FrameworkError(f"{missing[0] / MANIFEST}: missing (every adapters/<name>/ declares its dependencies)")
    found = [load(f) for f in folders]
    empty = [f for f in found if f.protocol is None and not (f.folder / "adapter.py").exists()]
    if empty:
        raise FrameworkError(f"{empty[0].folder / MANIFEST}: neither an adapter.py beside it nor a [protocol] "
                             "command: the folder has no adapter")
    names = {f.name for f in found}
    for f in found:
        if f.counterpart and f.counterpart not in names:
            raise FrameworkError(f"{f.folder / MANIFEST}: counterpart: {f.counterpart!r} is no framework folder "
                                 f"(known: {', '.join(sorted(names))})")
    return found


def history_runs(root: Path = ROOT, new: str = "") -> list[tuple[str, str]]:
    """(framework, release) of every framework's version history, oldest release first; `new` adds releases
    that appeared since ("fw=1.3,other=0.9", as CI's `history --latest` finds them)."""
    found = [(f.name, r) for f in discover(root) if f.history for r in f.history.releases]
    histories = {f.name: f.history for f in discover(root) if f.history}
    for item in filter(None, (x.strip() for x in new.split(","))):
        name, _, release = item.partition("=")
        if name not in histories or not histories[name].takes(release):
            raise FrameworkError(f"new history release {item!r}: expected FRAMEWORK=X.Y with a framework that "
                                 f"has [history] ({', '.join(histories)}) and a minor newer than its releases")
        found.append((name, release))
    return found


def available_releases(package: str) -> list[str]:
    """Every version of `package` on the package index (`pip index versions`; CI only, it needs the network)."""
    import subprocess

    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", package], capture_output=True,
                         text=True, timeout=120)
    line = next((x for x in out.stdout.splitlines() if x.startswith("Available versions:")), None)
    if out.returncode or line is None:
        raise FrameworkError(f"pip index versions {package}: {out.stderr.strip() or 'no versions listed'}")
    return [v.strip() for v in line.partition(":")[2].split(",")]


def history_matrix(root: Path = ROOT, shards: int = 1, latest: bool = False) -> dict[str, list]:
    """The history's CI matrix: one job per framework x release (x shard); with `latest`, the minors that
    appeared on the package index since the newest declared one too (`new` says which, for the job's env)."""
    runs = [(name, release, "") for name, release in history_runs(root)]
    if latest:
        for f in discover(root):
            if f.history:
                runs += [(f.name, r, f"{f.name}={r}") for r in f.history.newer(available_releases(f.history.package))]
    return {"include": [{"adapter": a, "release": r, "new": new, "shard": k, "of": shards}
                        for a, r, new in runs for k in range(1, shards + 1)]}


def ci_matrix(root: Path = ROOT, shards: int = 1) -> dict[str, list]:
    """The GitHub Actions matrix: one job per framework, or per framework x shard (`--shard K/N`)."""
    matrix: dict[str, list] = {"adapter": [f.name for f in discover(root)]}
    if shards > 1:
        matrix |= {"shard": list(range(1, shards + 1)), "of": [shards]}
    return matrix


def test_suites(root: Path = ROOT) -> list[str]:
    """`core` (the world, the harness and the reference adapter), then one contract suite per framework."""
    return ["core", *[f.name for f in discover(root) if f.name != CORE]]


def _history_args(args: list[str]) -> tuple[int, bool] | None:
    """`[--shards N] [--latest]` -> (N, latest); None when malformed."""
    latest = "--latest" in args
    rest = [a for a in args if a != "--latest"]
    if not rest:
        return 1, latest
    if len(rest) == 2 and rest[0] == "--shards" and rest[1].isdigit() and int(rest[1]) >= 1:
        return int(rest[1]), latest
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        if args[:1] == ["matrix"] and (len(args) == 1 or (len(args) == 3 and args[1] == "--shards"
                                                           and args[2].isdigit() and int(args[2]) >= 1)):
            print(json.dumps(ci_matrix(shards=int(args[2]) if len(args) == 3 else 1)))
        elif args[:1] == ["history"] and _history_args(args[1:]) is not None:  # the history's CI matrix
            shards, latest = _history_args(args[1:]) or (1, False)
            print(json.dumps(history_matrix(shards=shards, latest=latest)))
        elif args == ["list"]:
            for f in discover():
                print(f.name)
        elif len(args) == 2 and args[0] == "requirements":
            found = {f.name: f for f in discover()}
            if args[1] not in found:
                raise FrameworkError(f"unknown framework {args[1]!r} (known: {', '.join(found)})")
            print(" ".join(found[args[1]].install_args()))
        else:
            print("usage: python -m harness.frameworks matrix [--shards N] | history [--shards N] [--latest] | list "
                  "| requirements NAME", file=sys.stderr)
            return 2
    except FrameworkError as e:
        print(f"stopbench frameworks: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
