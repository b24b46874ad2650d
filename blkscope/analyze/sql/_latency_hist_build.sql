-- The `latency_hist` table: log2 histograms of every bio stage latency, per device and op
-- (read/write/discard/flush/other) and over the whole device (op '*'). Bucket b holds
-- latencies in [2^b, 2^(b+1)) ns; a latency of 0 ns goes to bucket -1 ([0, 1)).
WITH s AS (
    SELECT dev_major, dev_minor, op_base, stage, ns,
           CASE WHEN ns <= 0 THEN -1 ELSE floor(log2(ns))::INTEGER END AS bucket
    FROM _bio_stages WHERE scope IS NULL OR scope = 'op'
), d AS (
    SELECT dev_major, dev_minor, '*' AS op_base, stage, ns, bucket
    FROM _bio_stages, LATERAL (SELECT CASE WHEN ns <= 0 THEN -1
                                           ELSE floor(log2(ns))::INTEGER END AS bucket)
    WHERE scope IS NULL OR scope = 'device'
)
SELECT
    dev_major,                                                   -- device major
    dev_minor,                                                   -- device minor
    op_base AS op_class,                                         -- read/write/discard/flush/other, '*'
    stage,                                                       -- Q2G G2I I2D Q2M M2D D2C Q2C Q2Q
    bucket,                                                      -- log2 bucket number
    CASE WHEN bucket < 0 THEN 0 ELSE (1::BIGINT << bucket) END AS lo_ns,   -- bucket start, ns
    (1::BIGINT << (bucket + 1)) AS hi_ns,                        -- bucket end (exclusive), ns
    count(*) AS n                                                -- latencies in the bucket
FROM (SELECT * FROM s UNION ALL SELECT * FROM d)
GROUP BY ALL
ORDER BY dev_major, dev_minor, op_class, stage, bucket
