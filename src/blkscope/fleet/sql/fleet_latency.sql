INCLUDE capture_summary, captures;

-- Each device of each capture: its whole-capture D2C and Q2C percentiles beside the capture's
-- setup, one row per (host, capture, device). SQL that DuckDB and Spark SQL both run.
CREATE VIEW fleet_latency(
    host VARCHAR,                         -- host (the host= folder)
    capture VARCHAR,                      -- capture id (the capture= folder)
    dev_major INTEGER,                    -- device major
    dev_minor INTEGER,                    -- device minor
    device VARCHAR,                       -- device name when known
    ios BIGINT,                           -- bios queued (Q)
    d2c_p50_ns BIGINT,                    -- median D2C, ns
    d2c_p99_ns BIGINT,                    -- p99 D2C, ns
    q2c_p50_ns BIGINT,                    -- median Q2C, ns
    q2c_p99_ns BIGINT,                    -- p99 Q2C, ns
    episodes BIGINT,                      -- latency episodes
    periods BIGINT,                       -- significant periods
    kernel VARCHAR,                       -- kernel release (capture.json)
    scheduler VARCHAR,                    -- 'device:scheduler' list (capture.json)
    vm_dirty_writeback_centisecs BIGINT,  -- the flusher's wakeup interval, centiseconds
    vm_dirty_expire_centisecs BIGINT,     -- age at which dirty data must be written, cs
    workload VARCHAR,                     -- the workload label
    start_wall_ns BIGINT,                 -- the trace's start, ns since the epoch (UTC)
    duration_ns BIGINT                    -- the trace's span, ns
) AS
SELECT
    s.host,
    s.capture,
    s.dev_major,
    s.dev_minor,
    s.name AS device,
    s.ios,
    s.d2c_p50_ns,
    s.d2c_p99_ns,
    s.q2c_p50_ns,
    s.q2c_p99_ns,
    s.episodes,
    s.periods,
    c.kernel,
    c.scheduler,
    c.vm_dirty_writeback_centisecs,
    c.vm_dirty_expire_centisecs,
    c.workload,
    c.start_wall_ns,
    c.duration_ns
FROM capture_summary s
JOIN captures c ON s.host = c.host AND s.capture = c.capture;
