-- Per device and op: merge ratio (#Q / #D as btt prints it), split and requeue counts, and the
-- share of sequential dispatches (a D starting where the previous D on the device ended).
-- Ops are op classes (concepts.py): data-less flush bios (Q FWS) and flush requests (D FN) are
-- both 'flush'.
-- needs: bios, io_dist, requests
WITH b AS (
    SELECT dev_major, dev_minor, op_class(op, flags, sector) AS op,
           count(*) AS queued, count(*) FILTER (merged) AS merged,
           count(*) FILTER (split) AS split, sum(pieces - 1) AS splits
    FROM bios GROUP BY ALL
), r AS (
    SELECT dev_major, dev_minor, op_class(op, flags, sector) AS op,
           sum(dispatches) AS dispatches, sum(requeues) AS requeues,
           count(*) FILTER (partial) AS partial_requests
    FROM requests WHERE kind IN ('data', 'flush') GROUP BY ALL
), s AS (
    -- io_dist holds sized events only, whose class their op letter decides
    SELECT dev_major, dev_minor, op_class(op, '', 0) AS op,
           sum(n) FILTER (bucket = -1) AS seq, sum(n) AS seeks
    FROM io_dist WHERE metric = 'd2d_seek' GROUP BY ALL
)
SELECT
    dev_major,                                                 -- device major
    dev_minor,                                                 -- device minor
    op,                                                        -- op class: read write discard flush other
    coalesce(b.queued, 0) AS queued,                           -- bios (Q)
    coalesce(r.dispatches, 0) AS dispatches,                   -- D events of data and flush requests
    b.queued / nullif(r.dispatches, 0) AS merge_ratio,         -- #Q / #D
    coalesce(b.merged, 0) AS merged_bios,                      -- bios merged into a request
    coalesce(b.split, 0) AS split_bios,                        -- bios split by X
    coalesce(b.splits, 0) AS splits,                           -- X events they took
    b.split / nullif(b.queued, 0) AS split_ratio,              -- share of bios split
    coalesce(r.requeues, 0) AS requeues,                       -- R events
    coalesce(r.partial_requests, 0) AS partial_requests,       -- requests cut by the trace
    coalesce(s.seq, 0) / nullif(s.seeks, 0) AS sequential_share -- share of D that are sequential
FROM b FULL JOIN r USING (dev_major, dev_minor, op) LEFT JOIN s USING (dev_major, dev_minor, op)
ORDER BY dev_major, dev_minor, op
