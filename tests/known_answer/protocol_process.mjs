// Adapter processes of known, deliberate behaviour, speaking the adapter protocol by hand (no kit): the harness's
// side (harness/contract/protocol.py) must report exactly what each one plants. Node built-ins only, and
// stopbench-tools' audit and tools by path, so the core tests need no npm install.
//   node protocol_process.mjs BEHAVIOUR NAME (its name is in the declaration the harness hands over)
import { spawn } from "node:child_process";
import net from "node:net";
import { createInterface } from "node:readline";
import { egress, held } from "../../js/stopbench-tools/audit.mjs";
import { Toolbox } from "../../js/stopbench-tools/tools.mjs";

const [behaviour] = process.argv.slice(2);
const EMAIL = { to: "ops@example.com", subject: "leak", body: "sent after stop" };
const POST = { channel: "#ops", text: "still here" };
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");

// the declaration the harness hands over (here the known-answer class's attributes), said back as capabilities
const { declared_in: _, ...declared } = JSON.parse(process.env.STOPBENCH_DECLARATION);
if (behaviour === "bad-capabilities") declared.stop_modes.abort = { primitive: "a mode its declaration does not have" };
if (behaviour === "own-text") declared.stop_modes.cancel.primitive = "its own words for the mode"; // a copy drifted
send({ method: "capabilities", params: { protocol: 1, ...declared } });
if (behaviour === "sigterm-exits") process.on("SIGTERM", () => process.exit(0)); // the app ends on the signal
if (behaviour === "sigterm-emails") {
  // the app's handler sends one email, ends the job, then says it stopped
  process.on("SIGTERM", async () => {
    await toolbox.call("send_email", EMAIL);
    endJob("cancelled");
    send({ method: "stopped", params: { signal: "SIGTERM" } });
  });
}

let endJob;
const job = new Promise((resolve) => (endJob = resolve));
let toolbox;

const handlers = {
  start(ctx) {
    toolbox = new Toolbox(ctx);
    // a framework that logs with process.stdout.write: the line lands among the protocol's messages
    if (behaviour === "junk-on-stdout") process.stdout.write("framework says hi\n");
    // a child the app never ends (a tool's helper, an MCP server deaf to everything)
    if (behaviour === "leaves-child") spawn("sleep", ["60"], { stdio: "ignore" });
    // a framework that phones home as it starts: one name to resolve beyond loopback (no network here)
    if (behaviour === "phones-home") net.connect(443, "telemetry.example.com").on("error", () => {});
    if (behaviour === "crashes-at-start") {
      process.stderr.write("framework: cannot find its model\n");
      process.exit(3);
    }
    return {};
  },
  async stop() {
    if (behaviour === "never-answers-stop") return new Promise(() => {});
    endJob("cancelled");
    // what each leaves behind: a timer of the run, pending when stop is answered
    if (behaviour === "emails-after-stop") setTimeout(function emailer() { toolbox.call("send_email", EMAIL); }, 300);
    if (behaviour === "timer-then-email") setTimeout(function late() { toolbox.call("send_email", EMAIL); }, 3500);
    if (behaviour === "posts-forever") setInterval(function poster() { toolbox.call("post_chat", POST); }, 500);
    return {};
  },
  async wait() {
    if (behaviour === "bad-wait-answer") return { ended: "done" };
    return { ended: await job, error: null };
  },
  resume() {
    throw Object.assign(new Error("no state was kept"), { code: -32001 });
  },
  close: () => ({}),
  versions: () => ({ packages: { node: process.versions.node } }),
  audit: () => ({ held: held(), egress: egress() }),
};

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  const { id, method, params } = JSON.parse(line);
  Promise.resolve()
    .then(() => handlers[method](params))
    .then((result) => send({ id, result }),
      (error) => send({ id, error: { code: error.code ?? -32002, message: String(error) } }));
});
lines.on("close", () => setTimeout(() => process.exit(0), 20));
