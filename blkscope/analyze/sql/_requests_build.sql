-- The `requests` table as `blkscope analyze` stores it: _requests plus the process that
-- allocated each request (the earliest G piece that rode in it).
SELECT
    r.dev_major,                                   -- device major
    r.dev_minor,                                   -- device minor
    r.op,                                          -- R/W/D/N, F for a flush
    r.sector,                                      -- start sector (null for a flush)
    r.nsectors,                                    -- length in sectors
    r.kind,                                        -- data, flush, flush_end
    r.flags,                                       -- RWBS of the first event
    r.first_d_time_ns,                             -- first D
    r.d_time_ns,                                   -- last D
    r.c_time_ns,                                   -- C
    r.d2c_ns,                                      -- last D to C
    r.requeues,                                    -- R count
    r.dispatches,                                  -- D count
    r.error,                                       -- C error code
    r.partial,                                     -- cut by trace start/end
    g.pid,                                         -- pid of the allocating G
    coalesce(g.comm, r.d_comm) AS process,         -- its comm, else the D's
    r.d_eid,                                       -- first D event id
    r.c_eid                                        -- C event id
FROM _requests r
LEFT JOIN (
    SELECT d_eid, arg_min(pid, landing_time_ns) AS pid, arg_min(comm, landing_time_ns) AS comm
    FROM _piece_requests WHERE landing_kind = 'G' AND d_eid IS NOT NULL GROUP BY d_eid
) g ON g.d_eid = r.d_eid
ORDER BY coalesce(r.c_time_ns, r.d_time_ns), r.d_eid
