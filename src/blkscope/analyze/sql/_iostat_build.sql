INCLUDE _iostat_islands, _iostat_done, _iostat_merges;

-- The `iostat` table: `iostat -x` columns recomputed per interval from the requests the
-- kernel's disk statistics count (_iostat_requests): a request counts when it completes, aqu-sz
-- is the sum of their awaits over the interval, %util the share of the interval with a request
-- in flight. The analysis counts the requests and the merges per interval as it goes
-- (analyze/stream/iostat_counts.py: `internal._iostat_done`, `internal._iostat_merges`),
-- with the same interval_ns and origin_ns it calls this macro with.
-- Every interval from a device's first completion to its last is listed, as iostat prints one
-- per interval, unless they are more than max(100,000, 100 per interval with a completion):
-- then (a timestamp years off stretches the trace) only the intervals with a completion are,
-- so the table never grows with the range of a corrupt timestamp.
CREATE MACRO internal._iostat_build(
    interval_ns,  -- the intervals' length, ns
    origin_ns     -- where one interval starts, trace ns
) RETURNS TABLE(LIKE iostat) AS TABLE
WITH params AS (
    SELECT interval_ns::BIGINT AS iv, origin_ns::BIGINT AS org
), done AS (
    -- per (device, interval of the C): count(*) FILTER (op = 'R') AS reads, likewise writes;
    -- coalesce(sum(nsectors) FILTER (op = 'R'), 0) AS read_sectors, likewise write_sectors;
    -- sum(c_time_ns - start_ns) FILTER (op = 'R') AS read_wait_ns, likewise write_wait_ns;
    -- sum(c_time_ns - start_ns) AS wait_ns; k = floor((c_time_ns - org) / iv)::BIGINT
    SELECT dev_major, dev_minor, k, reads, writes,
           read_sectors_hi::HUGEINT * 4294967296 + read_sectors_lo AS read_sectors,
           write_sectors_hi::HUGEINT * 4294967296 + write_sectors_lo AS write_sectors,
           read_wait_ns_hi::HUGEINT * 4294967296 + read_wait_ns_lo AS read_wait_ns,
           write_wait_ns_hi::HUGEINT * 4294967296 + write_wait_ns_lo AS write_wait_ns,
           wait_ns_hi::HUGEINT * 4294967296 + wait_ns_lo AS wait_ns
    FROM internal._iostat_done
), merges AS (
    -- per (device, interval of the event): the M and F events, count(*) FILTER (op = 'R') AS
    -- read_merges, likewise write_merges
    SELECT dev_major, dev_minor, k, read_merges, write_merges FROM internal._iostat_merges
), islands AS (
    -- busy periods: islands of overlapping [Q, C] spans, found by the compiled sweep over the
    -- requests (analyze/compiled.py), which takes their near order as it comes: a window here
    -- sorted every request by its start
    SELECT dev_major, dev_minor, lo, hi FROM internal._iostat_islands
), extent AS (
    SELECT dev_major, dev_minor, min(k) AS k0, max(k) AS k1,
           max(k) - min(k) + 1 <= greatest(100000, 100 * count(*)) AS whole
    FROM done GROUP BY ALL
), bins AS (
    SELECT dev_major, dev_minor, k, p.org + k * p.iv AS lo, p.org + (k + 1) * p.iv AS hi
    FROM (
        SELECT d.dev_major, d.dev_minor, t.k
        FROM extent d, range(d.k0, d.k1 + 1) AS t(k) WHERE d.whole
        UNION ALL
        SELECT dev_major, dev_minor, k FROM done JOIN extent USING (dev_major, dev_minor)
        WHERE NOT whole
    ), params p
), spans AS (
    -- the bins an island overlaps ([lo, hi] meets [org + k iv, org + (k + 1) iv)) run from
    -- floor((lo - org) / iv) to floor((hi - org - 1) / iv)
    SELECT i.*, floor((i.lo - p.org) / p.iv)::BIGINT AS k_lo,
           floor((i.hi - p.org - 1) / p.iv)::BIGINT AS k_hi
    FROM islands i, params p
), busy AS (
    -- an island inside one bin is all busy time of that bin; only the others (few) are cut at
    -- the bins they overlap by a range join (every island against every bin of its device
    -- makes islands x bins pairs)
    SELECT dev_major, dev_minor, k, sum(ns) AS busy_ns
    FROM (
        SELECT dev_major, dev_minor, k_lo AS k, hi - lo AS ns FROM spans WHERE k_lo = k_hi
        UNION ALL
        SELECT b.dev_major, b.dev_minor, b.k, least(i.hi, b.hi) - greatest(i.lo, b.lo)
        FROM bins b JOIN spans i ON i.dev_major = b.dev_major AND i.dev_minor = b.dev_minor
         AND i.lo < b.hi AND i.hi > b.lo
        WHERE i.k_lo <> i.k_hi
    )
    GROUP BY ALL
)
SELECT
    b.dev_major,
    b.dev_minor,
    b.lo AS start_ns,
    p.iv AS interval_ns,
    coalesce(d.reads, 0) * 1e9 / p.iv AS r_s,
    coalesce(d.writes, 0) * 1e9 / p.iv AS w_s,
    coalesce(d.read_sectors, 0) / 2 * 1e9 / p.iv AS rkb_s,
    coalesce(d.write_sectors, 0) / 2 * 1e9 / p.iv AS wkb_s,
    coalesce(m.read_merges, 0) * 1e9 / p.iv AS rrqm_s,
    coalesce(m.write_merges, 0) * 1e9 / p.iv AS wrqm_s,
    d.read_wait_ns / d.reads / 1e6 AS r_await_ms,
    d.write_wait_ns / d.writes / 1e6 AS w_await_ms,
    coalesce(d.wait_ns, 0) / p.iv AS aqu_sz,
    coalesce(u.busy_ns, 0) * 100.0 / p.iv AS util_pct,
    coalesce(d.reads, 0) AS reads,
    coalesce(d.writes, 0) AS writes
FROM bins b CROSS JOIN params p
LEFT JOIN done d USING (dev_major, dev_minor, k)
LEFT JOIN merges m USING (dev_major, dev_minor, k)
LEFT JOIN busy u USING (dev_major, dev_minor, k)
ORDER BY b.dev_major, b.dev_minor, b.lo;
