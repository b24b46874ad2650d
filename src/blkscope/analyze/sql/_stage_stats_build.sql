INCLUDE _bio_group_levels, _bio_groups, _bio_stages, _stage_buckets, stages;

-- The `stage_stats` table: per stage, count/min/mean/percentiles/max at four levels:
-- device x op class x process, device x op class, device x op, and device ('*' = all).
-- The percentiles are quantile_disc's (the value at 0-based rank ceil(n * p) - 1 of the sorted
-- latencies), found without holding a group's latencies in memory: _stage_buckets gives the
-- bucket holding each wanted rank, and only the latencies of those buckets are sorted (none when
-- a bucket holds one distinct value), the way sql/macros/exact_quantiles.sql does for one level.
CREATE VIEW internal._stage_stats_build(LIKE stage_stats) AS
WITH cum AS (
    SELECT *, sum(c) OVER (PARTITION BY level_code, id, stage ORDER BY b
                           ROWS UNBOUNDED PRECEDING) - c AS before
    FROM internal._stage_buckets
), agg AS (
    SELECT level_code, id, stage, sum(c)::BIGINT AS n, min(lo) AS min_ns, sum(total) / sum(c) AS mean_ns,
           max(hi) AS max_ns
    FROM internal._stage_buckets GROUP BY ALL
), hits AS (
    -- the bucket holding each wanted rank, and the rank's offset among the bucket's latencies
    SELECT k.level_code, k.id, k.stage, k.permille, k.r - c.before AS offset, c.b, c.lo, c.hi
    FROM (SELECT level_code, id, stage, permille, (n * permille + 999) // 1000 - 1 AS r
          FROM agg, (SELECT unnest([500, 900, 990, 999]) AS permille)) k
    JOIN cum c USING (level_code, id, stage)
    WHERE k.r >= c.before AND k.r < c.before + c.c
), members AS (
    -- the finest groups (gid) each group of a level is made of
    SELECT 1 AS level_code, gid AS id, gid FROM internal._bio_groups
    UNION ALL SELECT 2, cid, gid FROM internal._bio_groups
    UNION ALL SELECT 3, oid, gid FROM internal._bio_groups
    UNION ALL SELECT 4, did, gid FROM internal._bio_groups
), spread AS (
    SELECT DISTINCT h.level_code, h.id, h.stage, h.b, m.gid
    FROM hits h JOIN members m USING (level_code, id) WHERE h.lo < h.hi
), ranked AS (
    SELECT p.level_code, p.id, p.stage, p.b, s.ns AS v,
           row_number() OVER (PARTITION BY p.level_code, p.id, p.stage, p.b ORDER BY s.ns) - 1
               AS offset
    FROM spread p JOIN internal._bio_stages s
      ON s.gid = p.gid AND s.stage = p.stage AND s.b = p.b
     AND (s.scope = 0 OR s.scope = p.level_code)
), q AS (
    SELECT h.level_code, h.id, h.stage, list(coalesce(x.v, h.lo) ORDER BY h.permille) AS q
    FROM hits h LEFT JOIN ranked x
      ON h.lo < h.hi AND x.level_code = h.level_code AND x.id = h.id AND x.stage = h.stage
     AND x.b = h.b AND x.offset = h.offset
    GROUP BY ALL
), a AS (
    SELECT * FROM agg JOIN q USING (level_code, id, stage)
)
SELECT
    l.dev_major,
    l.dev_minor,
    l.level,
    l.op_class,
    l.process,
    stage_name(a.stage) AS stage,
    a.n,
    a.min_ns,
    a.mean_ns,
    a.q[1] AS p50_ns,
    a.q[2] AS p90_ns,
    a.q[3] AS p99_ns,
    a.q[4] AS p999_ns,
    a.max_ns
FROM a JOIN internal._bio_group_levels l USING (level_code, id)
ORDER BY dev_major, dev_minor, level, op_class, process, stage;
