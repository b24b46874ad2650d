"""The reference line parser: every line shape blkparse prints, and exact reasons for bad lines."""

from __future__ import annotations

from typing import Any

import pytest

from blkscope.ingest.blkparse.event_line import LineError, parse_event_line, render_event

SHAPES: dict[str, dict[str, Any]] = {
    "254,0    0       68     0.000000000 11421  Q  RA 2168560 + 16 [python3]": {
        "action": "Q",
        "op": "R",
        "readahead": True,
        "sector": 2168560,
        "nsectors": 16,
        "comm": "python3",
        "time_ns": 0,
    },
    "  7,0    1   490637     7.628231835    22  C  FN 0 [0]": {
        "action": "C",
        "op": "N",
        "flush": True,
        "sector": 0,
        "nsectors": 0,
        "error": 0,
        "comm": None,
    },
    "  7,0    1   490638     7.628247047    22  C WSM 524656 [0]": {
        "sector": 524656,
        "nsectors": 0,
        "sync": True,
        "meta": True,
    },
    "  7,0    1   490631     0.145504258    44  D  FN [kworker/1:1H]": {
        "sector": None,
        "nsectors": None,
        "comm": "kworker/1:1H",
    },
    "  7,0    0   425431     4.997691965  4266  Q FWFSM 524496 + 8 [jbd2/loop0-8]": {
        "op": "W",
        "flush": True,
        "fua": True,
        "sync": True,
        "meta": True,
        "time_ns": 4997691965,
    },
    "254,0    1    27023    34.489489152 11463  U   N [bpftrace] 1": {
        "depth": 1,
        "comm": "bpftrace",
    },
    "254,0    1     2113     1.000000000    44 UT   N [kworker/1:1H] 12": {
        "action": "UT",
        "depth": 12,
    },
    "  7,0    1       22     0.106395899 11140  X  WS 393216 / 393344 [fio]": {
        "sector": 393216,
        "split_sector": 393344,
        "nsectors": None,
    },
    "254,0    1    23506    28.516674028  6279  R  WS 28149992 + 5016 [0]": {
        "action": "R",
        "error": 0,
        "nsectors": 5016,
    },
    "  8,64   3        0     0.000012707     0  m   N cfq4162S / alloced": {
        "action": "m",
        "message": "cfq4162S / alloced",
        "seq": 0,
    },
    "  8,0    0        5     0.000012707   100  A  WS 1000 + 8 <- (8,1) 900": {
        "remap_dev_major": 8,
        "remap_dev_minor": 1,
        "remap_sector": 900,
        "comm": None,
    },
    "259,0    1 12345678 99999.999999999 4194303  G  WS 1 + 8 [a [b] c]": {
        "dev_major": 259,
        "seq": 12345678,
        "time_ns": 99999999999999,
        "pid": 4194303,
        "comm": "a [b] c",
    },
    "  8,0    0        7     0.000100000   100  D   R 4096 (12 34 ..) [sg_inq]": {
        "pc_bytes": 4096,
        "pdu": "12 34 ..",
        "sector": None,
    },
    "  8,0    0        8     0.000200000     0  C   R (12 34 ..) [0]": {
        "pdu": "12 34 ..",
        "error": 0,
    },
    "  8,0    0        9     0.000300000   100  D  WS 8 + 8 (     120) [dd]": {"elapsed": 120},
    "  8,0    0       10     0.000400000     0  C  WS 8 + 8 (    3000) [-5]": {
        "elapsed": 3000,
        "error": -5,
    },
}


@pytest.mark.parametrize("line", sorted(SHAPES))
def test_each_shape_parses_and_renders_back(line: str) -> None:
    row = parse_event_line(line)
    assert {k: row[k] for k in SHAPES[line]} == SHAPES[line]
    assert render_event(row) == line


ERRORS = {
    "": "line ends early: missing device 'major,minor' (got an empty line)",
    "254,0    0       73     0.0000": "expected time as seconds.nanoseconds with 9 digits, got '0.0000' (line cut short?)",
    "254,0    0       73     0.000032819 11421": "line ends early: missing action (got only 5 fields)",
    "254-0    0       73     0.000032819 11421  D  RA 1 + 8 [x]": "expected device as 'major,minor', got '254-0'",
    "254,0    0       73     0.000032819 11421  Z  RA 1 + 8 [x]": "unknown action 'Z' (expected one of Q G I D C M F P U UT X A R S T B m)",
    "254,0    0       73     0.000032819 11421  D  RQ 1 + 8 [x]": "invalid RWBS 'RQ' (expected letters like WS, RA, FWFSM, N)",
    "254,0    0       73     0.000032819 11421  D  RA 2168560 + 1": "D expects 'sector + count [comm]' after RWBS, got '2168560 + 1'",
    "254,0    0       73     0.000032819 11421  C  RA 2168560 + 8 [x]": "C expects 'sector + count [error]' after RWBS, got '2168560 + 8 [x]'",
    "254,0    0       73     0.000032819 11421  U   N [python3]": "U expects '[comm] depth' after RWBS, got '[python3]'",
    "254,0    0       73     0.000032819 11421  X  WS 5 + 8 [x]": "X expects 'sector / split_sector [comm]' after RWBS, got '5 + 8 [x]'",
    "254,0    0       73     0.000032819 11421  Q  RA": "line ends after RWBS: Q expects 'sector + count [comm]'",
    "avg-cpu:  %user   %nice %system %iowait  %steal   %idle": "expected device as 'major,minor', got 'avg-cpu:'",
    "  8,0    0        5     0.000000000   100  Q  WS 99999999999999999999 + 8 [dd]": "sector 99999999999999999999 does not fit a 64-bit integer",
    "  8,0    0        5     0.000000000 9999999999999999999999  Q  WS 1 + 8 [dd]": "pid 9999999999999999999999 does not fit a 64-bit integer",
}


@pytest.mark.parametrize("line", sorted(ERRORS))
def test_bad_lines_say_exactly_what_is_wrong(line: str) -> None:
    with pytest.raises(LineError) as info:
        parse_event_line(line)
    assert str(info.value) == ERRORS[line]
