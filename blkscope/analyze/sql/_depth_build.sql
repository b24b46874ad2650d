-- The `depth` table: the in-flight step functions of _depth_steps per device, as time spent at
-- each depth (see _depth_steps for what counts as in flight at each level).
-- needs: _depth_steps
-- materialize: table depth
SELECT
    dev_major,                                                        -- device major
    dev_minor,                                                        -- device minor
    level,                                                            -- driver (D..C) or queue (Q..C)
    depth::INTEGER AS depth,                                          -- number in flight
    sum(held_ns)::BIGINT AS held_ns,                                  -- time spent at this depth, ns
    sum(held_ns) / sum(sum(held_ns)) OVER (PARTITION BY dev_major, dev_minor, level) AS share
                                                                      -- share of the traced time
FROM _depth_steps
GROUP BY dev_major, dev_minor, level, depth
ORDER BY dev_major, dev_minor, level, depth
