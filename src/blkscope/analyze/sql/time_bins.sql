INCLUDE events;

-- The time bins every per-bin table and chart of a device uses: equal widths of 1, 2 or 5 x 10^k
-- ns (at least 1 ms), the smallest that covers the device's traced span in at most 1500 bins,
-- starting at a multiple of the width. Bin b covers [start_ns + b * width_ns, + width_ns).
CREATE VIEW time_bins(
    dev_major INTEGER,  -- device major
    dev_minor INTEGER,  -- device minor
    start_ns BIGINT,    -- first bin's start (trace ns)
    width_ns BIGINT,    -- bin width, ns
    bins INTEGER        -- number of bins
) AS
WITH span AS (
    SELECT dev_major, dev_minor, min(time_ns) AS t0, max(time_ns) AS t1 FROM events GROUP BY ALL
), widths AS (
    SELECT (s * 10::BIGINT ** k)::BIGINT AS w FROM range(6, 16) r(k), (VALUES (1), (2), (5)) v(s)
), sized AS (
    SELECT dev_major, dev_minor, t0, t1,
           -- 1499 widths cover the span, so the aligned start adds at most one bin
           (SELECT min(w) FROM widths WHERE w * 1499 >= greatest(t1 - t0, 1)) AS width_ns
    FROM span
)
SELECT
    dev_major,
    dev_minor,
    t0 - t0 % width_ns AS start_ns,
    width_ns,
    ((t1 - (t0 - t0 % width_ns)) // width_ns + 1)::INTEGER AS bins
FROM sized
ORDER BY dev_major, dev_minor;
