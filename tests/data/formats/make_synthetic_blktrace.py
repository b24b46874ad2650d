"""Write syn.blktrace.0: one record of every shape blkparse prints (and a few it rejects).

Then `blkparse -i syn -o syn.blkparse.txt` gives the expected text (blkparse 1.2.0 here); its
summary block is cut off because one of its totals wraps around u64 (18446744073PiB).
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[3]))
from blkscope.ingest.blktrace.records import RECORD

MAGIC = 0x65617407
DEV = (8 << 20) | 16
BASE = 1_000_000_000
records: list[bytes] = []


def cat(*bits: int) -> int:
    """Category bits (BLK_TC_*: READ 0, WRITE 1, SYNC 3, FS 8, PC 9, NOTIFY 10, AHEAD 11,
    DISCARD 13, FUA 15) shifted into the action's top half."""
    return sum(1 << b for b in bits) << 16


def put(
    dt: int,
    action: int,
    sector: int = 0,
    nbytes: int = 0,
    pid: int = 100,
    err: int = 0,
    pdu: bytes = b"",
) -> None:
    r = np.zeros(1, RECORD)[0]
    r["magic"], r["sequence"], r["time"] = MAGIC, len(records) + 1, BASE + dt
    r["sector"], r["bytes"], r["action"], r["pid"] = sector, nbytes, action, pid
    r["device"], r["cpu"], r["error"], r["pdu_len"] = DEV, 0, err, len(pdu)
    records.append(r.tobytes() + pdu)


put(0, cat(10) | 0, pid=100, pdu=b"myproc".ljust(16, b"\0"))  # process notes
put(0, cat(10) | 0, pid=200, pdu=b"other proc".ljust(16, b"\0"))
put(10, cat(1, 8) | 1, 1000, 4096)  # Q W
put(20, cat(1, 8) | 15, 5000, 4096, pdu=struct.pack(">IIQ", (8 << 20) | 17, DEV, 1000))  # A
put(30, cat(0, 8, 11) | 1, 2000, 8192)  # Q RA
put(40, cat(13, 8) | 7, 3000, 1 << 20)  # D discard
put(50, cat(1, 15, 3, 8) | 1, 4000, 4096)  # Q WFS
put(60, cat(1, 8) | 3, 4008, 4096)  # F front merge
put(70, cat(1, 8) | 5, 4016, 4096)  # S sleep
put(80, cat(1, 8) | 14, 4024, 4096)  # B bounce
put(90, cat(1, 8) | 6, 4032, 4096)  # R requeue
put(100, cat(1, 8) | 8, 4040, 4096, err=65531)  # C with -EIO
put(110, cat(8) | 1, 0, 0)  # Q N, no bytes
put(115, cat(1, 8) | 1, 7777, 0)  # zero-byte Q, D, C W
put(120, cat(1, 8) | 7, 7777, 0)
put(125, cat(1, 8) | 8, 7777, 0)
put(130, cat(10) | 2, pid=100, pdu=b"hello from the scheduler")  # message note
put(140, cat(1, 8) | 0x100 | 1, 9000, 4096, pdu=struct.pack("<Q", 1))  # cgroup-tagged Q
put(150, cat(1, 8) | 16, 9000, 4096)  # ABORT
put(160, cat(1, 8) | 12, 9000, 4096, pid=300)  # I by a pid without a note
put(170, cat(1, 8) | 11, pid=100, pdu=struct.pack(">Q", 0x100000003))  # UT depth over u32
put(180, cat(1, 8) | 13, 9000, 4096, pdu=struct.pack(">Q", 9004))  # X
put(190, cat(0, 9) | 1, 0, 24, pdu=bytes(range(6)))  # PC Q, C
put(200, cat(0, 9) | 8, 0, 24, pdu=bytes(range(6)))
put(210, cat(1, 9) | 12, 0, 512, pdu=bytes(range(10, 16)))  # PC I, D, R, C
put(220, cat(1, 9) | 7, 0, 512, pdu=bytes(range(20, 26)))
put(230, cat(1, 9) | 6, 0, 512, pdu=bytes(range(30, 33)))
put(240, cat(1, 9) | 8, 0, 512, err=5)
put(250, cat(1, 8) | 9, pid=200)  # P
(Path(__file__).parent / "syn.blktrace.0").write_bytes(b"".join(records))
