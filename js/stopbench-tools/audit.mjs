// What this process holds, for the protocol's `audit` (docs/adapter-protocol.md): every pending timer (ref'd or
// not: an unref'd timer still fires while the app lives), immediate, runtime request, socket, child process and
// worker thread, tracked from its creation to its end by node:async_hooks. The harness counts them by its own rule
// of idle and scheduled work (harness/trial/activity.py HELD); this module only says what is there.
// process.getActiveResourcesInfo() lists only what keeps the process alive (no unref'd timer), hence the hook.
// It also records every attempt to reach anything but loopback (a name resolved, a connection tried), as the
// subject's audit hook does for Python sockets: `egress_attempts`.
import { createHook } from "node:async_hooks";
import { subscribe } from "node:diagnostics_channel";
import { isIP } from "node:net";

/** async_hooks resource type -> the protocol's kind */
const KINDS = {
  Timeout: "timer",
  Immediate: "immediate",
  FSREQCALLBACK: "request",
  FSREQPROMISE: "request",
  GETADDRINFOREQWRAP: "request",
  GETNAMEINFOREQWRAP: "request",
  QUERYWRAP: "request",
  TCPCONNECTWRAP: "request",
  PIPECONNECTWRAP: "request",
  TCPWRAP: "socket",
  TCPSERVERWRAP: "socket",
  UDPWRAP: "socket",
  PROCESSWRAP: "child",
  WORKER: "worker",
};

const live = new Map();

function describe(type, resource) {
  if (type === "Timeout") {
    const fn = resource?._onTimeout?.name || "anonymous";
    const every = resource?._repeat ? "setInterval" : "setTimeout";
    return `${every}(${fn}, ${resource?._idleTimeout} ms)${resource?.hasRef?.() === false ? " unref'd" : ""}`;
  }
  if (type === "Immediate") return `setImmediate(${resource?._onImmediate?.name || "anonymous"})`;
  return type;
}

createHook({
  init(asyncId, type, _trigger, resource) {
    const kind = KINDS[type];
    if (kind) live.set(asyncId, { kind, type, resource: new WeakRef(resource) });
  },
  destroy(asyncId) {
    live.delete(asyncId);
  },
}).enable();

/** What the process holds now: [{id, kind, what}]. A timer that ran (or was cleared) is gone. */
export function held() {
  const out = [];
  for (const [id, item] of live) {
    const resource = item.resource.deref();
    // a timer or an immediate that ran or was cleared says so at once; its destroy hook may come later
    if ((item.kind === "timer" || item.kind === "immediate") && (resource === undefined || resource._destroyed)) {
      live.delete(id);
      continue;
    }
    out.push({ id: String(id), kind: item.kind, what: describe(item.type, resource) });
  }
  return out;
}

const attempts = [];

function loopback(host) {
  if (host === undefined || host === null || host === "" || host === "localhost" || String(host).endsWith(".localhost")) {
    return true;
  }
  const bare = String(host).replace(/^::ffff:/, "").split("%")[0];
  return isIP(bare) === 4 ? bare.startsWith("127.") : bare === "::1";
}

// every TCP client socket of the process (node:net, and undici's fetch, which connects through it)
subscribe("net.client.socket", ({ socket }) => {
  socket.once("lookup", (_err, _address, _family, host) => {
    if (!loopback(host)) attempts.push(`resolve ${host}`);
  });
  socket.once("connect", () => {
    if (!loopback(socket.remoteAddress)) attempts.push(`connect ${socket.remoteAddress}:${socket.remotePort}`);
  });
  socket.once("error", (error) => {
    if (error?.address && !loopback(error.address)) attempts.push(`connect ${error.address}:${error.port ?? ""}`);
  });
});

/** Every attempt so far to reach anything but loopback, in order: "resolve HOST", "connect ADDRESS:PORT". */
export function egress() {
  return [...attempts];
}
