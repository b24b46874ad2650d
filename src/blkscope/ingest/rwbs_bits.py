"""The bits of the small integer both event readers (blkparse text: blkparse/_scan.py; blktrace binaries:
blktrace/decode.py) encode an RWBS string as, and codes.RWBS_BY_CODE decodes back to text."""

from __future__ import annotations

PREFLUSH = 1  # a leading F
OP_SHIFT, OP_MASK = 1, 3  # the op, (code >> 1) & 3: index into blkparse.event_line.OPS (R W D N)
FUA = 8  # F after the op
READAHEAD = 16  # A
SYNC = 32  # S
META = 64  # M
CODES = 128  # codes run 0..127
