INCLUDE periods, captures;

-- Which hosts show which periods, beside the writeback knobs their capture ran with: a period
-- matches the flusher when it is within 10% of vm.dirty_writeback_centisecs (unknown when the
-- capture did not record the knob).
-- SQL that DuckDB and Spark SQL both run.
CREATE VIEW fleet_periods(
    host VARCHAR,                         -- host
    capture VARCHAR,                      -- capture id
    dev_major INTEGER,                    -- device major
    dev_minor INTEGER,                    -- device minor
    series VARCHAR,                       -- what beats: kworker_writes, jbd2_writes, ...
    period_ns BIGINT,                     -- the period, ns
    knobs VARCHAR,                        -- knobs blkscope matched it to (',' joined)
    method VARCHAR,                       -- periodogram or writeback_events
    vm_dirty_writeback_centisecs BIGINT,  -- the knob's value in this capture
    vm_dirty_expire_centisecs BIGINT,     -- the expiry knob's value
    matches_writeback_knob BOOLEAN        -- within 10% of the flusher's interval (null: knob
                                          -- unknown)
) AS
SELECT
    p.host,
    p.capture,
    p.dev_major,
    p.dev_minor,
    p.series,
    p.period_ns,
    p.knobs,
    p.method,
    c.vm_dirty_writeback_centisecs,
    c.vm_dirty_expire_centisecs,
    CASE WHEN c.vm_dirty_writeback_centisecs IS NULL THEN NULL
         WHEN c.vm_dirty_writeback_centisecs > 0
              AND abs(p.period_ns - c.vm_dirty_writeback_centisecs * 10000000) * 10
                  <= c.vm_dirty_writeback_centisecs * 10000000
         THEN true ELSE false END AS matches_writeback_knob
FROM periods p
JOIN captures c ON p.host = c.host AND p.capture = c.capture;
