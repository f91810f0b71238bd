// A planted adapter process on the Node kit's serve(): its job streams the answer over node:http; as soon as the
// request is written its event loop is busy for 300 ms (a framework at work, a process at nice 19), so a stop sent
// then waits in the pipe; once handled, the stop aborts the request at once. Its delivery is slow, its handling
// instant.
import http from "node:http";
import { serve } from "../../js/stopbench-tools/protocol.mjs";

const BUSY_MS = 300;

function busy(ms) {
  const until = Date.now() + ms;
  while (Date.now() < until) { /* the event loop reads nothing meanwhile */ }
}

serve({
  stops: {
    abort() {
      this.controller.abort();
    },
  },
  async start(ctx) {
    this.controller = new AbortController();
    this.chunks = 0;
    const body = JSON.stringify({ model: ctx.model_name, stream: true,
                                  messages: [{ role: "user", content: ctx.prompt }] });
    this.job = new Promise((resolve, reject) => {
      const request = http.request(`${ctx.model_base_url}/chat/completions`, {
        method: "POST", headers: { "content-type": "application/json" }, signal: this.controller.signal,
      }, (response) => {
        response.on("data", () => { this.chunks += 1; }); // read every token
        response.on("end", resolve);
        response.on("error", reject);
      });
      request.on("error", reject);
      request.on("finish", () => busy(BUSY_MS)); // written: the world has it, the stop is on its way
      request.end(body);
    });
  },
  isCancel: (e) => e?.name === "AbortError",
  async reportedUsage() {
    return this.chunks; // its usage account: a token per chunk it read
  },
  async close() {},
  versions() {
    return { node: process.versions.node };
  },
});
