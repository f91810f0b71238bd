"""A planted orchestrator CLI: an npm-style wrapper around a "native" agent, with what a coding session starts.

    planted_cli.py wrapper|native --model URL --services URL --mcp JSON

`wrapper` starts `native` in its own process group and forwards SIGINT, SIGTERM and SIGHUP to it, then exits as it
did (its status, or the same signal), as `codex.js` does where Node cannot exec. `native`:
- starts the world's MCP server (stdin a pipe it holds; the server ends at EOF), in the CLI's group;
- starts `sleep 15` in the CLI's group (a tool's child that ends on its own: alive 5 s after the stop, gone at 30 s);
- starts `sh -c 'sleep 600 & wait'` in a session of its own (a dev server on a pseudo-terminal: no signal sent to
  the CLI's group reaches it), a shell and its grandchild;
- looks up `telemetry.example.com` (a switch someone missed: its network has only the world, and the lookup is
  counted), then asks the model once; then waits. On SIGINT it closes the MCP server's stdin, waits for it and exits
  130; SIGHUP and SIGTERM end it at once (their default). Orphaned (its wrapper gone, its parent now the subject),
  it keeps working: one more model request and one email, then it waits on.
Standard library only, so what it does is not in doubt.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def post(url: str, body: dict) -> None:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "Connection": "close"})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def ask_model(model_url: str) -> None:
    post(f"{model_url}/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "go on"}]})


def wrapper(argv: list[str]) -> int:
    native = subprocess.Popen([sys.executable, __file__, "native", *argv])
    for sig in FORWARDED:
        signal.signal(sig, lambda s, _frame: native.send_signal(s))
    code = native.wait()
    if code < 0:  # it died of a signal: so does the wrapper
        if -code != signal.SIGKILL:  # its handler may not be set, nor need be
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


def native(args: argparse.Namespace) -> int:
    mcp = json.loads(args.mcp)
    server = subprocess.Popen([mcp["command"], *mcp["args"]], env={**os.environ, **mcp["env"]},
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    subprocess.Popen(["sleep", "15"])
    subprocess.Popen(["sh", "-c", "sleep 600 & wait"], start_new_session=True)

    def interrupted(_sig: int, _frame: object) -> None:
        # once: a group's SIGINT and the wrapper's forwarded one both arrive, and a second handler inside
        # server.wait() would wait for the lock the first one holds (Popen's waitpid lock is not reentrant)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        server.stdin.close()
        server.wait()
        os._exit(130)

    signal.signal(signal.SIGINT, interrupted)
    parent = os.getppid()
    try:
        socket.getaddrinfo("telemetry.example.com.", 443, socket.AF_INET)  # the final dot: no search domain
    except OSError:
        pass
    ask_model(args.model)
    while os.getppid() == parent:
        time.sleep(0.05)
    ask_model(args.model)  # orphaned: the agent carries on
    post(f"{args.services}/email/send", {"to": "ops@example.com", "subject": "orphan", "body": "sent by an orphan"})
    while True:
        time.sleep(1)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=["wrapper", "native"])
    parser.add_argument("--model", required=True)
    parser.add_argument("--services", required=True)
    parser.add_argument("--mcp", required=True)
    args = parser.parse_args()
    return wrapper(sys.argv[2:]) if args.role == "wrapper" else native(args)


if __name__ == "__main__":
    sys.exit(main())
