"""The adapter protocol's wire (docs/adapter-protocol.md): one adapter process, JSON-RPC 2.0 messages one per
line over its stdin and stdout, answers matched to requests by id.

Everything an adapter process writes is checked here, once: a line that is not a message of the protocol, an
answer to no request, a result whose fields are not the method's, breaks the connection, and every request
waiting on it (and every later one) fails with a `ProtocolError` that names the adapter, the message and the
field. The reading is a callback on the loop (`add_reader`), not a task or a thread of the harness, so the
subject's own audit sees nothing of the plumbing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

PROTOCOL_VERSION = 1
#: error codes an adapter answers with (JSON-RPC's own -32700 .. -32600 are for malformed requests)
NO_RESUME = -32001  # the framework offers no way to continue the stopped run
FAILED = -32002  # the framework's call raised; `message` says what
#: how a job ended, in the answer to `wait`
ENDINGS = ("completed", "cancelled", "failed")
#: what an adapter process may say it holds, in the answer to `audit` (harness/trial/activity.py HELD)
HELD_KINDS = ("timer", "immediate", "request", "socket", "child", "worker", "other")
#: how many bytes of a bad line an error message quotes
QUOTE = 120


class ProtocolError(RuntimeError):
    """The adapter process broke the protocol (or is gone); the message names the adapter, the message, the field."""


class AdapterFailed(RuntimeError):
    """The adapter answered a request with an error: its framework's call raised."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def _quote(line: bytes | str) -> str:
    text = line if isinstance(line, str) else line.decode(errors="replace")
    return repr(text[:QUOTE] + ("..." if len(text) > QUOTE else ""))


def _field(where: str, name: str, expected: str, got: Any) -> ProtocolError:
    return ProtocolError(f"{where}: field {name!r}: expected {expected}, got {json.dumps(got)[:QUOTE]}")


def check_result(method: str, result: Any, where: str) -> dict[str, Any]:
    """The result of `method` as the protocol defines it, or ProtocolError naming the field."""
    if not isinstance(result, dict):
        raise _field(where, "result", "an object", result)
    if method == "wait":
        if result.get("ended") not in ENDINGS:
            raise _field(where, "ended", f"one of {', '.join(ENDINGS)}", result.get("ended"))
        if not isinstance(result.get("error"), (str, type(None))):
            raise _field(where, "error", "a string or null", result.get("error"))
    elif method == "versions":
        packages = result.get("packages")
        if not isinstance(packages, dict) or not all(isinstance(v, str) for v in packages.values()):
            raise _field(where, "packages", "an object of package name -> version string", packages)
    elif method == "audit":
        held = result.get("held")
        if not isinstance(held, list):
            raise _field(where, "held", "a list", held)
        for i, item in enumerate(held):
            if not (isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("what"), str)):
                raise _field(where, f"held[{i}]", "an object with string id and what", item)
            if item.get("kind") not in HELD_KINDS:
                raise _field(where, f"held[{i}].kind", f"one of {', '.join(HELD_KINDS)}", item.get("kind"))
        egress = result.get("egress", [])
        if not isinstance(egress, list) or not all(isinstance(e, str) for e in egress):
            raise _field(where, "egress", "a list of strings", egress)
    return result


