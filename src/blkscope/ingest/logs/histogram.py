"""Parse latency/size histograms: bcc text, bpftrace text, bpftrace -f json, bcc biolatency -j."""

from __future__ import annotations

import ast
import contextlib
import json
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from blkscope.errors import ParseError
from blkscope.ingest.detect import detect_text
from blkscope.ingest.logs.textlog import (
    LIMIT,
    SideLog,
    TableRows,
    wrong_format,
)
from blkscope.ingest.logs.wall_stamps import date_time_ns, time_of_day_ns
from blkscope.ingest.sources import Input
from blkscope.schemas.bpf_logs import HISTOGRAM

FORMATS = ("hist_bpftrace", "hist_bcc", "hist_json")
HINT = (
    "expected bcc rows 'lo -> hi : count |***|', bpftrace rows '[lo, hi)  count |@@|' "
    "or JSON lines from bpftrace -f json / biolatency -j"
)
_SUFFIX = {
    "": 1,
    "K": 1 << 10,
    "M": 1 << 20,
    "G": 1 << 30,
    "T": 1 << 40,
    "P": 1 << 50,
    "E": 1 << 60,
}
_NUM = r"-?\d{1,19}[KMGTPE]?"  # longer numbers are out of range: the row does not match
_BCC_TS = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")  # bcc -j: strftime, UTC
_BT_MAP = re.compile(r"(@\w*)(?:\[(.*)\])?:")
_BT_RANGE = re.compile(rf"\[({_NUM}), ({_NUM})\)\s+(\d{{1,19}})\s+\|.*\|")
_BT_SINGLE = re.compile(rf"\[({_NUM})\]\s+(\d{{1,19}})\s+\|.*\|")
_BT_UNDER = re.compile(rf"\(\.\.\., ({_NUM})\)\s+(\d{{1,19}})\s+\|.*\|")
_BT_OVER = re.compile(rf"\[({_NUM}), \.\.\.\)\s+(\d{{1,19}})\s+\|.*\|")
_BCC_HEADER = re.compile(r"(\S+)\s+: count\s+distribution")
_BCC_ROW = re.compile(r"(\d{1,19}) -> (\d{1,19})\s+: (\d{1,19})\s+\|.*\|")
_BCC_LABEL = re.compile(r"(?:Bucket )?(.+?) = (.*)")
_CHATTER = re.compile(r"Attaching \d+ probes?\.\.\.|Tracing .*|\^C")


def _value(text: str) -> int:
    return int(text[:-1]) * _SUFFIX[text[-1]] if text[-1] in _SUFFIX else int(text)


@dataclass
class _State:
    path: str
    snapshot: int = 0
    time_text: str | None = None
    time_ns: int | None = None
    name: str | None = None
    key: str | None = None
    label: str | None = None
    seen: set[tuple[str | None, str | None]] = field(default_factory=set)
    rows: TableRows = field(init=False)
    last_high: int | None = None
    last_text: str = ""

    def __post_init__(self) -> None:
        self.rows = TableRows(self.path, HISTOGRAM)

    def clock(self, text: str, ns: int | None) -> None:
        if self.rows or self.seen:
            self.snapshot += 1
        self.time_text, self.time_ns, self.seen = text, ns, set()

    def start(self, name: str, key: str | None) -> None:
        """A histogram begins; the same one again means the next snapshot."""
        if (name, key) in self.seen:
            self.snapshot += 1
            self.seen = set()
        self.seen.add((name, key))
        self.name, self.key, self.last_high = name, key, None

    def bucket(
        self, line_no: int, low: int | None, high: int | None, count: int, text: str
    ) -> None:
        if self.name is None:
            raise ParseError(
                self.path, line_no, "histogram row before any histogram header", hint=HINT
            )
        if low is not None and self.last_high is not None and low != self.last_high:
            raise ParseError(
                self.path,
                line_no,
                f"bucket {text.split('|')[0].strip()!r} does "
                f"not follow {self.last_text!r}: rows are missing "
                "(truncated or edited histogram)",
            )
        self.rows.append(
            {
                "snapshot": self.snapshot,
                "time_text": self.time_text,
                "time_ns": self.time_ns,
                "name": self.name,
                "key": self.key,
                "low": low,
                "high": high,
                "count": count,
                "line_no": line_no,
            }
        )
        self.last_high, self.last_text = high, text.split("|")[0].strip()


def _clock_ns(st: _State, line_no: int, text: str) -> int | None:
    try:
        return time_of_day_ns(text)
    except ValueError as exc:
        raise ParseError(st.path, line_no, str(exc), hint=HINT) from None


def _text_line(st: _State, line_no: int, line: str) -> None:
    s = line.strip()
    if _CHATTER.fullmatch(s):
        return
    clock = _clock_ns(st, line_no, s)
    if clock is not None:
        st.clock(s, clock)
        return
    if m := _BT_RANGE.fullmatch(s):
        st.bucket(line_no, _value(m.group(1)), _value(m.group(2)), int(m.group(3)), s)
    elif m := _BT_SINGLE.fullmatch(s):
        low = _value(m.group(1))
        st.bucket(line_no, low, low + 1, int(m.group(2)), s)
    elif m := _BT_UNDER.fullmatch(s):
        st.bucket(line_no, None, _value(m.group(1)), int(m.group(2)), s)
    elif m := _BT_OVER.fullmatch(s):
        st.bucket(line_no, _value(m.group(1)), None, int(m.group(2)), s)
    elif m := _BCC_ROW.fullmatch(s):
        st.bucket(line_no, int(m.group(1)), int(m.group(2)) + 1, int(m.group(3)), s)
    elif m := _BT_MAP.fullmatch(s):
        st.start(m.group(1), m.group(2))
    elif m := _BCC_HEADER.fullmatch(s):
        st.start(m.group(1), st.label)
    elif m := _BCC_LABEL.fullmatch(s):
        st.label = m.group(2).strip("'\"")
    elif s.startswith(("[", "(")) or re.match(r"\d+ ->", s):
        raise ParseError(st.path, line_no, f"truncated or malformed histogram row {s!r}", hint=HINT)
    else:
        raise ParseError(st.path, line_no, f"unexpected line in a histogram: {s[:60]!r}", hint=HINT)


