INCLUDE capture_summary;

-- Each capture's devices against the fleet: how far its Q2C p99 is from the fleet's median, in
-- robust standard deviations (1.4826 x the median absolute deviation); |robust_z| > 3.5 is an
-- outlier, judged only among at least 5 capture devices (with fewer, the median and MAD of the
-- others say too little: any 1 of 3 can sit 3.5 "deviations" away). SQL that DuckDB and Spark
-- SQL both run.
CREATE VIEW fleet_outliers(
    host VARCHAR,                    -- host
    capture VARCHAR,                 -- capture id
    dev_major INTEGER,               -- device major
    dev_minor INTEGER,               -- device minor
    q2c_p99_ns BIGINT,               -- this device's Q2C p99, ns
    fleet_median_q2c_p99_ns DOUBLE,  -- the fleet's median of it, ns
    fleet_mad_ns DOUBLE,             -- the median absolute deviation, ns
    fleet_devices BIGINT,            -- capture devices the median and MAD are of
    robust_z DOUBLE,                 -- null when mad is 0
    outlier BOOLEAN                  -- beyond 3.5 robust standard deviations of >= 5
) AS
WITH f AS (
    SELECT CAST(median(q2c_p99_ns) AS DOUBLE) AS m, count(q2c_p99_ns) AS n FROM capture_summary
), d AS (
    SELECT CAST(median(abs(s.q2c_p99_ns - f.m)) AS DOUBLE) AS mad
    FROM capture_summary s CROSS JOIN f
)
SELECT
    s.host,
    s.capture,
    s.dev_major,
    s.dev_minor,
    s.q2c_p99_ns,
    f.m AS fleet_median_q2c_p99_ns,
    d.mad AS fleet_mad_ns,
    f.n AS fleet_devices,
    CASE WHEN d.mad > 0
         THEN (s.q2c_p99_ns - f.m) / (1.4826 * d.mad) END AS robust_z,
    CASE WHEN f.n >= 5 AND d.mad > 0 AND abs(s.q2c_p99_ns - f.m) > 3.5 * 1.4826 * d.mad
         THEN true ELSE false END AS outlier
FROM capture_summary s CROSS JOIN f CROSS JOIN d
WHERE s.q2c_p99_ns IS NOT NULL;
