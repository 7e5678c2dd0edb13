"""The MCP front end: `cmem mcp`, the three retrieval layers as tools over stdio."""
