-- The reporting groups of bio latencies, numbered: one row per (device, op class, process) that
-- some bio has, with integer ids for it and for the coarser groups it belongs to. The long form
-- of latencies (_bio_stages) carries these ids instead of strings: grouping millions of rows on
-- small integers is several times cheaper.
-- needs: _bio_class
-- materialize: temp
WITH g AS (
    SELECT DISTINCT dev_major, dev_minor, op_base, op_class, process FROM _bio_class
)
SELECT
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
