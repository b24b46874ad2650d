"""struct blk_io_trace, the record of the kernel's blk tracer (include/uapi/linux/blktrace_api.h),
declared once: the capture rewrites ftrace's bin output into per-CPU files of it
(capture/blkbin.py) and the ingest reads them (ingest/blktrace/records.py, ingest/blktrace/decode.py).

A record is 48 little-endian bytes followed by pdu_len bytes of payload. `action` holds the
action code in its low byte and the category bits (BLK_TC_*) in its high 16.
"""

from __future__ import annotations

import struct

import numpy as np

# (field, little-endian unsigned type), in record order
FIELDS: tuple[tuple[str, str], ...] = (
    ("magic", "u4"),  # MAGIC | VERSION
    ("sequence", "u4"),  # per-CPU event number
    ("time", "u8"),  # ns since the trace started
    ("sector", "u8"),  # 512-byte sectors
    ("bytes", "u4"),  # length in bytes
    ("action", "u4"),  # category bits << 16 | action code
    ("pid", "u4"),
    ("device", "u4"),  # major << 20 | minor
    ("cpu", "u4"),
    ("error", "u2"),
    ("pdu_len", "u2"),  # payload bytes after the record
)
_SIZES = {"u2": 2, "u4": 4, "u8": 8}
RECORD = np.dtype([(name, "<" + kind) for name, kind in FIELDS])  # packed: no padding
RECORD_BYTES = RECORD.itemsize
assert RECORD_BYTES == 48
# The same layout for struct.pack/unpack (one record at a time, in Python).
RECORD_STRUCT = struct.Struct(
    "<" + "".join({"u2": "H", "u4": "I", "u8": "Q"}[k] for _, k in FIELDS)
)
assert RECORD_STRUCT.size == RECORD_BYTES
# Byte offset of each field inside a record (for compiled readers of raw bytes).
OFFSET = {name: sum(_SIZES[k] for _, k in FIELDS[:i]) for i, (name, _) in enumerate(FIELDS)}

MAGIC = 0x65617400  # "eat" in the top three bytes; the low byte is the version
MAGIC_MASK = 0xFFFFFF00
VERSION = 0x07
MAGIC_BYTES_LE = (MAGIC | VERSION).to_bytes(4, "little")  # how a file of records starts
MAGIC_BYTES_BE = (MAGIC | VERSION).to_bytes(4, "big")  # ... when recorded big-endian

DEV_MINOR_BITS = 20  # device = major << 20 | minor (the kernel's dev_t)
DEV_MINOR_MASK = (1 << DEV_MINOR_BITS) - 1

CATEGORY_SHIFT = 16  # action >> 16: the BLK_TC_* bits
CODE_MASK = 0xFF  # the action code (__BLK_TA_*, or __BLK_TN_* for notes): all below 256
TC_WRITE, TC_FLUSH, TC_SYNC = 1 << 1, 1 << 2, 1 << 3
TC_PC, TC_NOTIFY, TC_AHEAD, TC_META, TC_DISCARD, TC_FUA = (
    1 << 9,
    1 << 10,
    1 << 11,
    1 << 12,
    1 << 13,
    1 << 15,
)
# Notes (category TC_NOTIFY): a process name, the wall clock at the trace start, a message.
TN_PROCESS, TN_TIMESTAMP, TN_MESSAGE = 0, 1, 2
COMM_LEN = 16  # a process-name note's payload: the comm, NUL-padded

# Action code -> the letter blkparse prints; codes absent here are not printed.
CODE_LETTERS = {
    1: "Q",
    2: "M",
    3: "F",
    4: "G",
    5: "S",
    6: "R",
    7: "D",
    8: "C",
    9: "P",
    10: "U",
    11: "UT",
    12: "I",
    13: "X",
    14: "B",
    15: "A",
}


def note_action(code: int) -> int:
    """The action word of a note (TN_PROCESS, TN_TIMESTAMP or TN_MESSAGE)."""
    return (TC_NOTIFY << CATEGORY_SHIFT) | code
