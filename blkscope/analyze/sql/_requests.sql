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
-- Speed: most runs are one D then one C (a "clean pair": the D follows a C or opens the key,
-- the C is followed by a D or ends the key). One window over integers (event id * 4 + action
-- code) finds them and makes their request straight from the two events; only the other
-- events go through the run/ordinal windows and the aggregate. Every event of a key that
-- opens with a clean pair is in a later run than the first (late_keys).
-- The window partitions by sector alone with device and length first in the order (a
-- neighbour with another device or length is no neighbour): much cheaper in DuckDB.
WITH neighbours AS (
    SELECT * EXCLUDE (tag, sub, prev_tag, prev2_tag, next_tag, next2_tag), tag & 3 AS code,
           prev_tag & 3 AS prev_code, prev_tag >> 2 AS prev_eid, prev2_tag & 3 AS prev2_code,
           next_tag & 3 AS next_code, next2_tag & 3 AS next2_code
    FROM (
        SELECT *, CASE WHEN lag(sub) OVER w = sub THEN lag(tag) OVER w END AS prev_tag,
               CASE WHEN lag(sub, 2) OVER w = sub THEN lag(tag, 2) OVER w END AS prev2_tag,
               CASE WHEN lead(sub) OVER w = sub THEN lead(tag) OVER w END AS next_tag,
               CASE WHEN lead(sub, 2) OVER w = sub THEN lead(tag, 2) OVER w END AS next2_tag
        FROM (SELECT *, eid * 4 + CASE action WHEN 'D' THEN 1 WHEN 'R' THEN 2 ELSE 3 END AS tag,
                     dev_major::HUGEINT << 64 | dev_minor::HUGEINT << 32 | coalesce(k_len + 1, 0) AS sub
              FROM _request_events)                                   -- D=1 R=2 C=3
        WINDOW w AS (PARTITION BY k_sector ORDER BY sub, time_ns, tag)
    )
), paired AS (
    SELECT *,
        CASE WHEN code = 1 AND coalesce(prev_code, 3) = 3 AND next_code = 3
                  AND coalesce(next2_code, 1) = 1 THEN eid
             WHEN code = 3 AND prev_code = 1 AND coalesce(prev2_code, 3) = 3
                  AND coalesce(next_code, 1) = 1 THEN prev_eid
        END AS pair_d_eid                                             -- the D of its clean pair
    FROM neighbours
), late_keys AS (
    SELECT dev_major, dev_minor, k_sector, k_len FROM paired
    WHERE prev_code IS NULL AND pair_d_eid IS NOT NULL
), tangled AS (
    SELECT eid, dev_major, dev_minor, k_sector, k_len, time_ns, code FROM paired
    WHERE pair_d_eid IS NULL
), keyed AS (
    SELECT *, lag(code) OVER w AS prev_code
    FROM tangled
    WINDOW w AS (PARTITION BY dev_major, dev_minor, k_sector, k_len ORDER BY time_ns, eid)
), runs AS (
    SELECT *, sum((code = 1 AND coalesce(prev_code = 3, FALSE))::INTEGER) OVER w AS run
    FROM keyed
    WINDOW w AS (PARTITION BY dev_major, dev_minor, k_sector, k_len ORDER BY time_ns, eid)
), numbered AS (
    -- R and re-dispatching D belong to the latest issued request; C to its own ordinal
    SELECT eid, run + (l.k_len IS NOT NULL)::INTEGER AS run,   -- see late_keys
           CASE WHEN code = 3 THEN sum((code = 3)::INTEGER) OVER wr
                ELSE greatest(sum((code = 1 AND coalesce(prev_code, 0) <> 2)::INTEGER) OVER wr, 1)
           END AS ordinal
    FROM runs LEFT JOIN late_keys l USING (dev_major, dev_minor, k_sector, k_len)
    WINDOW wr AS (PARTITION BY dev_major, dev_minor, k_sector, k_len, run ORDER BY time_ns, eid)
), device AS (
    SELECT dev_major, dev_minor, count(*) FILTER (code = 1) = 0 AS bio_based
    FROM neighbours GROUP BY ALL
), ev AS (
    SELECT * EXCLUDE (code, prev_code, prev_eid, prev2_code, next_code, next2_code) FROM paired
), clean AS (
    -- a clean pair's request straight from its two events (the aggregate below gives the same)
    SELECT d.dev_major, d.dev_minor,
           CASE WHEN d.is_flush THEN 'F' WHEN d.eid < c.eid THEN d.op ELSE c.op END AS op,
           CASE WHEN d.is_flush THEN NULL ELSE d.k_sector END AS sector, d.k_len AS nsectors,
           CASE WHEN d.is_flush THEN 'flush' WHEN d.is_flush_end OR c.is_flush_end THEN 'flush_end'
                ELSE 'data' END AS kind,
           CASE WHEN d.eid < c.eid THEN d.rwbs ELSE c.rwbs END AS flags,
           d.time_ns AS first_d_time_ns, d.time_ns AS d_time_ns, c.time_ns AS c_time_ns,
           c.time_ns - d.time_ns AS d2c_ns, 0 AS requeues, 1 AS dispatches, c.error,
           FALSE AS partial, d.comm AS d_comm, d.eid AS d_eid, c.eid AS c_eid
    FROM (SELECT * FROM ev WHERE action = 'D' AND pair_d_eid IS NOT NULL) d
    JOIN (SELECT * FROM ev WHERE action = 'C' AND pair_d_eid IS NOT NULL) c ON c.pair_d_eid = d.eid
), tangled_requests AS (
    SELECT
        dev_major, dev_minor,
        CASE WHEN is_flush THEN 'F' ELSE arg_min(op, eid) END AS op,
        CASE WHEN is_flush THEN NULL ELSE k_sector END AS sector,
        k_len AS nsectors,
        CASE WHEN is_flush THEN 'flush' WHEN bool_or(is_flush_end) THEN 'flush_end'
             WHEN bool_or(bio_based) THEN 'bio'
             WHEN run > 0 AND count(*) FILTER (action = 'D') = 0 THEN 'orphan'
             ELSE 'data' END AS kind,
        arg_min(rwbs, eid) AS flags,
        min(time_ns) FILTER (action = 'D') AS first_d_time_ns,
        max(time_ns) FILTER (action = 'D') AS d_time_ns,
        max(time_ns) FILTER (action = 'C') AS c_time_ns,
        max(time_ns) FILTER (action = 'C') - max(time_ns) FILTER (action = 'D') AS d2c_ns,
        count(*) FILTER (action = 'R')::INTEGER AS requeues,
        count(*) FILTER (action = 'D')::INTEGER AS dispatches,
        max(error) FILTER (action = 'C') AS error,
        (count(*) FILTER (action = 'C') = 0
          OR (count(*) FILTER (action = 'D') = 0
              AND NOT bool_or(is_flush_end OR bio_based))) AS partial,
        arg_min(comm, eid) FILTER (action = 'D') AS d_comm,
        min(eid) FILTER (action = 'D') AS d_eid,
        max(eid) FILTER (action = 'C') AS c_eid
    FROM ev JOIN numbered USING (eid) JOIN device USING (dev_major, dev_minor)
    GROUP BY dev_major, dev_minor, k_sector, k_len, is_flush, run, ordinal
)
SELECT
    dev_major,                                                        -- device major
    dev_minor,                                                        -- device minor
    op,                                                               -- R/W/D/N, F for a flush
    sector,                                                           -- start sector (null for a flush)
    nsectors,                                                         -- length in sectors
    kind,                                                             -- data, flush, flush_end, bio, orphan
    flags,                                                            -- RWBS of the first event (the D)
    first_d_time_ns,                                                  -- first dispatch
    d_time_ns,                                                        -- last dispatch: D2C starts here
    c_time_ns,                                                        -- completion
    d2c_ns,                                                           -- driver+device time, last D to C
    requeues,                                                         -- requeues (R) before completion
    dispatches,                                                       -- D events (1 + requeues normally)
    error,                                                            -- completion error code
    partial,                                                          -- cut by trace start/end
    d_comm,                                                           -- comm on the first D
    d_eid,                                                            -- event id of the first D (bio link)
    c_eid                                                             -- event id of the C
FROM (SELECT * FROM tangled_requests UNION ALL BY NAME SELECT * FROM clean)
