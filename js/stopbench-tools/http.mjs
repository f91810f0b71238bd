// A minimal HTTP/1.1 client on node:net for the scenario's tools, as harness/tools/loopback_http.py is for the
// harness's: one connection per request (`Connection: close`, so none stays open and no keep-alive timer is
// left behind), the send time stamped once the connection is open, just before the one write of head and body.
// An aborted signal closes the connection, as cancelling an httpx call does.
import net from "node:net";

/** The name of the send-time header (harness/vocabulary.py SENT_HEADER). */
export const SENT_HEADER = "X-Stopbench-Sent-Ns";

/** CLOCK_MONOTONIC in ns, the clock of the world's ledger and the trial's marks (libuv's uv_hrtime). */
export function monotonicNs() {
  return process.hrtime.bigint();
}

export class HttpError extends Error {}

/**
 * POST `body` as JSON to `url`; resolves to {status, text}.
 * `sendTime()` is called once the connection is open and returns the stamp (it may throw: nothing is written).
 */
export function postJson(url, body, headers = {}, { timeoutMs = 30000, signal, sendTime = monotonicNs } = {}) {
  const target = new URL(url);
  const data = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const socket = net.connect({ host: target.hostname, port: Number(target.port || 80) });
    const chunks = [];
    let settled = false;
    const finish = (error, value) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      error ? reject(error) : resolve(value);
    };
    const onAbort = () => finish(signal.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.setTimeout(timeoutMs, () => finish(new HttpError(`POST ${url}: no answer within ${timeoutMs} ms`)));
    socket.once("connect", () => {
      let sent;
      try {
        sent = sendTime();
      } catch (error) {
        finish(error); // not sent: nothing was written
        return;
      }
      const head = [
        `POST ${target.pathname}${target.search} HTTP/1.1`,
        `Host: ${target.host}`,
        "Connection: close",
        "Content-Type: application/json",
        `Content-Length: ${data.length}`,
        ...Object.entries(headers).filter(([k]) => k.toLowerCase() !== SENT_HEADER.toLowerCase())
          .map(([k, v]) => `${k}: ${v}`),
        `${SENT_HEADER}: ${sent}`,
      ];
      socket.write(Buffer.concat([Buffer.from(head.join("\r\n") + "\r\n\r\n", "latin1"), data]));
    });
    socket.on("data", (chunk) => chunks.push(chunk));
    socket.on("error", (error) => finish(error));
    socket.on("end", () => {
      try {
        finish(null, parse(Buffer.concat(chunks), url));
      } catch (error) {
        finish(error);
      }
    });
  });
}

function parse(raw, url) {
  const split = raw.indexOf("\r\n\r\n");
  if (split < 0) throw new HttpError(`POST ${url}: not an HTTP answer: ${JSON.stringify(raw.subarray(0, 80).toString())}`);
  const lines = raw.subarray(0, split).toString("latin1").split("\r\n");
  const status = Number(lines[0].split(" ")[1]);
  if (!Number.isInteger(status)) throw new HttpError(`POST ${url}: not an HTTP answer: ${JSON.stringify(lines[0])}`);
  const found = Object.fromEntries(lines.slice(1).map((l) => {
    const i = l.indexOf(":");
    return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()];
  }));
  let payload = raw.subarray(split + 4);
  if ((found["transfer-encoding"] || "").toLowerCase() === "chunked") payload = unchunk(payload);
  else if (found["content-length"] !== undefined) payload = payload.subarray(0, Number(found["content-length"]));
  return { status, text: payload.toString() };
}

function unchunk(data) {
  const out = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf("\r\n", at);
    if (eol < 0) break;
    const size = parseInt(data.subarray(at, eol).toString().split(";")[0], 16);
    if (!size) break;
    out.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}
