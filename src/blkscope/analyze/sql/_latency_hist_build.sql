INCLUDE _bio_group_levels, _stage_buckets, stages, buckets;

-- The `latency_hist` table: log2 histograms of every bio stage latency, per device and op
-- (read/write/discard/flush/other) and over the whole device (op '*'). Bucket b holds
-- latencies in [2^b, 2^(b+1)) ns; a latency of 0 ns goes to bucket -1 ([0, 1)). The counts are
-- _stage_buckets' at the op and device levels: each value bucket lies in one log2 bucket.
CREATE VIEW internal._latency_hist_build(LIKE latency_hist) AS
WITH h AS (
    SELECT level_code, id, stage, value_bucket_log2(b) AS bucket, sum(c)::BIGINT AS n
    FROM internal._stage_buckets WHERE level_code IN (3, 4) GROUP BY ALL
)
SELECT
    l.dev_major,
    l.dev_minor,
    l.op_class,
    stage_name(h.stage) AS stage,
    h.bucket,
    CASE WHEN h.bucket < 0 THEN 0 ELSE (1::BIGINT << h.bucket) END AS lo_ns,
    (1::BIGINT << (h.bucket + 1)) AS hi_ns,
    h.n
FROM h JOIN internal._bio_group_levels l USING (level_code, id)
ORDER BY dev_major, dev_minor, op_class, stage, bucket;
