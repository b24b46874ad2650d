-- Each capture's devices against the fleet: how far its Q2C p99 is from the fleet's median, in
-- robust standard deviations (1.4826 x the median absolute deviation); |robust_z| > 3.5 is an
-- outlier, judged only among at least 5 capture devices (with fewer, the median and MAD of the
-- others say too little: any 1 of 3 can sit 3.5 "deviations" away). SQL that DuckDB and Spark
-- SQL both run.
-- needs: capture_summary
WITH f AS (
    SELECT CAST(median(q2c_p99_ns) AS DOUBLE) AS m, count(q2c_p99_ns) AS n FROM capture_summary
), d AS (
    SELECT CAST(median(abs(s.q2c_p99_ns - f.m)) AS DOUBLE) AS mad
    FROM capture_summary s CROSS JOIN f
)
SELECT
    s.host,                                  -- host
    s.capture,                               -- capture id
    s.dev_major,                             -- device major
    s.dev_minor,                             -- device minor
    s.q2c_p99_ns,                            -- this device's Q2C p99, ns
    f.m AS fleet_median_q2c_p99_ns,          -- the fleet's median of it, ns
    d.mad AS fleet_mad_ns,                   -- the median absolute deviation, ns
    f.n AS fleet_devices,                    -- capture devices the median and MAD are of
    CASE WHEN d.mad > 0
         THEN (s.q2c_p99_ns - f.m) / (1.4826 * d.mad) END AS robust_z,  -- null when mad is 0
    CASE WHEN f.n >= 5 AND d.mad > 0 AND abs(s.q2c_p99_ns - f.m) > 3.5 * 1.4826 * d.mad
         THEN true ELSE false END AS outlier -- beyond 3.5 robust standard deviations of >= 5
FROM capture_summary s CROSS JOIN f CROSS JOIN d
WHERE s.q2c_p99_ns IS NOT NULL
