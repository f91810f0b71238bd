"""A network of its own for a CLI under test: only loopback, the world still reachable, every name it looks up recorded.

    python -m harness.tools.netns --port PORT --names FILE

The process unshares a network namespace (root only) with `lo` up and nothing else, and serves two things in it:
- a relay on 127.0.0.1:PORT (the world's port) to the world on the host's 127.0.0.1:PORT, so the URLs the CLI was
  given work unchanged: each connection accepted inside is matched by one the relay opens in the host's namespace
  (a socket belongs to the namespace it was created in: the relay creates it there with setns, then returns);
- a resolver on each nameserver address of /etc/resolv.conf, added to `lo` inside: it answers every query REFUSED
  and appends `resolve NAME` to FILE, so a lookup by a switch someone missed is counted, never sent.
A connection to any other address fails at once (no route). The CLI joins the namespace with `nsenter --net=
/proc/<pid>/ns/net`, which execs it: the process the user started keeps its pid. The process prints `ready` once
both serve, and ends at SIGTERM.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import selectors
import signal
import socket
import subprocess
import sys
from pathlib import Path

from harness import python_module

CLONE_NEWNET = 0x40000000
RESOLV_CONF = Path("/etc/resolv.conf")
#: how the CLI joins the namespace of the relay with this pid (nsenter execs the command: its pid stays)
JOIN = ("nsenter", "--net=/proc/{pid}/ns/net", "--")


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        raise OSError(ctypes.get_errno(), f"{what}: {os.strerror(ctypes.get_errno())}")


def nameservers(text: str) -> list[str]:
    """The IPv4 nameservers of a resolv.conf."""
    found = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver" and parts[1].count(".") == 3:
            found.append(parts[1])
    return found


def question_name(packet: bytes) -> str:
    """The name asked for in a DNS query (the first question)."""
    labels, i = [], 12
    while i < len(packet) and packet[i]:
        n = packet[i]
        labels.append(packet[i + 1:i + 1 + n].decode(errors="replace"))
        i += 1 + n
    return ".".join(labels)


def refused(packet: bytes) -> bytes:
    """The query answered REFUSED (its id and question kept, no records)."""
    flags = bytes([0x80 | (packet[2] & 0x79), 0x80 | 5]) if len(packet) >= 12 else b"\x80\x05"
    return packet[:2] + flags + packet[4:6] + b"\0\0\0\0\0\0" + packet[12:]


class Relay:
    """The namespace's end of everything: the listener, its pairs of connections, the resolvers."""

    def __init__(self, port: int, names: Path, host_ns: int, inner_ns: int):
        self.port, self.names, self.host_ns, self.inner_ns = port, names, host_ns, inner_ns
        self.selector = selectors.DefaultSelector()
        self.peer: dict[socket.socket, socket.socket] = {}
        listener = socket.create_server(("127.0.0.1", port))
        listener.setblocking(False)
        self.selector.register(listener, selectors.EVENT_READ, self.accept)
        for address in nameservers(RESOLV_CONF.read_text() if RESOLV_CONF.exists() else ""):
            subprocess.run(["ip", "addr", "add", f"{address}/32", "dev", "lo"], check=True)
            resolver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            resolver.bind((address, 53))
            self.selector.register(resolver, selectors.EVENT_READ, self.answer)

    def outside(self) -> socket.socket:
        """A socket of the host's namespace (setns affects this thread only; it comes back at once)."""
        libc = _libc()
        _check(libc.setns(self.host_ns, CLONE_NEWNET), "setns to the host's network")
        try:
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        finally:
            _check(libc.setns(self.inner_ns, CLONE_NEWNET), "setns back")

    def accept(self, listener: socket.socket) -> None:
        inner, _ = listener.accept()
        outer = self.outside()
        try:
            outer.connect(("127.0.0.1", self.port))
        except OSError:
            inner.close()
            outer.close()
            return
        for s in (inner, outer):
            s.setblocking(False)
            self.selector.register(s, selectors.EVENT_READ, self.pipe)
        self.peer[inner], self.peer[outer] = outer, inner

    def pipe(self, s: socket.socket) -> None:
        other = self.peer.get(s)
        if other is None:  # closed with its pair earlier in the same round of events
            return
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if data:
            try:
                other.setblocking(True)
                other.sendall(data)
                other.setblocking(False)
                return
            except OSError:
                pass
        for end in (s, other):  # one side closed: close both
            self.selector.unregister(end)
            self.peer.pop(end, None)
            end.close()

    def answer(self, resolver: socket.socket) -> None:
        packet, sender = resolver.recvfrom(4096)
        with self.names.open("a") as f:
            f.write(f"resolve {question_name(packet)}\n")
        resolver.sendto(refused(packet), sender)

    def serve(self) -> None:
        while True:
            for key, _ in self.selector.select():
                try:
                    key.data(key.fileobj)
                except OSError as e:  # one connection's trouble, never the relay's end
                    print(f"netns relay: {e}", file=sys.stderr, flush=True)


class IsolatedNetwork:
    """The subject's side: the relay process started (a descendant of the harness's own, which the adapter names as
    its apparatus so that no audit counts it), the command that joins its namespace, and the names looked up in it."""

    def __init__(self, port: int, workdir: Path):
        self.names = workdir / "netns-names.log"
        self.process = subprocess.Popen([*python_module("tools.netns"), "--port", str(port),
                                         "--names", str(self.names)], stdout=subprocess.PIPE,
                                        stderr=open(workdir / "netns-stderr.log", "wb"))  # noqa: SIM115 (its own)
        line = self.process.stdout.readline() if self.process.stdout else b""
        if line.strip() != b"ready":
            self.close()
            raise OSError(f"the network namespace did not start: {(workdir / 'netns-stderr.log').read_text()[-300:]}")

    def join(self, argv: list[str]) -> list[str]:
        """`argv` run inside the namespace, as the same process (nsenter execs it)."""
        return [JOIN[0], JOIN[1].format(pid=self.process.pid), *JOIN[2:], *argv]

    def egress(self) -> list[str]:
        """What was looked up inside so far (`resolve NAME`), each name once, in order: one lookup sends several
        queries (A and AAAA, a retry after REFUSED), and a lookup is one attempt."""
        lines = self.names.read_text().splitlines() if self.names.exists() else []
        return list(dict.fromkeys(lines))

    def close(self) -> None:
        self.process.terminate()
        self.process.wait()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--names", type=Path, required=True)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    host_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
    _check(_libc().unshare(CLONE_NEWNET), "unshare a network namespace")
    inner_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    args.names.touch()
    relay = Relay(args.port, args.names, host_ns, inner_ns)
    print("ready", flush=True)
    relay.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
