INCLUDE bios, op_class;

-- The bios latency_heatmap counts: each completing bio with its D2C and Q2C latencies, who
-- issued it and whether the observer did. The compiled cells (analyze/compiled.py:
-- `internal._heatmap_cells`) read it once and put each bio in its time bin (time_bins, at C):
-- time_bins' bins over each device's first and last event (compiled.heatmap_bins), which the
-- cells take per device (joining every bio on its device's bins cost more than the counting).
-- The findings' spike windows are read beside the cells (`internal._spike_window_rows`),
-- hence `partial`.
CREATE VIEW internal._heatmap_completions(
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    c_time_ns BIGINT,   -- its C, trace ns
    d2c_ns BIGINT,      -- D2C latency, ns (null: none)
    q2c_ns BIGINT,      -- Q2C latency, ns (null: none)
    comm VARCHAR,       -- submitting comm, '?' if unknown
    observer BOOLEAN,   -- issued by the capture's own tools (is_observer)
    partial BOOLEAN     -- bios.partial: the spike windows count the others only
) AS
SELECT
    dev_major,
    dev_minor,
    c_time_ns,
    d2c_ns,
    q2c_ns,
    coalesce(comm, '?') AS comm,
    is_observer(comm) AS observer,
    partial
FROM bios
WHERE c_time_ns IS NOT NULL;
