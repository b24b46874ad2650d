-- Every label of every capture beside its devices' p99s: the input of before/after comparisons
-- by a label (kernel=6.8 vs kernel=6.9). SQL that DuckDB and Spark SQL both run.
-- needs: capture_labels, capture_summary
SELECT
    l.key,                                   -- label name
    l.value,                                 -- label value
    s.host,                                  -- host
    s.capture,                               -- capture id
    s.dev_major,                             -- device major
    s.dev_minor,                             -- device minor
    s.d2c_p99_ns,                            -- p99 D2C, ns
    s.q2c_p99_ns                             -- p99 Q2C, ns
FROM capture_labels l
JOIN capture_summary s ON l.host = s.host AND l.capture = s.capture
