INCLUDE bios, op_class;

-- Every bio's stage times with the classes its latencies are reported under (stage_stats,
-- latency_hist).
CREATE VIEW internal._bio_class(
    q_eid BIGINT,       -- Q event id
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    op_base VARCHAR,    -- op_class(): read write discard flush other
    op_class VARCHAR,   -- op_base, /sync, /meta from RWBS
    process VARCHAR,    -- submitting comm ('?' if unknown)
    q_time_ns BIGINT,   -- Q
    g_time_ns BIGINT,   -- first G of its pieces
    i_time_ns BIGINT,   -- first I
    m_time_ns BIGINT,   -- first M/F
    d_time_ns BIGINT,   -- earliest last-D of its requests
    merged BOOLEAN,     -- some piece merged (M/F)
    d2c_ns BIGINT,      -- D to last completion
    q2c_ns BIGINT       -- Q to last completion
) AS
SELECT
    q_eid,
    dev_major,
    dev_minor,
    op_base,
    bio_op_class(op_base, flags) AS op_class,
    coalesce(comm, '?') AS process,
    q_time_ns,
    g_time_ns,
    i_time_ns,
    m_time_ns,
    d_time_ns,
    merged,
    d2c_ns,
    q2c_ns
FROM (
    SELECT *, op_class(op, flags, sector) AS op_base FROM bios
);
