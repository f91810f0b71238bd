// The SDK's documented tracing opt-out (docs: guides/tracing "OPENAI_AGENTS_DISABLE_TRACING=1"), set before
// @openai/agents is imported: importing it installs the OpenAI trace exporter, which would send traces to OpenAI's
// servers. The adapter also calls setTracingDisabled(true), the same switch in code.
process.env.OPENAI_AGENTS_DISABLE_TRACING = "1";
