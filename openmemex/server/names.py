"""The tool names, importable without the MCP SDK (doctor checks the live list against them)."""

TOOL_NAMES = (
    "memory_add", "memory_search", "memory_list", "memory_supersede", "memory_forget", "memory_status",
    "memory_submit", "memory_propose", "memory_promote", "memory_resolve", "memory_pr_status",
)  # fmt: skip
