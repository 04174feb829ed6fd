"""The MCP server (``open-memex mcp``): eleven tools, each a thin call into the core.

``calls`` runs one tool call against the store (a fresh Context per call, the watcher for
freshness, the damaged-index retry, errors as results); ``app`` declares the tools and
renders their results for a model. Only ``app`` imports the MCP SDK.
"""
