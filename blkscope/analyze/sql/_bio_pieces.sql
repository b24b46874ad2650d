-- Where every piece of every queued bio landed. A start (Q, or the remainder of a split) lands
-- on the next node of its key when that is G/M/F; when it is X, the head piece lands on the node
-- after the X and the remainder becomes a new start. Recursion carries the Q's id down the splits.
WITH RECURSIVE starts AS (
    SELECT * FROM _bio_nodes WHERE kind IN ('Q', 'S')
), rooted(node_id, root_eid, depth) AS (
    SELECT node_id, eid, 0 FROM starts WHERE kind = 'Q'
    UNION ALL
    SELECT s.next_eid * 2 + 1, r.root_eid, r.depth + 1
    FROM rooted r JOIN starts s ON s.node_id = r.node_id
    WHERE s.next_kind = 'X'
)
SELECT
    s.dev_major,                                                     -- device major
    s.dev_minor,                                                     -- device minor
    r.root_eid AS q_eid,                                             -- the Q this piece comes from
    s.node_id AS start_node,                                         -- the start node that landed
    CASE WHEN s.next_kind IN ('G', 'M', 'F') THEN s.next_eid
         WHEN s.next_kind = 'X' AND s.next2_kind IN ('G', 'M', 'F') THEN s.next2_eid
    END AS landing_eid,                                              -- G/M/F event of this piece; null = lost
    CASE WHEN s.next_kind = 'X' THEN s.next2_kind ELSE s.next_kind END AS landing_kind, -- G M F (else lost)
    s.next_kind = 'X' AS was_split                                   -- the piece was cut off by an X
FROM rooted r JOIN starts s ON s.node_id = r.node_id
