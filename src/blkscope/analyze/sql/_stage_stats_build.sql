INCLUDE _bio_group_levels, _stage_buckets, _stage_picks, _stage_ranks, stages;

-- The `stage_stats` table: per stage, count/min/mean/percentiles/max at four levels:
-- device x op class x process, device x op class, device x op, and device ('*' = all).
-- The percentiles are quantile_disc's (the value at 0-based rank ceil(n * p) - 1 of the sorted
-- latencies), found without holding a group's latencies in memory: _stage_ranks gives the
-- bucket holding each wanted rank, a bucket holding one distinct value gives it, and the
-- compiled picker (analyze/compiled.py: `internal._stage_picks`) the others, from the
-- latencies of those buckets only, the way sql/macros/exact_quantiles.sql does for one level.
CREATE VIEW internal._stage_stats_build(LIKE stage_stats) AS
WITH agg AS (
    SELECT level_code, id, stage, sum(c)::BIGINT AS n, min(lo) AS min_ns, sum(total) / sum(c) AS mean_ns,
           max(hi) AS max_ns
    FROM internal._stage_buckets GROUP BY ALL
), q AS (
    SELECT h.level_code, h.id, h.stage, list(coalesce(p.v, h.lo) ORDER BY h.permille) AS q
    FROM internal._stage_ranks h LEFT JOIN internal._stage_picks p
      ON h.lo < h.hi AND p.level_code = h.level_code AND p.id = h.id AND p.stage = h.stage
     AND p.permille = h.permille
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
