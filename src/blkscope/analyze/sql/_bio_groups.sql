INCLUDE _bio_q2q;

-- The reporting groups of bio latencies, numbered: one row per (device, op class, process) that
-- some bio has, with integer ids for it and for the coarser groups it belongs to. The long form
-- of latencies (_bio_stages) carries these ids instead of strings: grouping millions of rows on
-- small integers is several times cheaper. Read from the streaming pass's per-bio file, whose
-- group_key stands for the group's strings (one group per key): grouped on it, not on them.
CREATE TABLE internal._bio_groups(
    group_key BIGINT,   -- the pass's key of the group (internal._bio_q2q)
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    op_base VARCHAR,    -- read write discard flush other
    op_class VARCHAR,   -- op_base plus /sync, /meta
    process VARCHAR,    -- submitting comm
    gid INTEGER,        -- this group
    cid INTEGER,        -- its device x op class
    oid INTEGER,        -- its device x op
    did INTEGER         -- its device
) AS
WITH g AS (
    SELECT group_key, any_value(dev_major) AS dev_major, any_value(dev_minor) AS dev_minor,
           any_value(op_base) AS op_base, any_value(op_class) AS op_class,
           any_value(process) AS process
    FROM internal._bio_q2q GROUP BY group_key
)
SELECT
    group_key,
    dev_major,
    dev_minor,
    op_base,
    op_class,
    process,
    dense_rank() OVER (ORDER BY dev_major, dev_minor, op_class, process)::INTEGER AS gid,
    dense_rank() OVER (ORDER BY dev_major, dev_minor, op_class)::INTEGER AS cid,
    dense_rank() OVER (ORDER BY dev_major, dev_minor, op_base)::INTEGER AS oid,
    dense_rank() OVER (ORDER BY dev_major, dev_minor)::INTEGER AS did
FROM g;
