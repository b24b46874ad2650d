INCLUDE _depth_time;

-- The `depth` table: the exact in-flight step function per device and level, as time spent at
-- each depth. level 'driver': requests between D and C (an R takes one back out until its next
-- D; a request whose D came before the trace, i.e. a C without a D that is not an orphan, is in
-- flight from the trace start; orphan C's, whose D is missing mid-trace, and bio-based devices'
-- C's, which have no D, are left out). level 'queue': bios between Q and completion (unfinished
-- ones until the trace end). Each device's function starts at 0 at its first event and ends at
-- its last; the steps of one nanosecond apply -1 before 0 before +1, so a depth passed through
-- within one nanosecond is listed with held_ns 0. The streaming pass walks the steps in time
-- order (rust/src/pass/depth.rs) and leaves the time held per depth, one row per depth
-- visited, in the analysis connection's _depth_time: this view exists only while `analyze` runs.
CREATE VIEW internal._depth_build(LIKE depth) AS
SELECT
    dev_major,
    dev_minor,
    level,
    depth::INTEGER AS depth,
    sum(held_ns)::BIGINT AS held_ns,
    sum(held_ns) / nullif(sum(sum(held_ns)) OVER (PARTITION BY dev_major, dev_minor, level), 0) AS share
FROM internal._depth_time
GROUP BY dev_major, dev_minor, level, depth
ORDER BY dev_major, dev_minor, level, depth;
