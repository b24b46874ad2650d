INCLUDE fleet_latency;

-- Hosts ranked by their worst Q2C p99 (then D2C p99) over all their captures and devices: the
-- hosts to look at first. SQL that DuckDB and Spark SQL both run.
CREATE VIEW fleet_hosts(
    rank BIGINT,               -- 1 = worst
    host VARCHAR,              -- host
    captures BIGINT,           -- captures of this host
    ios HUGEINT,               -- bios queued over them
    worst_q2c_p99_ns BIGINT,   -- largest per-capture Q2C p99, ns
    worst_d2c_p99_ns BIGINT,   -- largest per-capture D2C p99, ns
    median_q2c_p99_ns DOUBLE,  -- median per-capture Q2C p99, ns
    median_d2c_p99_ns DOUBLE,  -- median per-capture D2C p99, ns
    episodes HUGEINT           -- latency episodes over all its captures
) AS
WITH h AS (
    SELECT host,
           count(DISTINCT capture) AS captures,
           sum(ios) AS ios,
           max(q2c_p99_ns) AS worst_q2c_p99_ns,
           max(d2c_p99_ns) AS worst_d2c_p99_ns,
           CAST(median(q2c_p99_ns) AS DOUBLE) AS median_q2c_p99_ns,
           CAST(median(d2c_p99_ns) AS DOUBLE) AS median_d2c_p99_ns,
           sum(episodes) AS episodes
    FROM fleet_latency
    GROUP BY host
)
SELECT
    RANK() OVER (ORDER BY worst_q2c_p99_ns DESC, worst_d2c_p99_ns DESC) AS rank,
    host,
    captures,
    ios,
    worst_q2c_p99_ns,
    worst_d2c_p99_ns,
    median_q2c_p99_ns,
    median_d2c_p99_ns,
    episodes
FROM h;
