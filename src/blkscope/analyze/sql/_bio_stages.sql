INCLUDE _bio_groups, _bio_q2q, stages, buckets;

-- Long form of every bio's stage latencies: one row per (bio, stage) that the bio went through,
-- keyed by the integer ids of _bio_groups. Q2Q is the gap to the previous Q (in time, then
-- event id order), reported once per scope it was measured at (process, class, op, device),
-- because a gap between one process's Qs is not a gap of the device. The streaming pass
-- measures the gaps as it meets each Q (rust/src/pass/q2q.rs, `internal._bio_q2q`: one row per
-- bio, while `analyze` runs, with the bio's group key and its stage times as `bios` has them);
-- here the gaps and the stage latencies (bio_stage_ns) are keyed and bucketed. Stage and scope
-- are small codes (see the columns). The definition of what the pass counts (_stage_buckets)
-- and the compiled picker of stage_stats' percentiles keeps (analyze/compiled.py), which read
-- the bios' stage times themselves: not read by analyze, and never materialised (about ten
-- rows per bio).
CREATE VIEW internal._bio_stages(
    gid INTEGER,     -- device x op class x process (_bio_groups; it names the coarser groups)
    scope UTINYINT,  -- Q2Q: level its gap was computed at, 1 process 2 class 3 op 4 device; else 0
    stage UTINYINT,  -- 1 Q2G 2 G2I 3 I2D 4 Q2M 5 M2D 6 D2C 7 Q2C 8 Q2Q
    ns BIGINT,       -- the latency in ns
    b SMALLINT       -- its value bucket (value_bucket, |b| < 2^15: _stage_buckets counts per bucket)
) AS
WITH q AS NOT MATERIALIZED (
    -- read once per use below, each reading only its columns (materialised, DuckDB would hold
    -- every bio)
    SELECT g.gid, q.* FROM internal._bio_q2q q JOIN internal._bio_groups g USING (group_key)
), stages AS (
    -- a bio's stage latencies and its gaps, each unnested beside their codes (DuckDB zips lists
    -- unnested in one SELECT): plain lists, cheaper to unnest than lists of {code, ns} structs
    -- or one list of all 11 built for every bio; not LATERAL (VALUES ...), which DuckDB plans
    -- as a join back onto the bios
    SELECT gid, 0 AS scope, unnest(bio_stage_codes()) AS stage,
           unnest(bio_stage_ns(g_time_ns, i_time_ns, d_time_ns, m_time_ns, merged, q_time_ns,
                               d2c_ns, q2c_ns)) AS ns
    FROM q
    UNION ALL
    SELECT gid, unnest([1, 2, 3, 4]), 8, unnest([process_ns, class_ns, op_ns, device_ns]) FROM q
)
SELECT
    gid,
    scope::UTINYINT AS scope,
    stage::UTINYINT AS stage,
    ns,
    value_bucket(ns)::SMALLINT AS b
FROM stages WHERE ns IS NOT NULL;
