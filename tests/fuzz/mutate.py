"""Mutations of real inputs: text, blktrace records, JSON and compressed streams.

Every mutator is a pure function of (rng, data) -> data, so an input is rebuilt exactly from
its seed file and the rng's seed. The exhaustive ones (`truncations`, `record_fields`) yield
every variant of a seed instead.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import random
import re
import struct
from collections.abc import Callable, Iterator
from typing import Any

import zstandard

Mutator = Callable[[random.Random, bytes], bytes]

# Numbers that break parsers: past int32/int64/uint64, negative, 5,000 digits, not integers.
NUMBERS = [
    b"0",
    b"-1",
    b"-0",
    b"2147483647",
    b"2147483648",
    b"4294967295",
    b"4294967296",
    b"9223372036854775807",
    b"9223372036854775808",
    b"18446744073709551615",
    b"99999999999999999999",
    b"-9223372036854775809",
    b"1" * 4301,
    b"9" * 5000,
    b"0" * 30 + b"1",
    b"1e308",
    b"1e999",
    b"nan",
    b"inf",
    b"-inf",
    b"0x10",
    b"1.5",
    b"1,5",
    b"\xd9\xa3",  # ARABIC-INDIC DIGIT THREE: isdigit() but not ASCII
    b"\xc2\xb2",  # SUPERSCRIPT TWO: isdigit() and int() refuses it
    b"",
]
# Bytes that change how lines split or decode.
ODD_BYTES = [
    b"\x00",
    b"\r",
    b"\r\n",
    b"\t",
    b"\x0b",
    b"\x0c",
    b"\x1c",
    b"\x85",
    b"\xc2\x85",  # U+0085 NEXT LINE, a line break to str.splitlines
    b"\xe2\x80\xa8",  # U+2028 LINE SEPARATOR
    b"\xff",
    b"\xfe\xff",
    b"\xc3",  # a cut UTF-8 sequence
    b"\xed\xa0\x80",  # an encoded surrogate (invalid UTF-8)
    b"\xf0\x9f\x92\xa9",
    b"]",
    b"[",
    b"(",
    b'"',
    b"'",
    b"{",
    b"@",
    b",",
    b":",
    b"|",
    b" ",
]
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?")
_TOKEN = re.compile(rb"[^ \t\n]+")


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _pick_line(rng: random.Random, lines: list[bytes]) -> int:
    return rng.randrange(len(lines))


def flip_bytes(rng: random.Random, data: bytes) -> bytes:
    """Flip 1-8 random bits, or set random bytes to random values."""
    if not data:
        return bytes([rng.randrange(256)])
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(buf))
        buf[i] = buf[i] ^ (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.randrange(256)
    return bytes(buf)


def truncate(rng: random.Random, data: bytes) -> bytes:
    """Cut the input at a random offset."""
    return data[: rng.randrange(len(data) + 1)]


def truncations(data: bytes) -> Iterator[bytes]:
    """The input cut at every offset (exhaustive)."""
    for i in range(len(data)):
        yield data[:i]


def swap_number(rng: random.Random, data: bytes) -> bytes:
    """Replace one number with a huge, negative, long or non-integer one."""
    found = list(_NUMBER.finditer(data))
    if not found:
        return data + rng.choice(NUMBERS)
    m = rng.choice(found)
    return data[: m.start()] + rng.choice(NUMBERS) + data[m.end() :]


def swap_numbers_in_line(rng: random.Random, data: bytes) -> bytes:
    """Replace every number of one line with the same hostile value."""
    lines = _lines(data)
    i = _pick_line(rng, lines)
    value = rng.choice(NUMBERS)
    lines[i] = _NUMBER.sub(lambda m: value, lines[i])
    return b"\n".join(lines)


def insert_odd_byte(rng: random.Random, data: bytes) -> bytes:
    """Insert NUL, CR, a tab, a non-UTF-8 byte or a bracket at a random place."""
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(ODD_BYTES) + data[i:]


def odd_byte_in_field(rng: random.Random, data: bytes) -> bytes:
    """Put an odd byte inside one whitespace-separated field of one line."""
    found = list(_TOKEN.finditer(data))
    if not found:
        return insert_odd_byte(rng, data)
    m = rng.choice(found)
    i = rng.randint(m.start(), m.end())
    return data[:i] + rng.choice(ODD_BYTES) + data[i:]


def line_endings(rng: random.Random, data: bytes) -> bytes:
    """CRLF or bare CR line endings, for the whole input or one line."""
    new = rng.choice([b"\r\n", b"\r", b"\n\r", b"\r\r\n"])
    if rng.random() < 0.5:
        return data.replace(b"\n", new)
    lines = _lines(data)
    i = _pick_line(rng, lines)
    return b"\n".join(lines[:i]) + new + b"\n".join(lines[i:])


def tabs(rng: random.Random, data: bytes) -> bytes:
    """Tabs instead of spaces, in one line or everywhere."""
    if rng.random() < 0.3:
        return data.replace(b" ", b"\t")
    lines = _lines(data)
    i = _pick_line(rng, lines)
    lines[i] = lines[i].replace(b" ", b"\t")
    return b"\n".join(lines)


def field_count(rng: random.Random, data: bytes) -> bytes:
    """Drop, duplicate or add fields of one line."""
    lines = _lines(data)
    i = _pick_line(rng, lines)
    fields = lines[i].split(b" ")
    k = rng.randrange(len(fields))
    how = rng.randrange(4)
    if how == 0:
        del fields[k]
    elif how == 1:
        fields.insert(k, fields[k])
    elif how == 2:
        fields += [rng.choice(NUMBERS) for _ in range(rng.randint(1, 3))]
    else:
        fields = fields[:k]
    lines[i] = b" ".join(fields)
    return b"\n".join(lines)


def duplicate_block(rng: random.Random, data: bytes) -> bytes:
    """Copy a block of lines elsewhere, or repeat one line up to 2,000 times."""
    lines = _lines(data)
    i = _pick_line(rng, lines)
    if rng.random() < 0.3:
        return b"\n".join(lines[:i] + [lines[i]] * rng.randint(2, 2000) + lines[i + 1 :])
    j = rng.randint(i, min(len(lines), i + 50))
    k = rng.randint(0, len(lines))
    return b"\n".join(lines[:k] + lines[i:j] + lines[k:])


def delete_block(rng: random.Random, data: bytes) -> bytes:
    """Remove a block of lines (a header, a bucket, a report)."""
    lines = _lines(data)
    i = _pick_line(rng, lines)
    j = rng.randint(i, min(len(lines), i + rng.choice([1, 1, 3, 20])))
    return b"\n".join(lines[:i] + lines[j:])


def shuffle_lines(rng: random.Random, data: bytes) -> bytes:
    """Swap nearby lines (times out of order, a header after its rows)."""
    lines = _lines(data)
    for _ in range(rng.randint(1, 5)):
        i = _pick_line(rng, lines)
        j = min(len(lines) - 1, i + rng.randint(1, 10))
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def blank_lines(rng: random.Random, data: bytes) -> bytes:
    """Insert a run of blank or whitespace-only lines."""
    i = rng.randrange(len(data) + 1)
    run = rng.choice([b"\n", b" \n", b"\r\n", b"\t\n"]) * rng.choice([1, 10, 1000, 20000])
    return data[:i] + run + data[i:]


def long_line(rng: random.Random, data: bytes) -> bytes:
    """One line made very long (a field of 200 KiB to 2 MiB)."""
    size = rng.choice([130 << 10, 200 << 10, (1 << 20) + 7, 2 << 20])
    fill = rng.choice([b"A", b"1", b" ", b"\x00", b"["])
    i = rng.randrange(len(data) + 1)
    return data[:i] + fill * size + data[i:]


# Sectors and times a damaged trace may hold: at and past the end of any device (2^54 sectors),
# near 2^63, and times of 2^32 s (136 years) or the int64 ns limit.
HUGE_SECTORS = [b"18014398509481976", b"18014398509481984", b"18014398509481985",
                b"4611686018427387904", b"9223372036854775800", b"9223372036854775807"]  # fmt: skip
HUGE_TIMES = [b"4294967296.000000000", b"9223372035.999999999", b"9223372036.000000000",
              b"1000000000.000000001", b"86400.000000000"]  # fmt: skip
_EVENT_LINE = re.compile(
    rb"^(\s*\d+,\d+\s+\d+\s+\d+\s+)(\d+\.\d+)(\s+\d+\s+[A-Z]{1,2}\s+[A-Z]*\s+)(\d+)?"
)


def huge_field(rng: random.Random, data: bytes) -> bytes:
    """Give 1-3 blkparse event lines a sector past any device or a time decades away."""
    lines = _lines(data)
    events = [i for i, line in enumerate(lines) if _EVENT_LINE.match(line)]
    if not events:
        return swap_number(rng, data)
    for i in rng.sample(events, min(len(events), rng.choice([1, 1, 2, 3]))):
        m = _EVENT_LINE.match(lines[i])
        assert m is not None
        if m.group(4) is not None and rng.random() < 0.5:
            lines[i] = lines[i][: m.start(4)] + rng.choice(HUGE_SECTORS) + lines[i][m.end(4) :]
        else:
            lines[i] = lines[i][: m.start(2)] + rng.choice(HUGE_TIMES) + lines[i][m.end(2) :]
    return b"\n".join(lines)


def time_shift(rng: random.Random, data: bytes) -> bytes:
    """Move a block of event lines' times back or forward (their lines stay where they are)."""
    lines = _lines(data)
    events = [i for i, line in enumerate(lines) if _EVENT_LINE.match(line)]
    if len(events) < 2:
        return huge_field(rng, data)
    a = rng.randrange(len(events))
    b = min(len(events), a + rng.randint(1, 200))
    shift = rng.choice([-5_000_000_000, -1, 1, 3_000_000_000])
    for i in events[a:b]:
        m = _EVENT_LINE.match(lines[i])
        assert m is not None
        sec, ns = m.group(2).split(b".")
        t = max(0, int(sec) * 1_000_000_000 + int(ns[:9].ljust(9, b"0")) + shift)
        new = f"{t // 1_000_000_000}.{t % 1_000_000_000:09d}".encode()
        lines[i] = lines[i][: m.start(2)] + new + lines[i][m.end(2) :]
    return b"\n".join(lines)


