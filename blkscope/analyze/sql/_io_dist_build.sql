-- The `io_dist` table: log2 distributions of IO sizes and seek distances per device and op.
-- metric 'q_size': bio sizes at Q; 'd_size': request sizes at D; 'd2d_seek': distance in
-- sectors from the end of the previous D on the device (any op) to this D's start, 0 meaning
-- sequential; 'q2q_seek' the same between consecutive Qs. Bucket b holds [2^b, 2^(b+1)); 0
-- goes to bucket -1. (The windows partition by one integer per device: cheaper than two keys.)
-- needs: events
-- materialize: table io_dist
WITH d AS (
    SELECT dev_major, dev_minor, op, time_ns, sector, nsectors,
           abs(sector - lag(sector + nsectors) OVER w) AS seek
    FROM events WHERE action = 'D' AND sector IS NOT NULL AND nsectors > 0
    WINDOW w AS (PARTITION BY dev_major::BIGINT << 32 | dev_minor ORDER BY time_ns, input_id, line_no)
), q AS (
    SELECT dev_major, dev_minor, op, time_ns, sector, nsectors,
           abs(sector - lag(sector + nsectors) OVER w) AS seek
    FROM events WHERE action = 'Q' AND sector IS NOT NULL AND nsectors > 0
    WINDOW w AS (PARTITION BY dev_major::BIGINT << 32 | dev_minor ORDER BY time_ns, input_id, line_no)
), v AS (
    SELECT dev_major, dev_minor, op, 'q_size' AS metric, nsectors::BIGINT AS value FROM q
    UNION ALL SELECT dev_major, dev_minor, op, 'd_size', nsectors FROM d
    UNION ALL SELECT dev_major, dev_minor, op, 'd2d_seek', seek FROM d WHERE seek IS NOT NULL
    UNION ALL SELECT dev_major, dev_minor, op, 'q2q_seek', seek FROM q WHERE seek IS NOT NULL
), b AS (
    SELECT *, log2_bucket(value) AS bucket FROM v
)
SELECT
    dev_major,                                                     -- device major
    dev_minor,                                                     -- device minor
    op,                                                            -- R W D N
    metric,                                                        -- q_size d_size d2d_seek q2q_seek
    bucket,                                                        -- log2 bucket number
    CASE WHEN bucket < 0 THEN 0 ELSE (1::BIGINT << bucket) END AS lo, -- bucket start (sectors)
    (1::BIGINT << (bucket + 1)) AS hi,                             -- bucket end, exclusive
    count(*) AS n,                                                 -- values in the bucket
    sum(value)::BIGINT AS total                                    -- their sum (sectors)
FROM b
GROUP BY ALL
ORDER BY dev_major, dev_minor, op, metric, bucket
