-- The reporting groups of bio latencies, numbered: one row per (device, op class, process) that
-- some bio has, with integer ids for it and for the coarser groups it belongs to. The long form
-- of latencies (_bio_stages) carries these ids instead of strings: grouping millions of rows on
-- small integers is several times cheaper. Read from the streaming pass's per-bio file, whose
-- group_key stands for the group's strings (one group per key): grouped on it, not on them.
-- needs: _bio_q2q
-- materialize: temp
WITH g AS (
    SELECT group_key, any_value(dev_major) AS dev_major, any_value(dev_minor) AS dev_minor,
           any_value(op_base) AS op_base, any_value(op_class) AS op_class,
           any_value(process) AS process
    FROM internal._bio_q2q GROUP BY group_key
)
SELECT
    group_key,                                                             -- the pass's key of the group (internal._bio_q2q)
    dev_major,                                                             -- device major
    dev_minor,                                                             -- device minor
    op_base,                                                               -- read write discard flush other
    op_class,                                                              -- op_base plus /sync, /meta
    process,                                                               -- submitting comm
    dense_rank() OVER (ORDER BY dev_major, dev_minor, op_class, process)::INTEGER AS gid, -- this group
    dense_rank() OVER (ORDER BY dev_major, dev_minor, op_class)::INTEGER AS cid,  -- its device x op class
    dense_rank() OVER (ORDER BY dev_major, dev_minor, op_base)::INTEGER AS oid,   -- its device x op
    dense_rank() OVER (ORDER BY dev_major, dev_minor)::INTEGER AS did             -- its device
FROM g
