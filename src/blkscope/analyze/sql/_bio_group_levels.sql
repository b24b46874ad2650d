-- The names of every reporting group of bio latencies at each level: the ids of _bio_groups
-- (gid at level 1 'process', cid at 2 'class', oid at 3 'op', did at 4 'device'; the level codes
-- are the Q2Q scope codes of _bio_stages), with the labels stage_stats and latency_hist print.
-- needs: _bio_groups
SELECT DISTINCT
    level_code,                                                     -- 1 process, 2 class, 3 op, 4 device
    ['process', 'class', 'op', 'device'][level_code] AS level,      -- its name
    id,                                                             -- gid, cid, oid or did
    dev_major,                                                      -- device major
    dev_minor,                                                      -- device minor
    op_class,                                                       -- op class, op, or '*' (device)
    process                                                         -- process comm, or '*'
FROM (
    SELECT 1 AS level_code, gid AS id, dev_major, dev_minor, op_class, process FROM _bio_groups
    UNION ALL SELECT 2, cid, dev_major, dev_minor, op_class, '*' FROM _bio_groups
    UNION ALL SELECT 3, oid, dev_major, dev_minor, op_base, '*' FROM _bio_groups
    UNION ALL SELECT 4, did, dev_major, dev_minor, '*', '*' FROM _bio_groups
)
