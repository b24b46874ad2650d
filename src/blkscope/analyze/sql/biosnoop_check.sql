-- Every sized row of the capture's biosnoop log beside the request blkscope rebuilt for it:
-- the data request with the same start sector and length whose C lies nearest the row's
-- completion time, within 1 ms (biosnoop's time is put on the trace's timeline at ingest).
-- biosnoop reads the kernel's own issue and completion tracepoints, so its latency is an
-- independent measure of D2C (printed in 10 us steps by the bpftrace tool, 1 us by bcc).
-- needs: biosnoop?, requests
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
    s.line_no,                                        -- biosnoop line
    s.disk,                                           -- DISK as biosnoop printed it
    s.op,                                             -- R/W/D/N from its T column
    s.sector,                                         -- start sector
    s.nsectors,                                       -- length in sectors (BYTES / 512)
    s.t_ns,                                           -- its completion on the trace timeline
    s.latency_ns,                                     -- its LAT: issue to completion
    c.dev_major,                                      -- matched request: device major (null: none)
    c.dev_minor,                                      -- device minor
    c.c_time_ns,                                      -- the request's C
    c.d2c_ns,                                         -- its D2C
    c.c_time_ns - s.t_ns AS c_gap_ns,                 -- C minus biosnoop's time
    c.d2c_ns - s.latency_ns AS d2c_diff_ns            -- our D2C minus biosnoop's LAT
FROM s LEFT JOIN candidates c USING (line_no)
ORDER BY s.line_no
