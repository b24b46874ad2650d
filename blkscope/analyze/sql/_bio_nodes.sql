-- The bio chain: Q, G, M, F and X events plus one "remainder start" node per X (the part of the
-- split bio that begins at split_sector). Nodes are chained per (device, start sector) in time
-- order: the event after a bio's start on its key is what happened to that bio next
-- (G = got a new request, M/F = merged into one, X = split, Q = lost: re-queued unseen).
-- The window carries one integer per node (node_id * 8 + kind code, ordered like node_id)
-- instead of strings, and partitions by sector alone with the device first in the order (a
-- neighbour on another device is no neighbour): both make DuckDB's window much cheaper.
SELECT
    dev_major,                                                     -- device major
    dev_minor,                                                     -- device minor
    eid,                                                           -- event id (the X's id for a remainder)
    node_id,                                                       -- eid * 2, + 1 for a remainder start
    kind,                                                          -- Q G M F X, or S for a remainder start
    time_ns,                                                       -- event time
    k_sector,                                                      -- chain key: start sector (-1 if none)
    nsectors,                                                      -- length printed on the event
    ['Q', 'G', 'M', 'F', 'X', 'S'][tag1 & 7] AS next_kind,         -- what came next on this key
    tag1 >> 4 AS next_eid,                                         -- its event id
    ['Q', 'G', 'M', 'F', 'X', 'S'][tag2 & 7] AS next2_kind,        -- and the one after (head of a split)
    tag2 >> 4 AS next2_eid                                         -- its event id
FROM (
    SELECT *, CASE WHEN lead(dev) OVER w = dev THEN lead(tag) OVER w END AS tag1,
           CASE WHEN lead(dev, 2) OVER w = dev THEN lead(tag, 2) OVER w END AS tag2
    FROM (
        SELECT *, dev_major::BIGINT << 32 | dev_minor AS dev, node_id * 8 + CASE kind WHEN 'Q' THEN 1 WHEN 'G' THEN 2 WHEN 'M' THEN 3
                                          WHEN 'F' THEN 4 WHEN 'X' THEN 5 ELSE 6 END AS tag
        FROM (
            SELECT dev_major, dev_minor, (input_id::BIGINT << 40) + line_no AS eid,
                   ((input_id::BIGINT << 40) + line_no) * 2 AS node_id, action AS kind, time_ns,
                   coalesce(sector, -1) AS k_sector, nsectors
            FROM events WHERE action IN ('Q', 'G', 'M', 'F', 'X')
            UNION ALL
            SELECT dev_major, dev_minor, (input_id::BIGINT << 40) + line_no,
                   ((input_id::BIGINT << 40) + line_no) * 2 + 1, 'S', time_ns, split_sector, NULL
            FROM events WHERE action = 'X' AND split_sector IS NOT NULL
        )
    )
    WINDOW w AS (PARTITION BY k_sector ORDER BY dev, time_ns, tag)
)
