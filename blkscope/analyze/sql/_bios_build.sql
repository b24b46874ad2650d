-- The `bios` table as `blkscope analyze` stores it: one row per Q, with the requests its pieces
-- rode in (stored `requests`). A split bio completes when its LAST piece completes; a bio with a
-- preflush completes at the zero-length C that ends its flush sequence (kind 'flush_end'). On a
-- bio-based device (Q and C only) a Q completes at the next C with its sector and length. A Q
-- right after an A on the same sector was remapped from the A's source device and sector.
WITH q AS (
    SELECT dev_major, dev_minor, (input_id::BIGINT << 40) + line_no AS q_eid, time_ns AS q_time_ns,
           op, flush, fua, sync, meta, rwbs, sector, nsectors, pid, comm
    FROM events WHERE action = 'Q'
), pieces AS (
    SELECT p.*, r.d_time_ns, r.c_time_ns, r.partial AS r_partial, r.requeues,
           r.d_eid IS NOT NULL AS has_request
    FROM _piece_requests p LEFT JOIN requests r ON r.d_eid = p.d_eid
    UNION ALL
    SELECT dev_major, dev_minor, q_eid, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, NULL, NULL, NULL, NULL, FALSE
    FROM _bio_pieces WHERE landing_eid IS NULL
), per_bio AS (
    SELECT q_eid,
           count(*)::INTEGER AS pieces,
           coalesce(bool_or(landing_kind IN ('M', 'F')), FALSE) AS merged,
           bool_or(NOT has_request OR r_partial OR c_time_ns IS NULL) AS cut,
           min(landing_time_ns) FILTER (landing_kind = 'G') AS g_time_ns,
           min(landing_time_ns) FILTER (landing_kind IN ('M', 'F')) AS m_time_ns,
           min(i_time_ns) AS i_time_ns,
           min(d_time_ns) AS d_time_ns,
           max(c_time_ns) AS c_time_ns,
           sum(requeues)::INTEGER AS requeues,
           min(d_eid) AS d_eid
    FROM pieces GROUP BY q_eid
), flush_ends AS (
    SELECT dev_major, dev_minor, sector, c_time_ns FROM requests WHERE kind = 'flush_end'
), bio_done AS (
    SELECT dev_major, dev_minor, sector, nsectors, c_time_ns FROM requests WHERE kind = 'bio'
), remaps AS (
    SELECT eid AS q_eid, remap_dev_major, remap_dev_minor, remap_sector FROM (
        SELECT (input_id::BIGINT << 40) + line_no AS eid, action,
               lag(action) OVER w AS prev, lag(remap_dev_major) OVER w AS remap_dev_major,
               lag(remap_dev_minor) OVER w AS remap_dev_minor,
               lag(remap_sector) OVER w AS remap_sector
        -- only sectors some A landed on can hold a remapped Q: skip sorting all the others
        FROM events SEMI JOIN (SELECT dev_major, dev_minor, sector FROM events WHERE action = 'A') a
          USING (dev_major, dev_minor, sector)
        WHERE action IN ('A', 'Q') AND sector IS NOT NULL
        WINDOW w AS (PARTITION BY dev_major, dev_minor, sector ORDER BY time_ns, input_id, line_no))
    WHERE action = 'Q' AND prev = 'A'
), base AS (
    SELECT * FROM q JOIN per_bio USING (q_eid)
), flush_done AS (
    -- the ASOF joins run over the few bios that can match, then join back by q_eid: over every
    -- bio they sort all of them (and with a condition on the bio alone, run as a nested loop)
    SELECT b.q_eid, fe.c_time_ns AS flush_end_ns
    FROM (SELECT * FROM base WHERE flush) b
    ASOF JOIN flush_ends fe
      ON fe.dev_major = b.dev_major AND fe.dev_minor = b.dev_minor
     AND fe.sector = coalesce(b.sector, 0) AND fe.c_time_ns >= b.c_time_ns
), bio_based_done AS (
    SELECT b.q_eid, bd.c_time_ns AS bio_c_ns
    FROM (SELECT * FROM base WHERE pieces = 1 AND d_eid IS NULL) b
    ASOF JOIN bio_done bd
      ON bd.dev_major = b.dev_major AND bd.dev_minor = b.dev_minor AND bd.sector = b.sector
     AND bd.nsectors = b.nsectors AND bd.c_time_ns >= b.q_time_ns
), joined AS (
    SELECT *
    FROM base LEFT JOIN flush_done USING (q_eid) LEFT JOIN bio_based_done USING (q_eid)
    LEFT JOIN remaps USING (q_eid)
), settled AS (
    SELECT * REPLACE (coalesce(bio_c_ns, c_time_ns) AS c_time_ns,
                      cut AND bio_c_ns IS NULL AS cut)
    FROM joined
)
SELECT
    dev_major,                                                   -- device major
    dev_minor,                                                   -- device minor
    op,                                                          -- R/W/D/N from the Q's RWBS
    rwbs AS flags,                                               -- the Q's RWBS
    sector,                                                      -- start sector (null: data-less flush)
    nsectors,                                                    -- length in sectors
    pid,                                                         -- submitting pid
    comm,                                                        -- submitting comm
    q_time_ns,                                                   -- Q time
    g_time_ns,                                                   -- first G of its pieces (new request)
    m_time_ns,                                                   -- first M/F of its pieces (merged)
    i_time_ns,                                                   -- first I of its pieces
    d_time_ns,                                                   -- earliest last-D of its requests
    CASE WHEN cut THEN NULL ELSE greatest(c_time_ns, flush_end_ns) END AS c_time_ns, -- last completion
    CASE WHEN cut THEN NULL
         ELSE greatest(c_time_ns, flush_end_ns) - q_time_ns END AS q2c_ns,          -- Q to last completion
    CASE WHEN cut THEN NULL ELSE c_time_ns - d_time_ns END AS d2c_ns,  -- its requests' D to last C
    merged,                                                      -- some piece merged into a request (M/F)
    pieces > 1 AS split,                                         -- cut by X into several pieces
    pieces,                                                      -- number of pieces (1 + X count)
    requeues,                                                    -- requeues of its requests
    CASE WHEN cut THEN 'partial' WHEN merged THEN 'merged'
         ELSE 'completed' END AS status,                         -- completed, merged, or partial
    cut AS partial,                                              -- some piece lost or its request cut
    remap_dev_major,                                             -- remapped from: device major (A)
    remap_dev_minor,                                             -- remapped from: device minor
    remap_sector,                                                -- remapped from: sector there
    q_eid,                                                       -- Q event id
    d_eid                                                        -- first D event id of its requests
FROM settled
ORDER BY q_time_ns, q_eid
