INCLUDE requests;

-- The requests the kernel's disk statistics (iostat, /proc/diskstats) count, with where their
-- await starts: a request counts when it completes; a data-less preflush write counts as a write
-- when its flush sequence ends (the flush_end rows); its await runs from the submitter's plug
-- clock (acct_start_ns: the first Q of its plug) to its C.
CREATE VIEW internal._iostat_requests(
    dev_major INTEGER,   -- device major
    dev_minor INTEGER,   -- device minor
    op VARCHAR,          -- R/W/D/N
    nsectors INTEGER,    -- length in sectors
    c_time_ns BIGINT,    -- completion
    start_ns BIGINT,     -- where its await starts
    busy_from_ns BIGINT  -- in flight (for %util) from its own first Q
) AS
SELECT
    dev_major,
    dev_minor,
    op,
    nsectors,
    c_time_ns,
    coalesce(acct_start_ns, q_time_ns, g_time_ns, first_d_time_ns, c_time_ns) AS start_ns,
    -- the plug clock is only a timestamp: in flight from the request's own first Q
    coalesce(q_time_ns, g_time_ns, first_d_time_ns, c_time_ns) AS busy_from_ns
FROM requests
WHERE (kind = 'flush_end' OR (kind = 'data' AND nsectors > 0)) AND c_time_ns IS NOT NULL;
