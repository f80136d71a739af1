"""Tools: MCP calls that take seconds, blocking against in the background (`bench tools`)."""
