INCLUDE capture_labels, capture_summary;

-- Every label of every capture beside its devices' p99s: the input of before/after comparisons
-- by a label (kernel=6.8 vs kernel=6.9). SQL that DuckDB and Spark SQL both run.
CREATE VIEW fleet_label_latency(
    key VARCHAR,        -- label name
    value VARCHAR,      -- label value
    host VARCHAR,       -- host
    capture VARCHAR,    -- capture id
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    d2c_p99_ns BIGINT,  -- p99 D2C, ns
    q2c_p99_ns BIGINT   -- p99 Q2C, ns
) AS
SELECT
    l.key,
    l.value,
    s.host,
    s.capture,
    s.dev_major,
    s.dev_minor,
    s.d2c_p99_ns,
    s.q2c_p99_ns
FROM capture_labels l
JOIN capture_summary s ON l.host = s.host AND l.capture = s.capture;
