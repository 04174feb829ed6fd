"""Git-native sync and review: pygit2 in-process for everything except fetch and push,
which go through ``transport`` (SPEC §2)."""
