INCLUDE events;

-- blkparse's own per-CPU accounting (blkparse.c account_*), recomputed from events.
-- Rules, as blkparse applies them:
--   * "write" means the write bit: op W, or D (discard carries it); R and a bare flush N are reads.
--   * KiB per event is bytes >> 10, i.e. nsectors // 2, summed per event.
--   * a requeue (R) counts on its own and takes its KiB back out of the dispatch KiB.
--   * M and F both count as merges; U counts as an IO unplug, UT as a timer unplug.
--   * every number is kept per CPU (the CPU that logged the event); Total is their sum.
CREATE VIEW blkparse_totals(
    dev_major INTEGER,            -- device major
    dev_minor INTEGER,            -- device minor
    cpu INTEGER,                  -- CPU that logged the events
    reads_queued BIGINT,          -- Q without the write bit
    reads_queued_kib BIGINT,      -- their KiB
    writes_queued BIGINT,         -- Q with the write bit
    writes_queued_kib BIGINT,     -- their KiB
    read_dispatches BIGINT,       -- D reads
    read_dispatches_kib BIGINT,   -- D read KiB minus requeued KiB
    write_dispatches BIGINT,      -- D writes
    write_dispatches_kib BIGINT,  -- D write KiB minus requeued KiB
    reads_requeued BIGINT,        -- R reads
    writes_requeued BIGINT,       -- R writes
    reads_completed BIGINT,       -- C reads (flush completions included)
    reads_completed_kib BIGINT,   -- their KiB
    writes_completed BIGINT,      -- C writes
    writes_completed_kib BIGINT,  -- their KiB
    read_merges BIGINT,           -- back and front merges, reads
    read_merges_kib BIGINT,       -- their KiB
    write_merges BIGINT,          -- back and front merges, writes
    write_merges_kib BIGINT,      -- their KiB
    io_unplugs BIGINT,            -- explicit unplugs
    timer_unplugs BIGINT          -- timer unplugs
) AS
SELECT
    dev_major,
    dev_minor,
    cpu,
    count(*) FILTER (action = 'Q' AND NOT is_write) AS reads_queued,
    coalesce(sum(kib) FILTER (action = 'Q' AND NOT is_write), 0)::BIGINT AS reads_queued_kib,
    count(*) FILTER (action = 'Q' AND is_write) AS writes_queued,
    coalesce(sum(kib) FILTER (action = 'Q' AND is_write), 0)::BIGINT AS writes_queued_kib,
    count(*) FILTER (action = 'D' AND NOT is_write) AS read_dispatches,
    (coalesce(sum(kib) FILTER (action = 'D' AND NOT is_write), 0)
      - coalesce(sum(kib) FILTER (action = 'R' AND NOT is_write), 0))::BIGINT AS read_dispatches_kib,
    count(*) FILTER (action = 'D' AND is_write) AS write_dispatches,
    (coalesce(sum(kib) FILTER (action = 'D' AND is_write), 0)
      - coalesce(sum(kib) FILTER (action = 'R' AND is_write), 0))::BIGINT AS write_dispatches_kib,
    count(*) FILTER (action = 'R' AND NOT is_write) AS reads_requeued,
    count(*) FILTER (action = 'R' AND is_write) AS writes_requeued,
    count(*) FILTER (action = 'C' AND NOT is_write) AS reads_completed,
    coalesce(sum(kib) FILTER (action = 'C' AND NOT is_write), 0)::BIGINT AS reads_completed_kib,
    count(*) FILTER (action = 'C' AND is_write) AS writes_completed,
    coalesce(sum(kib) FILTER (action = 'C' AND is_write), 0)::BIGINT AS writes_completed_kib,
    count(*) FILTER (action IN ('M', 'F') AND NOT is_write) AS read_merges,
    coalesce(sum(kib) FILTER (action IN ('M', 'F') AND NOT is_write), 0)::BIGINT AS read_merges_kib,
    count(*) FILTER (action IN ('M', 'F') AND is_write) AS write_merges,
    coalesce(sum(kib) FILTER (action IN ('M', 'F') AND is_write), 0)::BIGINT AS write_merges_kib,
    count(*) FILTER (action = 'U') AS io_unplugs,
    count(*) FILTER (action = 'UT') AS timer_unplugs
FROM (
    SELECT *, op IN ('W', 'D') AS is_write, coalesce(nsectors, 0) // 2 AS kib
    FROM events
    WHERE pc_bytes IS NULL AND pdu IS NULL
)
GROUP BY dev_major, dev_minor, cpu
ORDER BY dev_major, dev_minor, cpu;
