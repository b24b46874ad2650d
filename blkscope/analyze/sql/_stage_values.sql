-- Every bio stage latency once per reporting level it counts at, keyed by one integer per
-- (level, group, stage) for stage_stats' exact percentiles (exact_quantiles groups on g, reads
-- v). A Q2Q gap counts only at the level whose scope it was computed at (_bio_stages).
-- needs: _bio_stages
WITH s AS (
    SELECT 1 AS level_code, gid AS id, stage, ns FROM _bio_stages WHERE scope IN (0, 1)
    UNION ALL SELECT 2, cid, stage, ns FROM _bio_stages WHERE scope IN (0, 2)
    UNION ALL SELECT 3, oid, stage, ns FROM _bio_stages WHERE scope IN (0, 3)
    UNION ALL SELECT 4, did, stage, ns FROM _bio_stages WHERE scope IN (0, 4)
)
SELECT
    (level_code::BIGINT << 40) | (id::BIGINT << 8) | stage AS g, -- level code << 40 | group id << 8 | stage
    ns AS v                                                 -- the latency in ns
FROM s
