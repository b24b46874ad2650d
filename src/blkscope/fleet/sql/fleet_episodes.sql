-- Latency episodes of every capture on the wall clock, so the hosts' episodes line up in time.
-- SQL that DuckDB and Spark SQL both run.
-- needs: episodes, captures
SELECT
    e.host,                                  -- host
    e.capture,                               -- capture id
    e.dev_major,                             -- device major
    e.dev_minor,                             -- device minor
    e.episode_id,                            -- episode number within the capture's device
    e.start_ns,                              -- start, trace ns
    e.end_ns,                                -- end, trace ns
    c.start_wall_ns + e.start_ns AS start_wall_ns,  -- start, ns since the epoch (null: no clock)
    c.start_wall_ns + e.end_ns AS end_wall_ns,      -- end, ns since the epoch
    e.peak_latency_ns,                       -- its worst latency, ns
    e.worst_metric,                          -- the metric that peaked (q2c, user:<series>)
    e.cause                                  -- what blkscope attributes it to
FROM episodes e
JOIN captures c ON e.host = c.host AND e.capture = c.capture
