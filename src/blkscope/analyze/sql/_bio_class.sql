-- Every bio's stage times with the classes its latencies are reported under (stage_stats,
-- latency_hist).
-- needs: bios
SELECT
    q_eid,                                                             -- Q event id
    dev_major,                                                         -- device major
    dev_minor,                                                         -- device minor
    op_base,                                                           -- op_class(): read write discard flush other
    bio_op_class(op_base, flags) AS op_class,                          -- op_base, /sync, /meta from RWBS
    coalesce(comm, '?') AS process,                                    -- submitting comm ('?' if unknown)
    q_time_ns,                                                         -- Q
    g_time_ns,                                                         -- first G of its pieces
    i_time_ns,                                                         -- first I
    m_time_ns,                                                         -- first M/F
    d_time_ns,                                                         -- earliest last-D of its requests
    merged,                                                            -- some piece merged (M/F)
    d2c_ns,                                                            -- D to last completion
    q2c_ns                                                             -- Q to last completion
FROM (
    SELECT *, op_class(op, flags, sector) AS op_base FROM bios
)
