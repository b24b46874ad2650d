INCLUDE _io_dist_counts;

-- The `io_dist` table: log2 distributions of IO sizes and seek distances per device and op.
-- metric 'q_size': bio sizes at Q; 'd_size': request sizes at D; 'd2d_seek': distance in
-- sectors from the end of the previous D on the device (any op) to this D's start, 0 meaning
-- sequential; 'q2q_seek' the same between consecutive Qs. Only Qs and Ds with a sector and a
-- length count. Bucket b holds [2^b, 2^(b+1)); 0 goes to bucket -1. The streaming pass counts
-- them as it walks each device's events in time order (analyze/stream/iodist.py) into the
-- analysis connection's _io_dist_counts: this view exists only while `analyze` runs.
CREATE VIEW internal._io_dist_build(LIKE io_dist) AS
SELECT
    dev_major,
    dev_minor,
    op,
    metric,
    bucket,
    CASE WHEN bucket < 0 THEN 0 ELSE (1::BIGINT << bucket) END AS lo,
    (1::BIGINT << (bucket + 1)) AS hi,
    n,
    total
FROM internal._io_dist_counts
ORDER BY dev_major, dev_minor, op, metric, bucket;
