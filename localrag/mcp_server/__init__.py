"""The MCP server (`localrag mcp`): the index as tools for other assistants."""
