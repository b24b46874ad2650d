-- One row per request: its D..C life on one (device, sector, length) key, in time order.
-- A key's events are cut into runs: a run starts at a D that follows a C, so a later reuse of
-- the same sector never pairs with an older event. Inside a run the n-th issuing D pairs with
-- the n-th C (several requests of one key can be in flight at once: two writers of a sector,
-- D D C C). A D right after an R re-dispatches the requeued request: the LAST D starts D2C.
-- A C without D in the key's first run began before the trace; in a later run its D was lost
-- or it is a duplicate (seen in real traces): kind 'orphan'. A D without C was cut by the end.
-- Zero-length non-flush C's (flush sequence ends) are rows of their own, kind 'flush_end'.
-- On a bio-based device (device mapper, md: Q and C, never D) each C is a bio's completion,
-- kind 'bio', not partial.
-- Private: `requests` (the stored table) adds the allocating process; see _requests_build.sql.
-- The windows run over integers only (event id, key, time, action code) and the numbering is
-- joined back to the events: carrying the strings through every sort cost most of the time.
WITH coded AS (
    SELECT eid, dev_major, dev_minor, k_sector, k_len, time_ns,
           CASE action WHEN 'D' THEN 1 WHEN 'R' THEN 2 ELSE 3 END AS code   -- D=1 R=2 C=3
    FROM _request_events
), keyed AS (
    SELECT *, lag(code) OVER w AS prev_code
    FROM coded
    WINDOW w AS (PARTITION BY dev_major, dev_minor, k_sector, k_len ORDER BY time_ns, eid)
), runs AS (
    SELECT *, sum((code = 1 AND coalesce(prev_code = 3, FALSE))::INTEGER) OVER w AS run
    FROM keyed
    WINDOW w AS (PARTITION BY dev_major, dev_minor, k_sector, k_len ORDER BY time_ns, eid)
), numbered AS (
    -- R and re-dispatching D belong to the latest issued request; C to its own ordinal
    SELECT eid, run,
           CASE WHEN code = 3 THEN sum((code = 3)::INTEGER) OVER wr
                ELSE greatest(sum((code = 1 AND coalesce(prev_code, 0) <> 2)::INTEGER) OVER wr, 1)
           END AS ordinal
    FROM runs
    WINDOW wr AS (PARTITION BY dev_major, dev_minor, k_sector, k_len, run ORDER BY time_ns, eid)
), device AS (
    SELECT dev_major, dev_minor, count(*) FILTER (code = 1) = 0 AS bio_based
    FROM coded GROUP BY ALL
), events_numbered AS (
    SELECT e.*, coalesce(n.run, 0) AS run, coalesce(n.ordinal, 1) AS ordinal, d.bio_based
    FROM _request_events e LEFT JOIN numbered n USING (eid) JOIN device d USING (dev_major, dev_minor)
)
SELECT
    dev_major,                                                        -- device major
    dev_minor,                                                        -- device minor
    CASE WHEN is_flush THEN 'F' ELSE arg_min(op, eid) END AS op,       -- R/W/D/N, F for a flush
    CASE WHEN is_flush THEN NULL ELSE k_sector END AS sector,          -- start sector (null for a flush)
    k_len AS nsectors,                                                -- length in sectors
    CASE WHEN is_flush THEN 'flush' WHEN bool_or(is_flush_end) THEN 'flush_end'
         WHEN bool_or(bio_based) THEN 'bio'
         WHEN run > 0 AND count(*) FILTER (action = 'D') = 0 THEN 'orphan'
         ELSE 'data' END AS kind,                           -- data, flush, flush_end, bio, orphan
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
FROM events_numbered
GROUP BY dev_major, dev_minor, k_sector, k_len, is_flush, run, ordinal
