-- One row per request: its D..C life on one (device, sector, length) key. Events of a key are
-- cut into segments that each end at a C, so a later reuse of the same sector can never pair
-- with an older event. Within a segment the LAST D starts D2C (a requeue R re-dispatches).
-- A segment without D began before the trace; one without C was still in flight at its end.
-- Zero-length non-flush C's (flush sequence ends) are rows of their own, kind 'flush_end'.
-- On a bio-based device (device mapper, md: Q and C, never D) each C is a bio's completion,
-- kind 'bio', not partial.
-- Private: `requests` (the stored table) adds the allocating process; see _requests_build.sql.
SELECT
    dev_major,                                                        -- device major
    dev_minor,                                                        -- device minor
    CASE WHEN is_flush THEN 'F' ELSE arg_min(op, eid) END AS op,       -- R/W/D/N, F for a flush
    CASE WHEN is_flush THEN NULL ELSE k_sector END AS sector,          -- start sector (null for a flush)
    k_len AS nsectors,                                                -- length in sectors
    CASE WHEN is_flush THEN 'flush' WHEN bool_or(is_flush_end) THEN 'flush_end'
         WHEN bool_or(bio_based) THEN 'bio' ELSE 'data' END AS kind,   -- data, flush, flush_end, bio
    arg_min(rwbs, eid) AS flags,                                      -- RWBS of the first event (the D)
    min(time_ns) FILTER (action = 'D') AS first_d_time_ns,            -- first dispatch
    max(time_ns) FILTER (action = 'D') AS d_time_ns,                  -- last dispatch: D2C starts here
    max(time_ns) FILTER (action = 'C') AS c_time_ns,                  -- completion
    max(time_ns) FILTER (action = 'C')
      - max(time_ns) FILTER (action = 'D') AS d2c_ns,                 -- driver+device time, last D to C
    count(*) FILTER (action = 'R')::INTEGER AS requeues,              -- requeues (R) before completion
    count(*) FILTER (action = 'D')::INTEGER AS dispatches,            -- D events (1 + requeues normally)
    max(error) FILTER (action = 'C') AS error,                        -- completion error code
    (count(*) FILTER (action = 'C') = 0
      OR (count(*) FILTER (action = 'D') = 0
          AND NOT bool_or(is_flush_end OR bio_based))) AS partial,     -- cut by trace start/end
    arg_min(comm, eid) FILTER (action = 'D') AS d_comm,                -- comm on the first D
    min(eid) FILTER (action = 'D') AS d_eid,                          -- event id of the first D (bio link)
    max(eid) FILTER (action = 'C') AS c_eid                           -- event id of the C
FROM (
    SELECT *,
        coalesce(sum((action = 'C')::INTEGER) OVER (
            PARTITION BY dev_major, dev_minor, k_sector, k_len ORDER BY time_ns, eid
            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS segment
    FROM _request_events
    LEFT JOIN (SELECT dev_major, dev_minor, count(*) FILTER (action = 'D') = 0 AS bio_based
               FROM _request_events GROUP BY ALL) USING (dev_major, dev_minor)
)
GROUP BY dev_major, dev_minor, k_sector, k_len, is_flush, segment
