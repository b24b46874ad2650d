-- The requests the kernel's disk statistics (iostat, /proc/diskstats) count, with where their
-- await starts: a request counts when it completes; a data-less preflush write counts as a write
-- when its flush sequence ends (the flush_end rows); its await runs from the submitter's plug
-- clock (acct_start_ns: the first Q of its plug) to its C.
-- needs: requests
SELECT
    dev_major,                                                              -- device major
    dev_minor,                                                              -- device minor
    op,                                                                     -- R/W/D/N
    nsectors,                                                               -- length in sectors
    c_time_ns,                                                              -- completion
    coalesce(acct_start_ns, q_time_ns, g_time_ns, first_d_time_ns, c_time_ns)
      AS start_ns,                                                          -- where its await starts
    -- in flight (for %util) from its own first Q: the plug clock is only a timestamp
    coalesce(q_time_ns, g_time_ns, first_d_time_ns, c_time_ns) AS busy_from_ns -- in flight from
FROM requests
WHERE (kind = 'flush_end' OR (kind = 'data' AND nsectors > 0)) AND c_time_ns IS NOT NULL
