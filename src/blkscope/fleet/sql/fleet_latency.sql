-- Each device of each capture: its whole-capture D2C and Q2C percentiles beside the capture's
-- setup, one row per (host, capture, device). SQL that DuckDB and Spark SQL both run.
-- needs: capture_summary, captures
SELECT
    s.host,                                  -- host (the host= folder)
    s.capture,                               -- capture id (the capture= folder)
    s.dev_major,                             -- device major
    s.dev_minor,                             -- device minor
    s.name AS device,                        -- device name when known
    s.ios,                                   -- bios queued (Q)
    s.d2c_p50_ns,                            -- median D2C, ns
    s.d2c_p99_ns,                            -- p99 D2C, ns
    s.q2c_p50_ns,                            -- median Q2C, ns
    s.q2c_p99_ns,                            -- p99 Q2C, ns
    s.episodes,                              -- latency episodes
    s.periods,                               -- significant periods
    c.kernel,                                -- kernel release (capture.json)
    c.scheduler,                             -- 'device:scheduler' list (capture.json)
    c.vm_dirty_writeback_centisecs,          -- the flusher's wakeup interval, centiseconds
    c.vm_dirty_expire_centisecs,             -- age at which dirty data must be written, cs
    c.workload,                              -- the workload label
    c.start_wall_ns,                         -- the trace's start, ns since the epoch (UTC)
    c.duration_ns                            -- the trace's span, ns
FROM capture_summary s
JOIN captures c ON s.host = c.host AND s.capture = c.capture
