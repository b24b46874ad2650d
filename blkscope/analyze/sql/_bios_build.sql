-- The `bios` table as `blkscope analyze` stores it: one row per Q, with the requests its pieces
-- rode in (stored `requests`). A split bio completes when its LAST piece completes; a bio with a
-- preflush completes at the zero-length C that ends its flush sequence (kind 'flush_end').
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
           bool_or(landing_kind IN ('M', 'F')) AS merged,
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
), joined AS (
    SELECT q.*, b.*, fe.c_time_ns AS flush_end_ns
    FROM q JOIN per_bio b USING (q_eid)
    ASOF LEFT JOIN flush_ends fe
      ON q.flush AND fe.dev_major = q.dev_major AND fe.dev_minor = q.dev_minor
     AND fe.sector = coalesce(q.sector, 0) AND fe.c_time_ns >= b.c_time_ns
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
    q_eid,                                                       -- Q event id
    d_eid                                                        -- first D event id of its requests
FROM joined
ORDER BY q_time_ns, q_eid
