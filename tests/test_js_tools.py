"""The scenario's tools in Node (js/stopbench-tools/tools.mjs) send what harness/tools sends: the send-time stamp on
the shared monotonic clock, the Idempotency-Key of each mitigation, the saga log line, the answer as Python's
json.dumps writes it, one connection per call. Checked against a loopback server and the Python implementation."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.contract.protocol import tool_catalogue
from harness.tools.catalogue import COMPENSATION_PATH, TOOL_KIND, logical_effect
from harness.tools.mitigation import KeyPolicy, SagaLog, bump_generations
from harness.vocabulary import SENT_HEADER

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
TOOLS = Path(__file__).resolve().parent.parent / "js" / "stopbench-tools" / "tools.mjs"
ARGS = {"to": "zoë@example.com", "subject": "Q3 ✓ \"report\"", "body": "line 1\nline 2 \U0001f600"}
ANSWER = {"effect_id": "em-1", "kind": "email", "status": "committed", "committed_ns": 123456789}


@pytest.fixture()
def service():
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body),
                         "arrived": time.monotonic_ns()})
            status = 500 if self.path.endswith("/pr/open") else 200
            data = (json.dumps(ANSWER) if status == 200 else "service down").encode()
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/runs/r1", seen
    server.shutdown()


def call_in_node(ctx: dict, name: str, args: dict) -> subprocess.CompletedProcess:
    script = (f"import {{ Toolbox }} from {json.dumps(TOOLS.as_uri())};"
              f"const box = new Toolbox({json.dumps(ctx)});"
              f"box.call({json.dumps(name)}, {json.dumps(args)}).then((t) => process.stdout.write(t),"
              " (e) => { process.stdout.write('ERROR ' + e.message); });")
    return subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)


def context(url: str, workdir: Path, idempotency: str, saga: bool) -> dict:
    return {"run_id": "r1", "services_base_url": url, "workdir": str(workdir), "idempotency": idempotency,
            "saga_log": str(workdir / "saga.jsonl") if saga else None, "tools": tool_catalogue(),
            "compensations": COMPENSATION_PATH, "stop_button": None}


def test_an_idempotent_call_carries_the_python_key_the_send_stamp_and_the_saga_line(service, tmp_path):
    url, seen = service
    logical = logical_effect(TOOL_KIND["send_email"], ARGS)
    bump_generations(tmp_path, [logical, logical])  # generation 2: the key moves on after two compensations
    before = time.monotonic_ns()
    out = call_in_node(context(url, tmp_path, "idempotent", saga=True), "send_email", ARGS)
    (request,) = seen
    assert out.stdout == json.dumps(ANSWER), out.stderr
    assert request["path"] == "/runs/r1/email/send" and request["body"] == ARGS
    key = KeyPolicy("r1", tmp_path)("send_email", ARGS)
    assert key == f"r1-{logical}-2"
    assert request["headers"]["Idempotency-Key"] == key
    assert before < int(request["headers"][SENT_HEADER]) <= request["arrived"]  # one clock, stamped as it left
    assert request["headers"]["Connection"] == "close"
    python_log = tmp_path / "python"
    python_log.mkdir()
    SagaLog(python_log).attempt("send_email", ARGS, key)
    assert (tmp_path / "saga.jsonl").read_text() == (python_log / "saga.jsonl").read_text()


def test_a_saga_without_idempotency_gets_a_fresh_key_per_call_and_no_key_without_a_mitigation(service, tmp_path):
    url, seen = service
    call_in_node(context(url, tmp_path, "per_call", saga=True), "send_email", ARGS)
    call_in_node(context(url, tmp_path, "none", saga=False), "send_email", ARGS)
    call_in_node(context(url, tmp_path, "idempotent", saga=False), "draft_document", {"title": "t", "topic": "q"})
    assert re.fullmatch(r"r1-call-[0-9a-f]{16}", seen[0]["headers"]["Idempotency-Key"])
    assert "Idempotency-Key" not in seen[1]["headers"]
    assert "Idempotency-Key" not in seen[2]["headers"]  # a tool without a side effect has no key


def test_a_service_error_is_a_tool_error_worded_as_in_python(service, tmp_path):
    url, _ = service
    out = call_in_node(context(url, tmp_path, "none", saga=False), "open_pr", {"title": "t", "branch": "b"})
    assert out.stdout == "ERROR /runs/r1/pr/open: HTTP 500: service down"
