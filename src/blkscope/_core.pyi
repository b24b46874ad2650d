"""Types of blkscope's compiled core (the Rust crate in rust/, built by maturin).

Every function that works on events or rows releases the GIL while it does. Rows come back as
ArrowBatch, which pyarrow imports without a copy: `pa.record_batch(rows)`.
"""

from typing import Any

def version() -> str: ...
def log2_bucket(v: int) -> int:
    """io_dist's log2 bucket of v: b with 2^b <= v < 2^(b+1), -1 for v <= 0."""

def value_bucket(v: int) -> int:
    """The value bucket of v, as the pass counts bio latencies (the SQL macro value_bucket)."""

class ArrowBatch:
    """A record batch (an Arrow struct array, through the PyCapsule protocol)."""

    @property
    def num_rows(self) -> int: ...
    def __arrow_c_array__(self, requested_schema: Any = None) -> tuple[Any, Any]: ...

class StreamPass:
    """The streaming pass over one dataset's events (rust/src/pass)."""

    def __init__(
        self,
        plug_clock: bool,
        devices: list[tuple[int, int, bool, bool]],
        bounds: list[tuple[int, ...]],
        last_plugs: list[tuple[int, int]],
    ) -> None: ...
    def add_op_classes(self, rwbs: str | None, names: list[tuple[str, str]]) -> None: ...
    def feed(self, events: Any) -> bool: ...
    def finish(self) -> None: ...
    def pending_rows(self) -> int: ...
    def take_rows(self) -> tuple[ArrowBatch, ArrowBatch, ArrowBatch]: ...
    def orphan_candidates(self) -> ArrowBatch: ...
    def settle(self, orphans: list[int]) -> tuple[ArrowBatch, ArrowBatch, ArrowBatch]: ...
    def undecided(self) -> bool: ...
    def most_in_flight(self) -> list[tuple[str, int]]:
        """The most requests, bios, pieces and plug sessions the pass held at once."""
    def io_counts(self) -> ArrowBatch: ...
    def count_merges(self, interval_ns: int, origin_ns: int) -> None:
        """Count the M and F events per device and iostat interval from now on."""
    def merge_counts(self) -> ArrowBatch:
        """(dev_major, dev_minor, k, read_merges, write_merges) per device and interval."""
    def stage_counts(self) -> ArrowBatch: ...
    def row_counts(self) -> tuple[ArrowBatch, ArrowBatch]: ...
    @staticmethod
    def scopes() -> list[str]: ...
    @staticmethod
    def columns() -> list[str]: ...

class RecordsError(ValueError):
    """A blktrace file is not what it should be: args (kind, file index, message)."""

def scan_blkparse_text(
    data: bytes | Any, first_line: int, input_id: int
) -> tuple[ArrowBatch, ArrowBatch, int, int]:
    """Scan a chunk of blkparse text (bytes, or a uint8 Arrow array over memory held): (events rows, spans left to the reference parser as
    line_no/start/end, number of lines, largest end of the rows' sector ranges)."""

def count_newlines(data: bytes | Any) -> int:
    """How many newlines a chunk of text holds (bytes, or a uint8 Arrow array)."""

class EventAudit:
    """What ingest counts of the events it writes: groups per batch, CPU streams' numbers."""

    def __init__(self, per_input: bool, unnumbered: list[str]) -> None: ...
    def add(self, events: Any) -> ArrowBatch:
        """Feed a batch in logged order; its (input_id, dev_major, dev_minor, action, plain)
        groups: events, first_time_ns, last_time_ns."""
    def streams(self) -> ArrowBatch:
        """Each CPU stream by key: events, distinct, first_seq, last_seq, steps_back,
        largest_step_back_ns."""
    def last_plugs(self) -> ArrowBatch:
        """(pid, last_plug_ns) per task whose P events were fed, by pid."""

class ParquetTableWriter:
    """A Parquet file: created at a path for a schema (columns so encoded, integer columns
    given statistics, the footer's key-values, LZ4 where it pays unless compress is False),
    fed record batches, then closed (OSError with its errno when the file system refuses)."""

    def __init__(
        self,
        path: str,
        schema: Any,
        dictionary: list[str],
        delta: list[str],
        statistics: list[str],
        key_values: list[tuple[str, bytes]],
        compress: bool = True,
    ) -> None: ...
    def write(self, batch: Any) -> None: ...
    def close(self) -> None: ...
    @property
    def rows(self) -> int: ...

