INCLUDE _stage_buckets;

-- The value bucket holding each rank stage_stats reports of every (level, group, stage): the
-- percentiles are quantile_disc's (the value at 0-based rank ceil(n * p) - 1 of the sorted
-- latencies), and the rank's offset among the latencies of its bucket says which of them it is
-- (found by the compiled picker, analyze/compiled.py, only where the bucket holds more than one
-- distinct value: lo < hi).
CREATE VIEW internal._stage_ranks(
    level_code INTEGER,     -- 1 process, 2 class, 3 op, 4 device (_bio_group_levels)
    id INTEGER,             -- the group at that level
    stage UTINYINT,         -- stage code (bio_stage_codes; 8 Q2Q)
    permille INTEGER,       -- the percentile, in thousandths: 500 900 990 999
    b SMALLINT,             -- the value bucket holding the rank (value_bucket)
    bucket_offset BIGINT,   -- the rank's 0-based offset among the bucket's latencies, in order
    lo BIGINT,              -- the bucket's smallest latency, ns
    hi BIGINT               -- its largest, ns
) AS
WITH cum AS (
    SELECT *, sum(c) OVER (PARTITION BY level_code, id, stage ORDER BY b
                           ROWS UNBOUNDED PRECEDING) - c AS before
    FROM internal._stage_buckets
), ranks AS (
    SELECT level_code, id, stage, permille, (n * permille + 999) // 1000 - 1 AS r
    FROM (SELECT level_code, id, stage, sum(c) AS n FROM internal._stage_buckets GROUP BY ALL),
         (SELECT unnest([500, 900, 990, 999]) AS permille)
)
SELECT
    k.level_code,
    k.id,
    k.stage,
    k.permille::INTEGER AS permille,
    c.b,
    (k.r - c.before)::BIGINT AS bucket_offset,
    c.lo,
    c.hi
FROM ranks k JOIN cum c USING (level_code, id, stage)
WHERE k.r >= c.before AND k.r < c.before + c.c;