def splice(others: list[bytes]) -> Mutator:
    """A mutator pasting lines of other formats' samples into this one."""

    def paste(rng: random.Random, data: bytes) -> bytes:
        other = _lines(rng.choice(others))
        i = rng.randrange(len(other))
        block = other[i : i + rng.randint(1, 20)]
        lines = _lines(data)
        k = rng.randint(0, len(lines))
        return b"\n".join(lines[:k] + block + lines[k:])

    return paste


def empty(rng: random.Random, data: bytes) -> bytes:
    """Nothing, whitespace only, or a lone newline."""
    return rng.choice([b"", b"\n", b"   ", b"\n\n\n", b"\x00", b"\xef\xbb\xbf"])


TEXT: list[tuple[float, Mutator]] = [
    (3, flip_bytes),
    (1, truncate),
    (4, swap_number),
    (1, swap_numbers_in_line),
    (2, insert_odd_byte),
    (2, odd_byte_in_field),
    (1, line_endings),
    (1, tabs),
    (2, field_count),
    (1, duplicate_block),
    (1, delete_block),
    (1, shuffle_lines),
    (0.5, blank_lines),
    (0.03, long_line),
    (0.1, empty),
    (1, huge_field),
    (0.5, time_shift),
]


# --- blktrace records -------------------------------------------------------------------

