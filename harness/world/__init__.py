"""The fake outside world: scripted model API, side-effect services, MCP server and the ledger."""
