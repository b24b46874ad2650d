-- Who issued a bio and what kind of IO it is: the rules every table, finding and chart uses
-- (blkscope/concepts.py holds the same comm prefixes for the ingest's Arrow filters, and a test
-- holds the two together).

-- read, write, discard, flush or other, from a bio's or request's op letter, RWBS and sector.
-- A data-less preflush (Q FWS, no sector) and a bare flush (D FN, op N/F) are flushes; a write
-- carrying a preflush and FUA (Q FWFSM, with a sector) is a write.
CREATE MACRO op_class(
    op,     -- R/W/D/N/F, the op letter of the RWBS
    flags,  -- the RWBS as printed
    sector  -- the start sector (null for a data-less flush)
) RETURNS VARCHAR AS
CASE WHEN op IN ('N', 'F') OR (starts_with(flags, 'F') AND sector IS NULL) THEN 'flush'
     WHEN op = 'R' THEN 'read' WHEN op = 'W' THEN 'write' WHEN op = 'D' THEN 'discard'
     ELSE 'other' END;

-- The class a bio's latencies are reported under (stage_stats, latency_hist): its op class plus
-- /sync for a synchronous bio (S right after its op letters: WS, FWS, WFS, WFAS, RS) and /meta
-- for metadata (RWBS ending in M: WSM, RM). The streaming pass asks DuckDB for it once per RWBS
-- string it meets (stream/q2q.py): nothing else spells the suffixes out.
CREATE MACRO bio_op_class(
    op_base,  -- the bio's op_class()
    flags     -- its RWBS
) RETURNS VARCHAR AS
op_base
|| CASE WHEN regexp_matches(flags, '^F?[RWDN]F?A?S') THEN '/sync' ELSE '' END
|| CASE WHEN flags LIKE '%M' THEN '/meta' ELSE '' END;

-- Issued by a kernel flusher thread: kworker/u<pool>:<n> since Linux 3.10, flush-<dev> before.
CREATE MACRO is_flusher(
    comm  -- the issuing process name
) RETURNS BOOLEAN AS
coalesce((starts_with(comm, 'kworker/u') OR starts_with(comm, 'flush-')), false);

-- Issued by the ext4 journal thread (jbd2/<dev>-<n>).
CREATE MACRO is_journal(
    comm  -- the issuing process name
) RETURNS BOOLEAN AS
coalesce((starts_with(comm, 'jbd2/')), false);

-- Issued by the capture's own tools (blkscope capture and its samplers, the shared capture.sh,
-- the bpftrace probes beside the trace): the observer's IO, real but not the workload's. Exact
-- names, not prefixes: a user's own `iostat-exporter` is not ours.
CREATE MACRO is_observer(
    comm  -- the issuing process name
) RETURNS BOOLEAN AS
coalesce(comm IN ('blkscope', 'blktrace', 'blkparse', 'btrace', 'bpftrace', 'biosnoop', 'iostat',
                  'vmstat', 'capture.sh'), false);

-- A write issued by a flusher thread: what writeback means in every table and chart (a
-- flusher's discards and cache flushes are not writeback).
CREATE MACRO is_writeback_write(
    comm,   -- the issuing process name
    op,     -- the op letter
    flags,  -- the RWBS
    sector  -- the start sector
) RETURNS BOOLEAN AS
is_flusher(comm) AND op_class(op, flags, sector) = 'write';
