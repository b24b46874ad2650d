-- Long form of every bio's stage latencies: one row per (bio, stage) that the bio went through,
-- keyed by the integer ids of _bio_groups. Q2Q is the gap to the previous Q (in time, then
-- event id order), reported once per scope it was measured at (process, class, op, device),
-- because a gap between one process's Qs is not a gap of the device. The streaming pass
-- measures the gaps as it meets each Q (analyze/stream/q2q.py, `internal._bio_q2q`: one row per
-- bio, while `analyze` runs); here they are only keyed and bucketed. Stage and scope are small
-- codes (see the comments below). Not materialised: it is read twice (_stage_buckets counts
-- all of it, _stage_stats_build only the buckets holding a percentile), and computing it twice
-- costs less than holding its ~70 M rows at 10x (measured on the 10x fio capture: 14.5 CPU-s
-- for both reads against 13.6 with the table, which spilled 1.1 GB: peak RSS 320 MB, not 683).
-- needs: _bio_class, _bio_groups, _bio_q2q
WITH c AS (
    SELECT g.gid, k.q_time_ns, k.g_time_ns, k.i_time_ns, k.d_time_ns, k.m_time_ns, k.merged,
           k.d2c_ns, k.q2c_ns
    FROM _bio_class k JOIN _bio_groups g
      ON g.dev_major = k.dev_major AND g.dev_minor = k.dev_minor AND g.op_class = k.op_class
     AND g.process = k.process
), q AS (
    SELECT g.gid, q.process_ns, q.class_ns, q.op_ns, q.device_ns
    FROM internal._bio_q2q q JOIN _bio_groups g
      ON g.dev_major = q.dev_major AND g.dev_minor = q.dev_minor AND g.op_class = q.op_class
     AND g.process = q.process
), stages AS (
    -- unnest, not LATERAL (VALUES ...): DuckDB plans the lateral as a join back onto c
    SELECT gid, 0 AS scope, s.stage, s.ns
    FROM (SELECT *, unnest(bio_stage_list(g_time_ns, i_time_ns, d_time_ns, m_time_ns, merged,
                                          q_time_ns, d2c_ns, q2c_ns)) AS s FROM c)
    UNION ALL
    SELECT gid, s.scope, 8, s.ns
    FROM (SELECT gid, unnest([{'scope': 1, 'ns': process_ns}, {'scope': 2, 'ns': class_ns},
                              {'scope': 3, 'ns': op_ns}, {'scope': 4, 'ns': device_ns}]) AS s
          FROM q)
)
SELECT
    gid,                  -- device x op class x process (_bio_groups; it names the coarser groups)
    scope::UTINYINT AS scope, -- Q2Q: level its gap was computed at, 1 process 2 class 3 op 4 device; else 0
    stage::UTINYINT AS stage, -- 1 Q2G 2 G2I 3 I2D 4 Q2M 5 M2D 6 D2C 7 Q2C 8 Q2Q
    ns,                   -- the latency in ns
    value_bucket(ns)::SMALLINT AS b -- its value bucket (value_bucket, |b| < 2^15: _stage_buckets counts per bucket)
FROM stages WHERE ns IS NOT NULL
