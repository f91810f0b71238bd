"""`stopbench run | report | list | reap | world | new-adapter`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def cmd_world(args: argparse.Namespace) -> int:
    import signal

    from harness.world.server import serve

    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        serve(args.port, Path(args.scenarios))
    except KeyboardInterrupt:
        pass
    return 0


def build_parser() -> argparse.ArgumentParser:
    from harness.scenario import DEFAULT_SCENARIOS_DIR

    p = argparse.ArgumentParser(prog="stopbench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    w = sub.add_parser("world", help="serve the world standalone; prints its base URL first")
    w.add_argument("--port", type=int, default=0)
    w.add_argument("--scenarios", default=str(DEFAULT_SCENARIOS_DIR))
    w.set_defaults(func=cmd_world)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
