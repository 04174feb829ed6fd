"""JSON with comments (JSONC: ``//`` and ``/* */`` comments, trailing commas), read the
same way everywhere — our own config.json (D63) and the editors' config files init looks
at. Strings are left alone: ``"a,}"`` and ``"x // y"`` keep their characters."""

from __future__ import annotations


def strip_jsonc(text: str) -> str:
    """``text`` without comments and trailing commas, strings untouched."""
    return _drop_trailing_commas(_drop_comments(text))


def _drop_comments(text: str) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            j = _string_end(text, i)
            out.append(text[i:j])
            i = j
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            out.append(" ")
            i = n if end < 0 else end + 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _drop_trailing_commas(text: str) -> str:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            j = _string_end(text, i)
            out.append(text[i:j])
            i = j
            continue
        if text[i] == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]":
                i += 1
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _string_end(text: str, start: int) -> int:
    """The index just past the JSON string that opens at ``start``."""
    j = start + 1
    while j < len(text) and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j + 1