RECORD = struct.Struct("<IIQQIIIIIHH")
FIELDS = (
    "magic",
    "sequence",
    "time",
    "sector",
    "bytes",
    "action",
    "pid",
    "device",
    "cpu",
    "error",
    "pdu_len",
)
_WIDTH = {"time": 64, "sector": 64, "error": 16, "pdu_len": 16}


def _specials(bits: int) -> list[int]:
    top = (1 << bits) - 1
    values = {0, 1, top, top - 1, 1 << (bits - 1), (1 << (bits - 1)) - 1}
    if bits > 32:
        # 2^54 sectors: the end of any device; 2^32 s in ns: a time 136 years on
        values |= {1 << 31, 1 << 32, 10**19, 1 << 54, (1 << 54) + 1, 4294967296 * 10**9}
    return sorted(values)


def record_offsets(data: bytes) -> list[int]:
    """Byte offsets of the records, following pdu_len (stops at the first that does not fit)."""
    offsets, o = [], 0
    while o + 48 <= len(data):
        plen = int.from_bytes(data[o + 46 : o + 48], "little")
        if o + 48 + plen > len(data):
            break
        offsets.append(o)
        o += 48 + plen
    return offsets


def set_field(data: bytes, offset: int, name: str, value: int) -> bytes:
    """The data with one field of the record at `offset` set to value."""
    values = list(RECORD.unpack_from(data, offset))
    values[FIELDS.index(name)] = value
    return data[:offset] + RECORD.pack(*values) + data[offset + 48 :]