def _json_error(st: _State, line_no: int, what: str) -> ParseError:
    return ParseError(st.path, line_no, f"JSON histogram: {what}", hint=HINT)


def _json_int(st: _State, line_no: int, value: Any, what: str) -> int:
    """An integer field of a JSON histogram (bool is no integer), within the columns' range."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise _json_error(st, line_no, f"{what} is {_kind(value)}, expected an integer")
    if not -LIMIT < value < LIMIT:
        raise _json_error(st, line_no, f"{what} {value} is out of range")
    return value


def _kind(value: Any) -> str:
    return "missing" if value is None else f"a {type(value).__name__}"


def _json_buckets(st: _State, line_no: int, buckets: Any) -> None:
    if not isinstance(buckets, list):
        raise _json_error(st, line_no, f"buckets are {_kind(buckets)}, expected a list")
    for b in buckets:
        if not isinstance(b, dict):
            raise _json_error(st, line_no, f"a bucket is {_kind(b)}, expected an object")
        count = _json_int(st, line_no, b.get("count"), "count")
        if "interval-start" in b:  # bcc -j: inclusive interval-end
            low = _json_int(st, line_no, b["interval-start"], "interval-start")
            high = _json_int(st, line_no, b.get("interval-end"), "interval-end") + 1
            st.bucket(line_no, low, high, count, "")
        else:  # bpftrace: inclusive max; no min = underflow, no max = overflow
            low_or_none = _json_int(st, line_no, b["min"], "min") if "min" in b else None
            high_or_none = _json_int(st, line_no, b["max"], "max") + 1 if "max" in b else None
            st.bucket(line_no, low_or_none, high_or_none, count, "")


def _python_literal(line: str) -> Any:
    """bcc's biolatency -j prints Python dicts. The compiler behind literal_eval warns on
    stderr about some damaged ones ("invalid decimal literal"): those are ParseErrors here,
    not lines on the user's terminal."""
    if '"' not in line:
        # Without a double quote, every quote is one of repr's single quotes around a string
        # with no quote inside, so as JSON the line means the same; json reads it much faster
        # than literal_eval, which compiles every line.
        with contextlib.suppress(ValueError, RecursionError):
            return json.loads(line.replace("'", '"'))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.literal_eval(line)


def _json_line(st: _State, line_no: int, line: str) -> None:
    try:
        doc = json.loads(line) if line.startswith('{"') else _python_literal(line)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ParseError(
            st.path,
            line_no,
            f"not a complete JSON object ({exc.__class__.__name__}): {line[:60]!r}",
            hint=HINT,
        ) from None
    if not isinstance(doc, dict):
        raise ParseError(st.path, line_no, "expected a JSON object per line", hint=HINT)
    if "val_type" in doc:  # bcc biolatency -j, one histogram per line
        _bcc_json(st, line_no, doc)
    elif doc.get("type") == "time":
        text = str(doc.get("data")).strip()
        st.clock(text, _clock_ns(st, line_no, text))
    elif doc.get("type") == "hist":
        data = doc.get("data")
        if not isinstance(data, dict):
            raise _json_error(st, line_no, f"'data' is {_kind(data)}, expected an object")
        for name, value in data.items():
            per_key = value.items() if isinstance(value, dict) else [(None, value)]
            for key, buckets in per_key:
                st.start(str(name), None if key is None else str(key))
                _json_buckets(st, line_no, buckets)


def _bcc_json(st: _State, line_no: int, doc: dict[str, Any]) -> None:
    ts, val_type = doc.get("ts"), doc.get("val_type")
    if not isinstance(ts, str) or not isinstance(val_type, str):
        raise _json_error(st, line_no, "'ts' and 'val_type' must be strings")
    try:
        when = date_time_ns(ts) if _BCC_TS.fullmatch(ts) else None
    except ValueError:
        when = None
    if when is None:
        raise _json_error(st, line_no, f"'ts' {ts[:40]!r} is not a date YYYY-MM-DD HH:MM:SS")
    if ts != st.time_text:
        st.clock(ts, when)
    extra = [k for k in doc if k not in ("ts", "val_type", "data")]
    st.start(val_type, str(doc[extra[0]]) if extra else None)
    _json_buckets(st, line_no, doc.get("data"))


def parse_histogram(given: Input) -> pa.Table:
    """Parse a histogram log of any supported layout into the `histogram` table."""
    log = SideLog(given)
    path = log.path
    kind = detect_text(log.head)
    if kind not in FORMATS:
        raise wrong_format(path, log.head, FORMATS, HINT)
    st = _State(path)
    for line_no, line in log.lines():
        if not line.strip():
            continue
        if kind == "hist_json":
            _json_line(st, line_no, line.strip())
        else:
            _text_line(st, line_no, line)
    if not st.rows:
        raise log.wrong_format(FORMATS, HINT)
    return st.rows.table()
