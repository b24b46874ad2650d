-- blkparse's own per-CPU accounting (blkparse.c account_*), recomputed from events.
-- Rules, as blkparse applies them:
--   * "write" means the write bit: op W, or D (discard carries it); R and a bare flush N are reads.
--   * KiB per event is bytes >> 10, i.e. nsectors // 2, summed per event.
--   * a requeue (R) counts on its own and takes its KiB back out of the dispatch KiB.
--   * M and F both count as merges; U counts as an IO unplug, UT as a timer unplug.
--   * every number is kept per CPU (the CPU that logged the event); Total is their sum.
-- needs: events
SELECT
    dev_major,                                                                          -- device major
    dev_minor,                                                                          -- device minor
    cpu,                                                                                -- CPU that logged the events
    count(*) FILTER (action = 'Q' AND NOT is_write)                  AS reads_queued,        -- Q without the write bit
    coalesce(sum(kib) FILTER (action = 'Q' AND NOT is_write), 0)     AS reads_queued_kib,    -- their KiB
    count(*) FILTER (action = 'Q' AND is_write)                      AS writes_queued,       -- Q with the write bit
    coalesce(sum(kib) FILTER (action = 'Q' AND is_write), 0)         AS writes_queued_kib,   -- their KiB
    count(*) FILTER (action = 'D' AND NOT is_write)                  AS read_dispatches,     -- D reads
    coalesce(sum(kib) FILTER (action = 'D' AND NOT is_write), 0)
      - coalesce(sum(kib) FILTER (action = 'R' AND NOT is_write), 0) AS read_dispatches_kib, -- D read KiB minus requeued KiB
    count(*) FILTER (action = 'D' AND is_write)                      AS write_dispatches,    -- D writes
    coalesce(sum(kib) FILTER (action = 'D' AND is_write), 0)
      - coalesce(sum(kib) FILTER (action = 'R' AND is_write), 0)     AS write_dispatches_kib,-- D write KiB minus requeued KiB
    count(*) FILTER (action = 'R' AND NOT is_write)                  AS reads_requeued,      -- R reads
    count(*) FILTER (action = 'R' AND is_write)                      AS writes_requeued,     -- R writes
    count(*) FILTER (action = 'C' AND NOT is_write)                  AS reads_completed,     -- C reads (flush completions included)
    coalesce(sum(kib) FILTER (action = 'C' AND NOT is_write), 0)     AS reads_completed_kib, -- their KiB
    count(*) FILTER (action = 'C' AND is_write)                      AS writes_completed,    -- C writes
    coalesce(sum(kib) FILTER (action = 'C' AND is_write), 0)         AS writes_completed_kib,-- their KiB
    count(*) FILTER (action IN ('M', 'F') AND NOT is_write)          AS read_merges,         -- back and front merges, reads
    coalesce(sum(kib) FILTER (action IN ('M', 'F') AND NOT is_write), 0) AS read_merges_kib, -- their KiB
    count(*) FILTER (action IN ('M', 'F') AND is_write)              AS write_merges,        -- back and front merges, writes
    coalesce(sum(kib) FILTER (action IN ('M', 'F') AND is_write), 0) AS write_merges_kib,    -- their KiB
    count(*) FILTER (action = 'U')                                   AS io_unplugs,          -- explicit unplugs
    count(*) FILTER (action = 'UT')                                  AS timer_unplugs        -- timer unplugs
FROM (
    SELECT *, op IN ('W', 'D') AS is_write, coalesce(nsectors, 0) // 2 AS kib
    FROM events
    WHERE pc_bytes IS NULL AND pdu IS NULL
)
GROUP BY dev_major, dev_minor, cpu
ORDER BY dev_major, dev_minor, cpu