def record_fields(data: bytes) -> Iterator[bytes]:
    """Every single-field mutation of every record to each special value (exhaustive)."""
    for offset in record_offsets(data):
        for name in FIELDS:
            for value in _specials(_WIDTH.get(name, 32)):
                yield set_field(data, offset, name, value)


def mutate_record(rng: random.Random, data: bytes) -> bytes:
    """One field of one record set to a special or random value."""
    offsets = record_offsets(data)
    if not offsets:
        return flip_bytes(rng, data)
    name = rng.choice(FIELDS)
    bits = _WIDTH.get(name, 32)
    value = rng.choice(_specials(bits)) if rng.random() < 0.7 else rng.getrandbits(bits)
    return set_field(data, rng.choice(offsets), name, value)


def lying_pdu_len(rng: random.Random, data: bytes) -> bytes:
    """A record whose pdu_len claims more or fewer payload bytes than follow it."""
    offsets = record_offsets(data)
    if not offsets:
        return data
    o = rng.choice(offsets)
    plen = int.from_bytes(data[o + 46 : o + 48], "little")
    value = rng.choice([0, 1, 7, plen + 1, max(0, plen - 1), 65535, plen + 48])
    return set_field(data, o, "pdu_len", value)


def bad_magic(rng: random.Random, data: bytes) -> bytes:
    """A record with a wrong magic or version byte."""
    offsets = record_offsets(data)
    if not offsets:
        return data
    value = rng.choice([0, 0x65617406, 0x65617408, 0x07746165, 0xFFFFFFFF, 0x65617507])
    return set_field(data, rng.choice(offsets), "magic", value)


def shuffle_records(rng: random.Random, data: bytes) -> bytes:
    """Duplicate, drop or reorder whole records (with their payloads)."""
    offsets = record_offsets(data)
    if len(offsets) < 2:
        return data
    ends = [*offsets[1:], len(data)]
    recs = [data[a:b] for a, b in zip(offsets, ends, strict=True)]
    i = rng.randrange(len(recs))
    how = rng.randrange(3)
    if how == 0:
        recs.insert(rng.randrange(len(recs) + 1), recs[i])
    elif how == 1:
        del recs[i]
    else:
        j = rng.randrange(len(recs))
        recs[i], recs[j] = recs[j], recs[i]
    return b"".join(recs)


def payload_bytes(rng: random.Random, data: bytes) -> bytes:
    """Flip bytes inside a record's payload (names, messages, remaps, cgroup ids)."""
    offsets = [o for o in record_offsets(data) if int.from_bytes(data[o + 46 : o + 48], "little")]
    if not offsets:
        return flip_bytes(rng, data)
    o = rng.choice(offsets)
    plen = int.from_bytes(data[o + 46 : o + 48], "little")
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        buf[o + 48 + rng.randrange(plen)] = rng.choice([0, 0xFF, 0x80, 0xC3, rng.randrange(256)])
    return bytes(buf)


BINARY: list[tuple[float, Mutator]] = [
    (2, flip_bytes),
    (1, truncate),
    (4, mutate_record),
    (1, lying_pdu_len),
    (1, bad_magic),
    (1, shuffle_records),
    (1, payload_bytes),
    (0.1, empty),
]


# --- JSON -------------------------------------------------------------------------------

