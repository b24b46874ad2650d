INCLUDE bio_counts, io_dist, request_counts, op_class;

-- Per device and op: merge ratio (#Q / #D as btt prints it), split and requeue counts, and the
-- share of sequential dispatches (a D starting where the previous D on the device ended).
-- Ops are op classes (op_class): data-less flush bios (Q FWS) and flush requests (D FN) are
-- both 'flush'.
CREATE VIEW io_ratios(
    dev_major INTEGER,        -- device major
    dev_minor INTEGER,        -- device minor
    op VARCHAR,               -- op class: read write discard flush other
    queued BIGINT,            -- bios (Q)
    dispatches BIGINT,        -- D events of data and flush requests
    merge_ratio DOUBLE,       -- #Q / #D
    merged_bios BIGINT,       -- bios merged into a request
    split_bios BIGINT,        -- bios split by X
    splits BIGINT,            -- X events they took
    split_ratio DOUBLE,       -- share of bios split
    requeues BIGINT,          -- R events
    partial_requests BIGINT,  -- requests cut by the trace
    sequential_share DOUBLE   -- share of D that are sequential
) AS
WITH b AS (
    -- sums of BIGINT are HUGEINT: cast back to the counts' type
    SELECT dev_major, dev_minor, op, sum(bios)::BIGINT AS queued, sum(merged)::BIGINT AS merged,
           sum(split)::BIGINT AS split, sum(splits)::BIGINT AS splits
    FROM bio_counts GROUP BY ALL
), r AS (
    SELECT dev_major, dev_minor, op,
           sum(dispatches) AS dispatches, sum(requeues) AS requeues,
           sum(partial)::BIGINT AS partial_requests
    FROM request_counts WHERE kind IN ('data', 'flush') GROUP BY ALL
), s AS (
    -- io_dist holds sized events only, whose class their op letter decides
    SELECT dev_major, dev_minor, op_class(op, '', 0) AS op,
           sum(n) FILTER (bucket = -1) AS seq, sum(n) AS seeks
    FROM io_dist WHERE metric = 'd2d_seek' GROUP BY ALL
)
SELECT
    dev_major,
    dev_minor,
    op,
    coalesce(b.queued, 0) AS queued,
    coalesce(r.dispatches, 0)::BIGINT AS dispatches,
    b.queued / nullif(r.dispatches, 0) AS merge_ratio,
    coalesce(b.merged, 0) AS merged_bios,
    coalesce(b.split, 0) AS split_bios,
    coalesce(b.splits, 0)::BIGINT AS splits,
    b.split / nullif(b.queued, 0) AS split_ratio,
    coalesce(r.requeues, 0)::BIGINT AS requeues,
    coalesce(r.partial_requests, 0) AS partial_requests,
    coalesce(s.seq, 0) / nullif(s.seeks, 0) AS sequential_share
FROM b FULL JOIN r USING (dev_major, dev_minor, op) LEFT JOIN s USING (dev_major, dev_minor, op)
ORDER BY dev_major, dev_minor, op;
