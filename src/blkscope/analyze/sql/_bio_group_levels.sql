INCLUDE _bio_groups;

-- The names of every reporting group of bio latencies at each level: the ids of _bio_groups
-- (gid at level 1 'process', cid at 2 'class', oid at 3 'op', did at 4 'device'; the level codes
-- are the Q2Q scope codes of _bio_stages), with the labels stage_stats and latency_hist print.
CREATE VIEW internal._bio_group_levels(
    level_code INTEGER,  -- 1 process, 2 class, 3 op, 4 device
    level VARCHAR,       -- its name
    id INTEGER,          -- gid, cid, oid or did
    dev_major INTEGER,   -- device major
    dev_minor INTEGER,   -- device minor
    op_class VARCHAR,    -- op class, op, or '*' (device)
    process VARCHAR      -- process comm, or '*'
) AS
SELECT DISTINCT
    level_code,
    ['process', 'class', 'op', 'device'][level_code] AS level,
    id,
    dev_major,
    dev_minor,
    op_class,
    process
FROM (
    SELECT 1 AS level_code, gid AS id, dev_major, dev_minor, op_class, process FROM internal._bio_groups
    UNION ALL SELECT 2, cid, dev_major, dev_minor, op_class, '*' FROM internal._bio_groups
    UNION ALL SELECT 3, oid, dev_major, dev_minor, op_base, '*' FROM internal._bio_groups
    UNION ALL SELECT 4, did, dev_major, dev_minor, '*', '*' FROM internal._bio_groups
);