class ParquetTableReader:
    """A Parquet file of ParquetTableWriter's read a row group at a time, the columns of
    `schema` in its types (strings as dictionary<int32, utf8>); ValueError when the file is
    not one it reads (another writer's) or is damaged, OSError with its errno when it cannot
    be read."""

    def __init__(self, path: str, schema: Any) -> None: ...
    @property
    def row_groups(self) -> int: ...
    def read(self, group: int) -> ArrowBatch: ...

def blktrace_record_offsets(data: bytes) -> ArrowBatch:
    """Where each record of a per-CPU blktrace file starts (column `offset`)."""

class BlktraceTrace:
    """The per-CPU files of one trace, in blkparse's print order."""

    def __init__(self, files: list[bytes], input_id: int) -> None: ...
    def rows(self, start: int, stop: int) -> ArrowBatch: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def base_time_ns(self) -> int: ...
    @property
    def smallest_time_ns(self) -> int: ...
    @property
    def wall_notes(self) -> list[tuple[int, int, int, int, int]]: ...
    @property
    def other_notes(self) -> int: ...
    @property
    def messages(self) -> int: ...
    @property
    def skipped_by_code(self) -> list[tuple[int, int]]: ...
    @property
    def comms(self) -> list[tuple[int, bytes]]: ...
    @property
    def records_per_file(self) -> list[int]: ...

def index_ftrace_records(buf: bytes, at: int, stop: int) -> tuple[int, int, ArrowBatch]:
    """Whole records of the ftrace blk tracer's binary stream in buf[at:stop]: (end, offset of
    a non-record or -1, columns start/pdu_len/cpu/device/pid/time)."""

def renumbered_blk_records(
    buf: bytes, start: Any, pdu_len: Any, device_index: Any, sequences: list[int]
) -> tuple[bytes, list[int]]:
    """The records at `start` without ftrace's header, renumbered per device."""

class BusyPeriods:
    """iostat's busy periods (rust/src/stats/islands.rs): requests' [busy_from_ns, c_time_ns]
    spans in, the islands they make out; swept as they come, or sorted (the exact definition,
    for spans that end before they start)."""

    def __init__(self, sorted: bool) -> None: ...
    def feed(self, requests: Any) -> bool:
        """False when a sweep met a span ending before its start: start again, sorted."""
    def islands(self) -> ArrowBatch:
        """(dev_major, dev_minor, lo, hi), one row per island."""

class IostatCounts:
    """iostat's `done` sums per device and interval (rust/src/stats/iostat.rs), from the
    requests as the pass writes them."""

    def __init__(self, interval_ns: int, origin_ns: int) -> None: ...
    def feed(self, requests: Any) -> None: ...
    def done(self) -> ArrowBatch:
        """(dev_major, dev_minor, k, reads, writes, then NAME_hi and NAME_lo of read_sectors,
        write_sectors, read_wait_ns, write_wait_ns and wait_ns)."""

class IssuerLoads:
    """The findings' normal loads per issuer and second (rust/src/stats/loads.rs), from the
    bios as the pass writes them."""

    def __init__(self, bin_ns: int) -> None: ...
    def feed(self, bios: Any) -> None: ...
    def bins(self) -> ArrowBatch:
        """(dev_major, dev_minor, comm, op, flags, sector, pid, bin), NAME_hi and NAME_lo of
        byte_ns, io_ns and bytes, and ios."""

class StagePicks:
    """stage_stats' exact percentiles (rust/src/stats/picks.rs): the latency at each wanted
    rank of a value bucket, from the bios' stage times."""

    def __init__(self, hits: Any, groups: Any) -> None: ...
    def feed(self, bios: Any) -> None: ...
    def picks(self) -> ArrowBatch:
        """(level_code, id, stage, permille, v), one row per hit."""

class HeatmapCells:
    """latency_heatmap's cells (rust/src/stats/heatmap.rs): bios in (those that completed
    count), one row per (device, stage, time bin, bucket) out, in the time bins given per
    device (dev_major, dev_minor, start_ns, width_ns); observers: the capture's own process
    names."""

    def __init__(self, bins: Any, observers: list[str]) -> None: ...
    def feed(self, bios: Any) -> None: ...
    def cells(self) -> ArrowBatch:
        """(dev_major, dev_minor, stage, bin, bucket, n, observer_n, max_ns, slowest_comm)."""

class SpikeWindowRows:
    """The findings' spike windows (rust/src/stats/spikes.rs): bios in (the heatmap's; those
    that completed count), one row per (device, window of completion) out."""

    def __init__(self, window_ns: int, metric: str) -> None: ...
    def feed(self, bios: Any) -> None: ...
    def windows(self) -> ArrowBatch:
        """(dev_major, dev_minor, win, ios, p99_ns, max_ns, peak_ns), in that order."""
