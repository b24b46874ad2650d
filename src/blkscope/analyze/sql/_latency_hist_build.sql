-- The `latency_hist` table: log2 histograms of every bio stage latency, per device and op
-- (read/write/discard/flush/other) and over the whole device (op '*'). Bucket b holds
-- latencies in [2^b, 2^(b+1)) ns; a latency of 0 ns goes to bucket -1 ([0, 1)). The counts are
-- _stage_buckets' at the op and device levels: each value bucket lies in one log2 bucket.
-- needs: _bio_group_levels, _stage_buckets
-- materialize: table latency_hist
WITH h AS (
    SELECT level_code, id, stage, value_bucket_log2(b) AS bucket, sum(c)::BIGINT AS n
    FROM _stage_buckets WHERE level_code IN (3, 4) GROUP BY ALL
)
SELECT
    l.dev_major,                                                 -- device major
    l.dev_minor,                                                 -- device minor
    l.op_class,                                                  -- read/write/discard/flush/other, '*'
    stage_name(h.stage) AS stage, -- stage name
    h.bucket,                                                    -- log2 bucket number
    CASE WHEN h.bucket < 0 THEN 0 ELSE (1::BIGINT << h.bucket) END AS lo_ns, -- bucket start, ns
    (1::BIGINT << (h.bucket + 1)) AS hi_ns,                      -- bucket end (exclusive), ns
    h.n                                                          -- latencies in the bucket
FROM h JOIN _bio_group_levels l USING (level_code, id)
ORDER BY dev_major, dev_minor, op_class, stage, bucket