def _die_with_parent() -> None:
    """In the adapter process before it runs: SIGKILL when the process that started it dies (PR_SET_PDEATHSIG), as
    the app around the agent dies with its host; its own children are left to themselves, and are found."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


class Connection:
    """One adapter process: `request(method, params)` -> its result; `notes` gets what it says unasked."""

    def __init__(self, name: str, proc: subprocess.Popen, stderr_path: Path | None,
                 on_note: Callable[[str, dict[str, Any]], None]):
        self.name = name
        self.proc = proc
        self.stderr_path = stderr_path
        self.on_note = on_note
        self.loop = asyncio.get_running_loop()
        self.pending: dict[int, tuple[str, asyncio.Future]] = {}
        self.next_id = 1
        self.broken: ProtocolError | None = None
        self.exited = self.loop.create_future()  # set at the end of stdout: the process is gone or going
        self.failed = self.loop.create_future()  # set to the first violation (or the end of the process)
        self._buffer = b""
        self._fd = proc.stdout.fileno()  # type: ignore[union-attr]
        os.set_blocking(self._fd, False)
        self.loop.add_reader(self._fd, self._readable)

    @classmethod
    def spawn(cls, name: str, command: list[str], cwd: Path, env: Mapping[str, str], stderr_path: Path | None,
              on_note: Callable[[str, dict[str, Any]], None]) -> Connection:
        """Start the adapter process as a child of this one (so an audit and a subreaper find it and its
        children), its stderr in `stderr_path`."""
        err = stderr_path.open("ab") if stderr_path is not None else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(command, cwd=cwd, env=dict(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=err, preexec_fn=_die_with_parent)
        except OSError as e:
            raise ProtocolError(f"{name}: cannot start {' '.join(command)} in {cwd}: {e.strerror or e}") from e
        finally:
            if stderr_path is not None:
                err.close()  # type: ignore[union-attr]
        return cls(name, proc, stderr_path, on_note)

    @property
    def pid(self) -> int:
        return self.proc.pid

    # --- reading --------------------------------------------------------------------------------

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._ended()
            return
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            if self.broken is None:
                self._line(line)

    def _ended(self) -> None:
        self.loop.remove_reader(self._fd)
        if not self.exited.done():
            self.exited.set_result(None)
        try:  # a process that closed its stdout is exiting: its status, if it comes at once
            code: int | None = self.proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            code = None
        why = f"exited with {code}" if code is not None else "closed its stdout"
        self._break(ProtocolError(f"{self.name}: the adapter process {why}{self.stderr_tail()}"))

    def stderr_tail(self, lines: int = 5) -> str:
        try:
            tail = self.stderr_path.read_text(errors="replace").strip().splitlines()[-lines:]  # type: ignore[union-attr]
        except (OSError, AttributeError):
            return ""
        return "; its stderr ends: " + " | ".join(tail) if tail else ""

    def _line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._break(ProtocolError(f"{self.name}: stdout line {_quote(line)} is not a JSON message (stdout "
                                      "carries protocol messages only; logs go to stderr)"))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self._break(_field(f"{self.name}: message {_quote(line)}", "jsonrpc", '"2.0"',
                               message.get("jsonrpc") if isinstance(message, dict) else message))
            return
        if "id" not in message:  # a notification: capabilities, stopped
            method = message.get("method")
            params = message.get("params", {})
            if not isinstance(method, str) or not isinstance(params, dict):
                self._break(_field(f"{self.name}: notification {_quote(line)}", "method",
                                   "a method name with object params", method))
                return
            try:
                self.on_note(method, params)
            except ProtocolError as e:
                self._break(e)
            return
        self._answer(message, line)

    def _answer(self, message: dict[str, Any], line: bytes) -> None:
        rid = message["id"]
        if rid not in self.pending:
            self._break(_field(f"{self.name}: answer {_quote(line)}", "id", "the id of a request waiting for its "
                               f"answer ({', '.join(map(str, self.pending)) or 'none'})", rid))
            return
        method, fut = self.pending.pop(rid)
        where = f"{self.name}: answer to {method} (id {rid})"
        if ("result" in message) == ("error" in message):
            self.pending[rid] = (method, fut)  # fails with the others
            self._break(ProtocolError(f"{where}: fields 'result' and 'error': expected exactly one of them"))
            return
        if "error" in message:
            error = message["error"]
            if not (isinstance(error, dict) and isinstance(error.get("code"), int)
                    and isinstance(error.get("message"), str)):
                self.pending[rid] = (method, fut)
                self._break(_field(where, "error", "an object with integer code and string message", error))
                return
            if not fut.done():
                fut.set_exception(AdapterFailed(f"{self.name}: {method}: {error['message']}", error["code"]))
            return
        try:
            result = check_result(method, message["result"], where)
        except ProtocolError as e:
            self.pending[rid] = (method, fut)
            self._break(e)
            return
        if not fut.done():
            fut.set_result(result)

    def _break(self, error: ProtocolError) -> None:
        """The first violation (or the end of the process) ends the conversation: everything waiting fails with it."""
        if self.broken is None:
            self.broken = error
            self.failed.set_result(error)
        for _, fut in self.pending.values():
            if not fut.done():
                fut.set_exception(self.broken)
        self.pending.clear()

    # --- writing --------------------------------------------------------------------------------

    def send(self, method: str, params: dict[str, Any] | None = None) -> asyncio.Future:
        """Write a request; the future gets its result (or AdapterFailed / ProtocolError)."""
        fut = self.loop.create_future()
        if self.broken is not None:
            fut.set_exception(self.broken)
            return fut
        rid, self.next_id = self.next_id, self.next_id + 1
        self.pending[rid] = (method, fut)
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}) + "\n"
        try:
            self.proc.stdin.write(line.encode())  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except (BrokenPipeError, ValueError, OSError):
            self._break(ProtocolError(f"{self.name}: cannot send {method}: the adapter process closed its stdin"
                                      f"{self.stderr_tail()}"))
        return fut

    async def request(self, method: str, params: dict[str, Any] | None = None,
                      timeout_s: float | None = None) -> dict[str, Any]:
        fut = self.send(method, params)
        if timeout_s is None:
            return await fut
        try:
            return await asyncio.wait_for(fut, timeout_s)
        except TimeoutError:
            raise ProtocolError(f"{self.name}: no answer to {method} within {timeout_s:g} s (an adapter answers "
                                "every request, also while its agent is busy)") from None

    # --- ending ---------------------------------------------------------------------------------

    async def end(self, exit_s: float) -> int | None:
        """Close its stdin and give it `exit_s` to exit on its own; then SIGKILL. Returns its exit code if it
        exited on its own, else None."""
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        deadline = self.loop.time() + exit_s
        while self.proc.poll() is None and self.loop.time() < deadline:
            await asyncio.sleep(0.01)
        code = self.proc.poll()
        if code is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            while self.proc.poll() is None:  # polled, not waited for on a thread: no thread of ours in the audit
                await asyncio.sleep(0.005)
        if not self.exited.done():
            self._ended()
        return code

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signum)
