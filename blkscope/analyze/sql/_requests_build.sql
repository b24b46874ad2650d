-- The `requests` table as `blkscope analyze` stores it: _requests plus the process that
-- allocated each request (the earliest G piece that rode in it), its G time, and the earliest Q
-- of its bios. A flush-sequence end takes the Q of the latest preflush bio on its sector
-- (sector 0 for a data-less one) queued before it. acct_start_ns is where the kernel's disk
-- statistics start the request's await: the plug clock of its earliest bio, or of its G when
-- the submitter slept in between (_plug_clock.sql).
WITH req AS MATERIALIZED (
    SELECT * FROM _requests
), q AS (
    SELECT dev_major, dev_minor, (input_id::BIGINT << 40) + line_no AS q_eid, time_ns,
           coalesce(sector, 0) AS sector, flush
    FROM events WHERE action = 'Q'
), rode AS (
    SELECT p.d_eid,
           arg_min(p.pid, p.landing_time_ns) FILTER (p.landing_kind = 'G') AS pid,
           arg_min(p.comm, p.landing_time_ns) FILTER (p.landing_kind = 'G') AS comm,
           min(p.landing_time_ns) FILTER (p.landing_kind = 'G') AS g_time_ns,
           min(q.time_ns) AS q_time_ns,
           greatest(min(qc.clock_ns),
                    arg_min(gc.clock_ns, p.landing_time_ns) FILTER (p.landing_kind = 'G'))
             AS clock_ns
    FROM _piece_requests p JOIN q USING (q_eid)
    LEFT JOIN _plug_clock qc ON qc.eid = p.q_eid
    LEFT JOIN _plug_clock gc ON gc.eid = p.landing_eid
    WHERE p.d_eid IS NOT NULL GROUP BY p.d_eid
), flush_q AS (
    SELECT dev_major, dev_minor, sector, time_ns FROM q WHERE flush
), flush_end_q AS (
    -- the ASOF join runs over flush ends only, then joins back: over every request it sorts all
    -- of them (and with a condition on the request alone, runs as a nested loop)
    SELECT r.c_eid, fq.time_ns
    FROM (SELECT * FROM req WHERE kind = 'flush_end') r
    ASOF JOIN flush_q fq
      ON fq.dev_major = r.dev_major AND fq.dev_minor = r.dev_minor
     AND fq.sector = r.sector AND fq.time_ns <= r.c_time_ns
), joined AS (
    SELECT r.*, g.pid, g.comm, g.g_time_ns,
           coalesce(g.q_time_ns, f.time_ns) AS q_time_ns,
           -- before Linux 6.9 (blkscope_plug_clock = 0) the clock is read at allocation (G)
           CASE WHEN coalesce(getvariable('blkscope_plug_clock'), 1) = 1
                THEN coalesce(g.clock_ns, g.q_time_ns, f.time_ns)
                ELSE coalesce(g.g_time_ns, g.q_time_ns, f.time_ns) END AS acct_start_ns
    FROM req r
    LEFT JOIN rode g ON g.d_eid = r.d_eid
    LEFT JOIN flush_end_q f ON r.kind = 'flush_end' AND f.c_eid = r.c_eid
)
SELECT
    dev_major,                                   -- device major
    dev_minor,                                   -- device minor
    op,                                          -- R/W/D/N, F for a flush
    sector,                                      -- start sector (null for a flush)
    nsectors,                                    -- length in sectors
    kind,                                        -- data, flush, flush_end
    flags,                                       -- RWBS of the first event
    q_time_ns,                                   -- earliest Q of the bios in it
    g_time_ns,                                   -- allocation (G) of the request
    acct_start_ns,                               -- start of the kernel's await (_plug_clock)
    first_d_time_ns,                             -- first D
    d_time_ns,                                   -- last D
    c_time_ns,                                   -- C
    d2c_ns,                                      -- last D to C
    requeues,                                    -- R count
    dispatches,                                  -- D count
    error,                                       -- C error code
    partial,                                     -- cut by trace start/end
    pid,                                         -- pid of the allocating G
    coalesce(comm, d_comm) AS process,           -- its comm, else the D's
    d_eid,                                       -- first D event id
    c_eid                                        -- C event id
FROM joined
ORDER BY coalesce(c_time_ns, d_time_ns), d_eid
