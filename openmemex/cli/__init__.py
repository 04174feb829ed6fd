"""Command-line surface: parses arguments, calls core, renders results. No memory logic."""