_CONFUSED: list[Any] = [
    None,
    True,
    0,
    -1,
    -5,
    float("inf"),  # json.dumps writes Infinity, which json.loads reads back (1e400 does too)
    2**64,
    10**30,
    1.5,
    1e308,
    "x",
    "",
    "\u00b2",
    "7 (expanded: 1408)",
    [],
    {},
    [[[]]],
    {"a": {"b": []}},
]


def _nodes(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _nodes(v, (*path, i))


def _replace(doc: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> Any:
    if not path:
        return value
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def json_confusion(rng: random.Random, data: bytes) -> bytes:
    """Parse a JSON document (one per line works too), and give one node another type, drop
    it, or give the whole a wrong top level."""
    lines = _lines(data)
    at = [i for i, line in enumerate(lines) if line.strip().startswith((b"{", b"["))]
    if not at:
        return flip_bytes(rng, data)
    i = rng.choice(at)
    try:
        doc = json.loads(lines[i])
    except (ValueError, RecursionError):
        return flip_bytes(rng, data)
    paths = list(_nodes(doc))
    path = rng.choice(paths)
    how = rng.random()
    if how < 0.15 and path:
        doc = _replace(doc, path, None, delete=True)
    elif how < 0.25:
        doc = rng.choice(_CONFUSED)
    else:
        doc = _replace(doc, path, rng.choice(_CONFUSED))
    text = json.dumps(doc).encode()
    if rng.random() < 0.05:
        text = text.replace(b"1.5", b"NaN")
    lines[i] = text
    return b"\n".join(lines)


def deep_nesting(rng: random.Random, data: bytes) -> bytes:
    """JSON nested tens of thousands deep (a RecursionError for a naive reader)."""
    depth = rng.choice([1000, 100_000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
    return opener * depth + b"1" + closer * depth


JSON: list[tuple[float, Mutator]] = [
    (6, json_confusion),
    (1, flip_bytes),
    (1, truncate),
    (0.3, deep_nesting),
    (1, swap_number),
    (0.5, insert_odd_byte),
]


# --- compressed streams -----------------------------------------------------------------

COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda d: gzip.compress(d, mtime=0),
    "zstd": lambda d: zstandard.ZstdCompressor(level=3).compress(d),
    "xz": lzma.compress,
    "bzip2": bz2.compress,
}


def compressed(rng: random.Random, data: bytes) -> bytes:
    """Compress the input, then maybe damage the stream: cut it, flip bytes, add garbage or a
    second frame."""
    name = rng.choice(sorted(COMPRESSORS))
    blob = COMPRESSORS[name](data)
    how = rng.randrange(6)
    if how == 0:
        blob = blob[: rng.randrange(len(blob) + 1)]
    elif how == 1:
        blob = flip_bytes(rng, blob)
    elif how == 2:
        blob += rng.choice([b"\x00" * 10, b"garbage", blob[:20]])
    elif how == 3:
        blob += COMPRESSORS[name](data[: len(data) // 2])
    return blob


def bomb(rng: random.Random, data: bytes) -> bytes:
    """A small compressed stream that expands to 64-300 MiB of zeros, 'A's or blank lines."""
    fill = rng.choice([b"\x00", b"A", b"\n", b"1 "])
    size = rng.choice([64 << 20, 300 << 20])
    head = data[:2000] if rng.random() < 0.5 else b""
    cctx = zstandard.ZstdCompressor(level=3)
    chunk = cctx.compressobj()
    parts = [chunk.compress(head)]
    block = fill * (1 << 20)
    for _ in range(size >> 20):
        parts.append(chunk.compress(block))
    parts.append(chunk.flush())
    return b"".join(parts)


def pick(rng: random.Random, table: list[tuple[float, Mutator]]) -> Mutator:
    """One mutator, drawn by weight."""
    return rng.choices([m for _, m in table], weights=[w for w, _ in table])[0]


def mutate(rng: random.Random, data: bytes, table: list[tuple[float, Mutator]]) -> bytes:
    """1-3 mutations drawn from table; sometimes the result is then compressed (and damaged)."""
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        data = pick(rng, table)(rng, data)
    if rng.random() < 0.04:
        data = compressed(rng, data)
    elif rng.random() < 0.0005:
        data = bomb(rng, data)
    return data
