"""MCP: the tools without the SDK (`tools.py`), the server over the SDK, and its stdio and HTTP transports."""
