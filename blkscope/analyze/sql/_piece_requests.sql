-- Each landed bio piece linked to the request it rode in. A G's request is the next D on the
-- same start sector (via its I when it was inserted into a scheduler); M/F pieces, and G's whose
-- request changed its start by a front merge, take the first later D on the device whose range
-- covers them (btt's rule, made time-ordered). Data-less flush G's (no sector) pair with the
-- flush D's first-in first-out, since two processes' flushes can be allocated back to back.
WITH ev AS (
    SELECT dev_major, dev_minor, (input_id::BIGINT << 40) + line_no AS eid, time_ns, action,
           sector, nsectors, pid, comm, coalesce(sector, -1) AS k_sector
    FROM events WHERE action IN ('G', 'I', 'D', 'M', 'F')
), gid AS (
    -- the window carries eid * 4 + action code (ordered like eid): sorting strings is slow
    SELECT eid, ['G', 'I', 'D'][tag1 & 3] AS a1, tag1 >> 2 AS e1, t1,
           ['G', 'I', 'D'][tag2 & 3] AS a2, tag2 >> 2 AS e2
    -- partitioned by sector alone, device first in the order (cheaper; see _bio_nodes.sql)
    FROM (SELECT eid, tag, CASE WHEN lead(dev) OVER w = dev THEN lead(tag) OVER w END AS tag1,
                 CASE WHEN lead(dev) OVER w = dev THEN lead(time_ns) OVER w END AS t1,
                 CASE WHEN lead(dev, 2) OVER w = dev THEN lead(tag, 2) OVER w END AS tag2
          FROM (SELECT *, dev_major::BIGINT << 32 | dev_minor AS dev,
                       eid * 4 + CASE action WHEN 'G' THEN 1 WHEN 'I' THEN 2 ELSE 3 END AS tag
                FROM ev WHERE action IN ('G', 'I', 'D'))
          WINDOW w AS (PARTITION BY k_sector ORDER BY dev, time_ns, tag))
    WHERE tag & 3 = 1  -- only a G's successors are looked up
), flush_fifo AS (
    SELECT eid, action, run,
           row_number() OVER (PARTITION BY dev_major, dev_minor, run, action ORDER BY time_ns, eid)
             AS n, dev_major, dev_minor
    FROM (SELECT *, sum(coalesce(action = 'G' AND prev = 'D', FALSE)::INTEGER) OVER w AS run
          FROM (SELECT *, lag(action) OVER w AS prev FROM ev
                WHERE k_sector = -1 AND action IN ('G', 'D')
                WINDOW w AS (PARTITION BY dev_major, dev_minor ORDER BY time_ns, eid))
          WINDOW w AS (PARTITION BY dev_major, dev_minor ORDER BY time_ns, eid))
), flush_gd AS (
    SELECT g.eid AS g_eid, d.eid AS d_eid
    FROM flush_fifo g JOIN flush_fifo d
      ON g.action = 'G' AND d.action = 'D' AND d.dev_major = g.dev_major
     AND d.dev_minor = g.dev_minor AND d.run = g.run AND d.n = g.n
), chained AS (
    SELECT p.*, l.time_ns AS landing_time_ns, l.sector, l.nsectors, l.pid, l.comm,
           CASE WHEN p.landing_kind = 'G' AND g.a1 = 'I' THEN g.t1 END AS i_time_ns,
           CASE WHEN p.landing_kind <> 'G' THEN NULL WHEN l.sector IS NULL THEN f.d_eid
                WHEN g.a1 = 'D' THEN g.e1 WHEN g.a1 = 'I' AND g.a2 = 'D' THEN g.e2 END AS chain_d_eid
    FROM _bio_pieces p
    JOIN ev l ON l.eid = p.landing_eid
    LEFT JOIN gid g ON g.eid = p.landing_eid
    LEFT JOIN flush_gd f ON f.g_eid = p.landing_eid
), d_blocks AS (
    -- each D once per 2 MiB block of the disk it touches: covering Ds are then found by an
    -- equality join on the piece's block instead of a range join over every D of the device
    SELECT dev_major, dev_minor, eid, time_ns, sector, nsectors,
           unnest(range(sector >> 12, ((sector + nsectors) >> 12) + 1)) AS block
    FROM ev WHERE action = 'D' AND sector IS NOT NULL
), covered AS (
    SELECT c.landing_eid, arg_min(d.eid, d.time_ns) AS d_eid
    FROM chained c JOIN d_blocks d
      ON d.dev_major = c.dev_major AND d.dev_minor = c.dev_minor AND d.block = c.sector >> 12
     AND d.time_ns >= c.landing_time_ns AND d.sector <= c.sector
     AND d.sector + d.nsectors >= c.sector + c.nsectors
    WHERE c.chain_d_eid IS NULL AND c.sector IS NOT NULL
    GROUP BY c.landing_eid
)
SELECT
    c.dev_major,                                                  -- device major
    c.dev_minor,                                                  -- device minor
    c.q_eid,                                                      -- the Q this piece comes from
    c.landing_eid,                                                -- its G/M/F event
    c.landing_kind,                                               -- G (new request), M/F (merged)
    c.was_split,                                                  -- cut off the bio by an X
    c.landing_time_ns,                                            -- time of the G/M/F
    c.sector,                                                     -- piece start sector
    c.nsectors,                                                   -- piece length
    c.pid,                                                        -- pid on the G/M/F
    c.comm,                                                       -- comm on the G/M/F
    c.i_time_ns,                                                  -- insert (I) time, G pieces only
    coalesce(c.chain_d_eid, v.d_eid) AS d_eid                     -- first D of the request it rode in
FROM chained c LEFT JOIN covered v ON v.landing_eid = c.landing_eid
