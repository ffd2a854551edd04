"""Where in the plan file a key is, so every error names file, line and key."""

from __future__ import annotations

import re
from pathlib import Path

_TABLE = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\" ]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"]+)\s*=")


def line_of(text: str, loc: tuple[str | int, ...]) -> int:
    """The line of the key at `loc` (section, key, ...): the key's own line in
    its table, else the table's header, else 0."""
    parts = [str(p) for p in loc if not isinstance(p, int)]
    if not parts:
        return 0
    table, key = parts[0], parts[1] if len(parts) > 1 else None
    current, header = "", 0
    for no, line in enumerate(text.splitlines(), 1):
        if m := _TABLE.match(line):
            current = m.group(1).replace('"', "").replace(" ", "")
            if current == table and not header:
                header = no
            continue
        m = _KEY.match(line)
        if not m:
            continue
        name = m.group(1).strip('"')
        if current == table and key is not None and name == key:
            return no
        if current == "" and name == table:
            return no
        if current.startswith(table + ".") and key is not None and current.split(".")[1] == key and not header:
            return no
    return header


def _key(part: str) -> str:
    text = str(part)
    return text if text.isprintable() else repr(text)


def where(path: Path, text: str, loc: tuple[str | int, ...]) -> str:
    line = line_of(text, loc)
    # A quoted TOML key may hold any character: escaped, the message stays one line.
    parts = (_key(p) if not isinstance(p, int) else f"[{p}]" for p in loc)
    key = ".".join(parts).replace(".[", "[")
    return f"{path}:{line}: {key}" if line else f"{path}: {key}"
