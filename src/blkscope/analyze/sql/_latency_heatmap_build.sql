INCLUDE bios, time_bins, op_class, buckets;

-- The `latency_heatmap` table: how many bios completed in each time bin (time_bins, at C) with
-- a D2C or Q2C latency in each log-scaled bucket, the picture that shows a latency's modes and
-- outliers over time where percentile lines hide them. Buckets are quarter octaves: each power
-- of two is cut into 4 equal parts (bucket 4e + k holds [(4 + k) 2^(e-2), (5 + k) 2^(e-2)) ns
-- for e >= 2); latencies under 4 ns have a bucket each (bucket = the latency). Integer
-- arithmetic only (log2_floor), so a bucket's edges are exact.
CREATE VIEW internal._latency_heatmap_build(LIKE latency_heatmap) AS
WITH lat AS (
    SELECT b.dev_major, b.dev_minor, s.stage, (b.c_time_ns - t.start_ns) // t.width_ns AS bin,
           CASE s.stage WHEN 'D2C' THEN b.d2c_ns ELSE b.q2c_ns END AS ns,
           coalesce(b.comm, '?') AS comm, is_observer(b.comm) AS observer, b.c_time_ns
    FROM bios b JOIN time_bins t USING (dev_major, dev_minor), (VALUES ('D2C'), ('Q2C')) s(stage)
    WHERE b.c_time_ns IS NOT NULL
), bucketed AS (
    -- without CASE: DuckDB evaluates a macro inside a CASE branch once per use of its argument
    -- (log2_floor's nested shifts use theirs 64 times); at the top level, once
    SELECT *, small * greatest(ns, 0) + (1 - small) * (4 * e + ((big >> (e - 2)) & 3)) AS bucket,
           (1 - small) * (e - 2) AS shift
    FROM (SELECT *, (ns < 4)::INTEGER AS small, greatest(ns, 4) AS big,
                 log2_floor(greatest(ns, 4)) AS e
          FROM lat WHERE ns IS NOT NULL)
)
SELECT
    dev_major,
    dev_minor,
    stage,
    bin::INTEGER AS bin,
    bucket::INTEGER AS bucket,
    CASE WHEN bucket < 4 THEN bucket ELSE (4 + (bucket & 3)) << shift END::BIGINT AS lo_ns,
    CASE WHEN bucket < 4 THEN bucket + 1 ELSE (5 + (bucket & 3)) << shift END::BIGINT AS hi_ns,
    count(*)::BIGINT AS n,
    (count(*) FILTER (observer))::BIGINT AS observer_n,
    max(ns)::BIGINT AS max_ns,
    -- the first to complete on a tie, then by name: merged bios tie on both, and DuckDB's
    -- parallel groups would otherwise pick either
    arg_max(comm, {'ns': ns, 'first': -c_time_ns, 'comm': comm}) AS slowest_comm
FROM bucketed
GROUP BY dev_major, dev_minor, stage, bin, bucket, shift
ORDER BY dev_major, dev_minor, stage, bin, bucket;
