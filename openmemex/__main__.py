"""``python -m openmemex`` — the same program as ``open-memex`` (used by the merge driver)."""

from openmemex.cli.entry import main

main()
