"""Input files read whole, bounded: a body, a URL list, a plan and a table
are held in memory, so each is read up to its limit and refused past it,
never slurped (`-p /dev/zero` once grew to 5.9 GB in 20 s). A replayed log
is streamed instead (`accesslog`)."""

from __future__ import annotations

from pathlib import Path

MIB = 1024 * 1024
# A request body is kept in memory and sent whole with every request.
BODY_BYTES = 64 * MIB
# A siege URL file, its bodies apart (each bounded by BODY_BYTES).
URL_FILE_BYTES = 64 * MIB
# A plan and its templates, and a table of (N, throughput) rows for `fit`.
PLAN_BYTES = 4 * MIB
TABLE_BYTES = 16 * MIB


class TooLarge(ValueError):
    def __init__(self, limit_bytes: int) -> None:
        super().__init__(f"more than {limit_bytes // MIB} MiB, the most read")
        self.limit_bytes = limit_bytes


def read_bytes(path: Path, limit_bytes: int) -> bytes:
    """The file's bytes, at most `limit_bytes` of them: TooLarge past it
    (a device such as /dev/zero included), OSError as open raises it."""
    with path.open("rb") as f:
        data = f.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        raise TooLarge(limit_bytes)
    return data


def read_text(path: Path, limit_bytes: int) -> str:
    """As `read_bytes`, decoded as UTF-8 (UnicodeDecodeError if it is not)."""
    return read_bytes(path, limit_bytes).decode()
