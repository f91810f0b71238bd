// A planted JS adapter on the Node kit's serve(): a complete agent loop straight on the model API (Chat Completions,
// not streamed), whose stop aborts its AbortController (the model request and any tool call in flight): the JS
// twin of tests/known_answer/served.py CancelsTheLoop. Served (STOPBENCH_SERVE_HTTP), serve() makes it a Node HTTP
// handler whose request signal presses that stop.
import { serve } from "../../js/stopbench-tools/protocol.mjs";
import { postJson } from "../../js/stopbench-tools/http.mjs";
import { Toolbox } from "../../js/stopbench-tools/tools.mjs";

async function loop(ctx, signal) {
  const toolbox = new Toolbox(ctx);
  const messages = [{ role: "user", content: ctx.prompt }];
  for (;;) {
    const { text } = await postJson(`${ctx.model_base_url}/chat/completions`,
      { model: ctx.model_name, messages, tools: toolbox.openaiDefinitions() }, {}, { signal });
    const message = JSON.parse(text).choices[0].message;
    messages.push(message);
    if (!message.tool_calls?.length) return;
    for (const call of message.tool_calls) {
      const content = await toolbox.call(call.function.name, JSON.parse(call.function.arguments), { signal });
      messages.push({ role: "tool", tool_call_id: call.id, content });
    }
  }
}

serve({
  stops: {
    async cancel() {
      this.controller.abort(new DOMException("stopped", "AbortError"));
    },
  },
  async start(ctx) {
    this.controller = new AbortController();
    this.job = loop(ctx, this.controller.signal);
  },
  isCancel: (e) => e?.name === "AbortError",
  async close() {},
  versions() {
    return { node: process.versions.node };
  },
});
