"""What the text and binary event readers share: the events table built from columns by name
(the compiled core, blkscope._core, makes the columns) and the rows whose sectors end past any
device."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from blkscope.concepts import MAX_SECTOR
from blkscope.ingest.blkparse.event_line import SECTOR_COLUMNS
from blkscope.schemas import EVENTS

# All-null columns by type, kept to be sliced: most of the events' columns are null in every
# row of a batch, and building them afresh for each batch would zero new memory every time.
_NULLS: dict[pa.DataType, pa.Array] = {}


def nulls(n: int, type_: pa.DataType) -> pa.Array:
    """n nulls of type_: a slice of an array kept for the largest n asked for so far."""
    kept = _NULLS.get(type_)
    if kept is None or len(kept) < n:
        kept = _NULLS[type_] = pa.nulls(n, type_)
    return kept.slice(0, n)


def events_table(n: int, columns: Mapping[str, pa.Array]) -> pa.Table:
    """An events table (schemas.EVENTS) of n rows from its columns by name; a column not given
    is all null. A name the schema does not declare is a bug, not a column to drop. A string
    column may come as codes into its strings (a dictionary array, as the text scanner hands
    over the action, rwbs and op): it stays so, and the table's schema says so; the events
    writer stores it as the strings."""
    unknown = set(columns).difference(EVENTS.names)
    if unknown:
        raise ValueError(f"not columns of events: {sorted(unknown)}")
    arrays = [columns[f.name] if f.name in columns else nulls(n, f.type) for f in EVENTS]
    fields = [_as_given(f, a.type) for f, a in zip(EVENTS, arrays, strict=True)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=EVENTS.metadata))


def _as_given(declared: pa.Field, given: pa.DataType) -> pa.Field:
    """The field as declared, or as codes into its values when they are given so."""
    if pa.types.is_dictionary(given) and given.value_type == declared.type:
        return declared.with_type(given)
    return declared


def with_strings(events: pa.Table) -> pa.Table:
    """An events table with every column of the type schemas.EVENTS declares (codes into
    strings made the strings): for computing on them, or joining tables not coded alike."""
    for at, given in enumerate(events.schema):
        if pa.types.is_dictionary(given.type):
            declared = EVENTS.field(given.name)
            events = events.set_column(at, declared, events.column(at).cast(declared.type))
    return events


def _ends(table: pa.Table, name: str, length_column: str | None) -> pa.ChunkedArray:
    start = table[name]
    if length_column is None:
        return start
    import pyarrow.compute as pc  # (slow to import; most inputs never need it)

    return pc.add(start, pc.fill_null(table[length_column].cast(pa.int64()), 0))


def past_last_sector_rows(events: pa.Table) -> pa.ChunkedArray | None:
    """A mask of the events whose sector range ends past MAX_SECTOR (the end of any block
    device), or None when there is none: the readers refuse them (event_line.check_ranges)."""
    import pyarrow.compute as pc  # (slow to import; most inputs never need it)

    bad = None
    for name, length_column in SECTOR_COLUMNS.items():
        if events[name].null_count == len(events):
            continue
        # most batches: the largest start plus the largest length fit, so no row can be bad
        # (two reductions instead of a mask of every row)
        longest = pc.max(events[length_column]).as_py() if length_column else 0
        if pc.max(events[name]).as_py() + max(longest or 0, 0) <= MAX_SECTOR:
            continue
        # a start past MAX_SECTOR is bad whatever its length: tested on its own, since adding
        # the length to it could wrap
        over = pc.or_kleene(
            pc.greater(events[name], MAX_SECTOR),
            pc.greater(_ends(events, name, length_column), MAX_SECTOR),
        )
        bad = over if bad is None else pc.or_kleene(bad, over)
    if bad is None:
        return None
    bad = pc.fill_null(bad, False)
    return bad if pc.any(bad).as_py() else None


def first_sector_past_end(row: Mapping[str, object]) -> tuple[str, int, int]:
    """(column, start, length) of the first sector range of an event row that ends past
    MAX_SECTOR (one past_last_sector_rows found)."""
    for name, length_column in SECTOR_COLUMNS.items():
        start = row.get(name)
        length = (row.get(length_column) or 0) if length_column else 0
        if isinstance(start, int) and isinstance(length, int) and start + length > MAX_SECTOR:
            return name, start, length
    raise ValueError("no sector of this row ends past MAX_SECTOR")
