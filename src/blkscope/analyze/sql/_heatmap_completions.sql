INCLUDE _heatmap_bins, bios, op_class;

-- The bios latency_heatmap counts: each completing bio with its time bin (time_bins, at C), its
-- D2C and Q2C latencies, who issued it and whether the observer did. The compiled cells
-- (analyze/compiled.py: `internal._heatmap_cells`) read it once. The bins are time_bins' over
-- each device's first and last event (`internal._heatmap_bins`, analyze/compiled.py): time_bins
-- itself would scan every event again for them.
CREATE VIEW internal._heatmap_completions(
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    bin BIGINT,         -- time bin of its C (time_bins)
    c_time_ns BIGINT,   -- its C, trace ns
    d2c_ns BIGINT,      -- D2C latency, ns (null: none)
    q2c_ns BIGINT,      -- Q2C latency, ns (null: none)
    comm VARCHAR,       -- submitting comm, '?' if unknown
    observer BOOLEAN    -- issued by the capture's own tools (is_observer)
) AS
SELECT
    b.dev_major,
    b.dev_minor,
    (b.c_time_ns - t.start_ns) // t.width_ns AS bin,
    b.c_time_ns,
    b.d2c_ns,
    b.q2c_ns,
    coalesce(b.comm, '?') AS comm,
    is_observer(b.comm) AS observer
FROM bios b JOIN internal._heatmap_bins t USING (dev_major, dev_minor)
WHERE b.c_time_ns IS NOT NULL;
