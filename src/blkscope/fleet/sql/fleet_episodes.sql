INCLUDE episodes, captures;

-- Latency episodes of every capture on the wall clock, so the hosts' episodes line up in time.
-- SQL that DuckDB and Spark SQL both run.
CREATE VIEW fleet_episodes(
    host VARCHAR,            -- host
    capture VARCHAR,         -- capture id
    dev_major INTEGER,       -- device major
    dev_minor INTEGER,       -- device minor
    episode_id INTEGER,      -- episode number within the capture's device
    start_ns BIGINT,         -- start, trace ns
    end_ns BIGINT,           -- end, trace ns
    start_wall_ns BIGINT,    -- start, ns since the epoch (null: no clock)
    end_wall_ns BIGINT,      -- end, ns since the epoch
    peak_latency_ns BIGINT,  -- its worst latency, ns
    worst_metric VARCHAR,    -- the metric that peaked (q2c, user:<series>)
    cause VARCHAR            -- what blkscope attributes it to
) AS
SELECT
    e.host,
    e.capture,
    e.dev_major,
    e.dev_minor,
    e.episode_id,
    e.start_ns,
    e.end_ns,
    c.start_wall_ns + e.start_ns AS start_wall_ns,
    c.start_wall_ns + e.end_ns AS end_wall_ns,
    e.peak_latency_ns,
    e.worst_metric,
    e.cause
FROM episodes e
JOIN captures c ON e.host = c.host AND e.capture = c.capture;
