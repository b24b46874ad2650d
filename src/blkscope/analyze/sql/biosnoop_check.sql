INCLUDE requests;
INCLUDE IF EXISTS biosnoop;

-- Every sized row of the capture's biosnoop log beside the request blkscope rebuilt for it:
-- the data request with the same start sector and length whose C lies nearest the row's
-- completion time, within 1 ms (biosnoop's time is put on the trace's timeline at ingest).
-- biosnoop reads the kernel's own issue and completion tracepoints, so its latency is an
-- independent measure of D2C (printed in 10 us steps by the bpftrace tool, 1 us by bcc).
CREATE VIEW biosnoop_check(
    line_no BIGINT,     -- biosnoop line
    disk VARCHAR,       -- DISK as biosnoop printed it
    op VARCHAR,         -- R/W/D/N from its T column
    sector BIGINT,      -- start sector
    nsectors BIGINT,    -- length in sectors (BYTES / 512)
    t_ns BIGINT,        -- its completion on the trace timeline
    latency_ns BIGINT,  -- its LAT: issue to completion
    dev_major INTEGER,  -- matched request: device major (null: none)
    dev_minor INTEGER,  -- device minor
    c_time_ns BIGINT,   -- the request's C
    d2c_ns BIGINT,      -- its D2C
    c_gap_ns BIGINT,    -- C minus biosnoop's time
    d2c_diff_ns BIGINT  -- our D2C minus biosnoop's LAT
) AS
WITH s AS (
    SELECT line_no, disk, op, t_ns, sector, bytes // 512 AS nsectors, latency_ns
    FROM biosnoop WHERE bytes > 0 AND sector IS NOT NULL AND t_ns IS NOT NULL
), candidates AS (
    SELECT s.line_no, arg_min(r.c_time_ns, abs(r.c_time_ns - s.t_ns)) AS c_time_ns,
           arg_min(r.d2c_ns, abs(r.c_time_ns - s.t_ns)) AS d2c_ns,
           arg_min(r.dev_major, abs(r.c_time_ns - s.t_ns)) AS dev_major,
           arg_min(r.dev_minor, abs(r.c_time_ns - s.t_ns)) AS dev_minor
    FROM s JOIN requests r
      ON r.sector = s.sector AND r.nsectors = s.nsectors AND r.kind = 'data'
     AND r.c_time_ns BETWEEN s.t_ns - 1000000 AND s.t_ns + 1000000
    GROUP BY s.line_no
)
SELECT
    s.line_no,
    s.disk,
    s.op,
    s.sector,
    s.nsectors,
    s.t_ns,
    s.latency_ns,
    c.dev_major,
    c.dev_minor,
    c.c_time_ns,
    c.d2c_ns,
    c.c_time_ns - s.t_ns AS c_gap_ns,
    c.d2c_ns - s.latency_ns AS d2c_diff_ns
FROM s LEFT JOIN candidates c USING (line_no)
ORDER BY s.line_no;
