"""The value of the r-th fastest response, read from the latency histogram
the engine measured: ab and wrk compute their percentiles by rank in a
sorted list, which a fixed percentile table cannot answer for every rank.

The histogram comes as HdrHistogram's V2 encoding, deflate-compressed and
base64 (`LatencySummary.histogram`): a header (significant digits, lowest
and highest trackable value), then the counts of every bucket as ZigZag
LEB128 varints, a negative one standing for that many empty buckets. A
bucket's value is its highest equivalent value, as the engine's own
percentiles are (HdrHistogram's `valueAtPercentile`)."""

from __future__ import annotations

import base64
import math
import struct
import zlib
from bisect import bisect_left
from itertools import accumulate

# The cookies' bases: bits 4-7 carry a word-size flag (0x10 in V2).
_COMPRESSED_COOKIE = 0x1C849304
_ENCODING_COOKIE = 0x1C849303
_FLAGS = 0xF0
_HEADER = struct.Struct(">iiiiqqd")


def _varints(data: bytes) -> list[int]:
    """HdrHistogram's LEB128: 7 bits a byte for 8 bytes, then a 9th of 8."""
    out, i, n = [], 0, len(data)
    while i < n:
        value, shift = 0, 0
        for k in range(9):
            b = data[i]
            i += 1
            if k == 8:
                value |= b << 56
                break
            value |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        out.append((value >> 1) ^ -(value & 1))
    return out


class Ranks:
    """A decoded histogram: `value_at_rank(r)` for r = 1 (the fastest) to `count`."""

    def __init__(self, encoded: str) -> None:
        raw = base64.b64decode(encoded)
        cookie, length = struct.unpack_from(">ii", raw)
        if cookie & ~_FLAGS != _COMPRESSED_COOKIE:
            raise ValueError(f"not a compressed V2 HdrHistogram (cookie {cookie:#x})")
        payload = zlib.decompress(raw[8 : 8 + length])
        cookie, size, offset, digits, lowest, _, _ = _HEADER.unpack_from(payload)
        if cookie & ~_FLAGS != _ENCODING_COOKIE or offset != 0:
            raise ValueError(f"not a V2 HdrHistogram encoding (cookie {cookie:#x}, offset {offset})")
        self._unit = int(math.floor(math.log2(lowest)))
        magnitude = int(math.ceil(math.log2(2 * 10**digits)))
        self._half_magnitude = max(magnitude - 1, 0)
        self._half = 1 << self._half_magnitude
        indexes: list[int] = []
        counts: list[int] = []
        index = 0
        for c in _varints(payload[_HEADER.size : _HEADER.size + size]):
            if c < 0:
                index -= c
                continue
            if c:
                indexes.append(index)
                counts.append(c)
            index += 1
        self._indexes = indexes
        self._cumulative = list(accumulate(counts))
        self.count = self._cumulative[-1] if counts else 0

    def _highest_equivalent(self, index: int) -> int:
        bucket = (index >> self._half_magnitude) - 1
        sub = (index & (self._half - 1)) + self._half
        if bucket < 0:
            sub -= self._half
            bucket = 0
        shift = bucket + self._unit
        return (sub << shift) + (1 << shift) - 1

    def value_at_rank(self, rank: int) -> int:
        """The rank-th smallest value (clamped to 1..count); 0 when empty."""
        if not self.count:
            return 0
        rank = min(max(rank, 1), self.count)
        return self._highest_equivalent(self._indexes[bisect_left(self._cumulative, rank)])
