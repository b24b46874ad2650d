"""Parse a user's time series CSV (`time,value[,...]`, e.g. prober.csv `mono_ns,latency_us`)."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from blkscope.errors import ParseError
from blkscope.ingest.logs.textlog import (
    SideLog,
    TableRows,
    to_float,
    to_ns,
)
from blkscope.ingest.sources import Input
from blkscope.schemas.series import SERIES

HINT = "expected a header like 'mono_ns,latency_us': a time column, then value columns"
_UNIT = re.compile(r"(?:^|[_ (])(ns|us|ms|s)\)?$")


def _unit(header: str) -> str | None:
    m = _UNIT.search(header.strip().lower())
    return m.group(1) if m else None


def parse_series(given: Input, name: str | None = None) -> pa.Table:
    """Parse a CSV whose first column is a time into the long `series` table."""
    log = SideLog(given)
    path = log.path
    last_line = [0]  # the number of the line the reader took last (blank runs come as one)

    def lines() -> Iterator[str]:
        for line_no, line in log.lines():
            last_line[0] = line_no
            yield line

    reader = csv.reader(lines())
    try:
        return _series(log, reader, name or Path(path).name.split(".")[0], last_line)
    except csv.Error as exc:  # a bare CR inside a line, a field over csv's 128 KiB limit
        raise ParseError(path, last_line[0], f"not CSV: {exc}", hint=HINT) from None


def _series(
    log: SideLog, reader: Iterator[list[str]], series: str, last_line: list[int]
) -> pa.Table:
    path = log.path
    header = next(reader, None)
    if (
        not header
        or len(header) < 2
        or any(not h.strip() or h.strip()[0].isdigit() for h in header)
    ):
        raise log.wrong_format(("series_csv",), HINT)
    time_unit = _unit(header[0])
    names = [series if len(header) == 2 else f"{series}.{h.strip()}" for h in header[1:]]
    units = [_unit(h) for h in header[1:]]
    rows = TableRows(path, SERIES)
    for record in reader:
        line_no = last_line[0]
        if not record or not "".join(record).strip():
            continue
        if len(record) != len(header):
            raise ParseError(
                path,
                line_no,
                f"expected {len(header)} columns ({','.join(header)}), got {len(record)}",
            )
        if time_unit is None:  # no suffix: a decimal point means seconds, else ns
            time_unit = "s" if "." in record[0] else "ns"
        time_ns = to_ns(path, line_no, record[0].strip(), time_unit, header[0])
        for column, (series_name, unit, cell) in enumerate(
            zip(names, units, record[1:], strict=True), start=1
        ):
            value = to_float(path, line_no, cell, header[column]) if cell.strip() else None
            rows.append(
                {
                    "series": series_name,
                    "clock": header[0].strip(),
                    "time_ns": time_ns,
                    "value": value,
                    "unit": unit,
                    "line_no": line_no,
                }
            )
    return rows.table()
