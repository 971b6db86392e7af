"""The MCP tools, one module per group; each module's ``register(server, sk)`` adds its tools."""
