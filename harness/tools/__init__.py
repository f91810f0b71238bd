"""The scenario tools: the catalogue, the one implementation (sync and async), the MCP server, idempotency keys."""
