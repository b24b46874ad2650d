INCLUDE _bio_groups, _stage_counts;

-- Bio stage latencies counted per value bucket at each reporting level: one row per (level,
-- group, stage, value bucket) with the count, range and sum of the latencies in it. stage_stats
-- takes counts, means, extremes and the buckets holding each percentile from here, and
-- latency_hist its log2 histograms (each value bucket lies in one log2 bucket). The latencies
-- are counted once per finest group (gid) and the counts are then summed into the coarser
-- levels: exact, because a bucket is a range of values, and four times less work than counting
-- every latency once per level. A Q2Q gap counts only at the level whose scope it was computed
-- at (_bio_stages); every other latency counts at all four. The streaming pass counts the
-- finest groups as it writes each bio (rust/src/pass/stages.rs, `internal._stage_counts`: what
-- grouping _bio_stages by gid, scope, stage and b gives, without the ~11 rows a bio).
CREATE TABLE internal._stage_buckets(
    level_code INTEGER,  -- 1 process, 2 class, 3 op, 4 device (_bio_group_levels)
    id INTEGER,          -- the group at that level (gid, cid, oid or did)
    stage UTINYINT,      -- stage code (bio_stage_codes; 8 Q2Q)
    b SMALLINT,          -- value bucket (value_bucket)
    c BIGINT,            -- latencies in the bucket
    lo BIGINT,           -- the smallest of them, ns
    hi BIGINT,           -- the largest, ns
    total HUGEINT        -- their sum, ns (HUGEINT: exact)
) AS
WITH fine AS (
    SELECT g.gid, f.scope, f.stage, f.b, f.c, f.lo, f.hi,
           f.total_hi::HUGEINT * 4294967296 + f.total_lo AS total
    FROM internal._stage_counts f JOIN internal._bio_groups g USING (group_key)
), x AS (
    SELECT f.*, g.cid, g.oid, g.did FROM fine f JOIN internal._bio_groups g USING (gid)
), levels AS (
    -- which scopes each level counts, joined: four filters on scope here (one per level) were
    -- pushed by DuckDB, OR-ed, under `fine`'s aggregate: a test of every latency that keeps
    -- them all
    SELECT m.level_code, [x.gid, x.cid, x.oid, x.did][m.level_code] AS id, x.stage, x.b, x.c,
           x.lo, x.hi, x.total
    FROM x JOIN (VALUES (0, 1), (0, 2), (0, 3), (0, 4), (1, 1), (2, 2), (3, 3), (4, 4))
                AS m(scope, level_code) ON m.scope = x.scope
)
SELECT
    level_code,
    id,
    stage,
    b,
    sum(c)::BIGINT AS c,
    min(lo) AS lo,
    max(hi) AS hi,
    sum(total) AS total
FROM levels GROUP BY ALL;
