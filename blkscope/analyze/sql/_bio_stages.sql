-- Long form of every bio's stage latencies: one row per (bio, stage) that the bio went through.
-- Q2Q is the gap to the previous Q, computed once per scope it is reported at (process, class,
-- op, device), because a gap between one process's Qs is not a gap of the device.
WITH b AS (
    SELECT *,
        CASE WHEN op = 'N' OR (flags LIKE 'F%' AND sector IS NULL) THEN 'flush'
             WHEN op = 'R' THEN 'read' WHEN op = 'W' THEN 'write' WHEN op = 'D' THEN 'discard'
             ELSE 'other' END AS op_base,
        coalesce(comm, '?') AS process
    FROM bios
), c AS (
    SELECT *, op_base
        || CASE WHEN regexp_matches(flags, '^F?[RWDN]F?A?S') THEN '/sync' ELSE '' END
        || CASE WHEN flags LIKE '%M' THEN '/meta' ELSE '' END AS op_class
    FROM b
), stages AS (
    -- unnest, not LATERAL (VALUES ...): DuckDB plans the lateral as a join back onto c
    SELECT dev_major, dev_minor, op_base, op_class, process, NULL AS scope, s.stage, s.ns
    FROM (SELECT *, unnest([
        {'stage': 'Q2G', 'ns': g_time_ns - q_time_ns}, {'stage': 'G2I', 'ns': i_time_ns - g_time_ns},
        {'stage': 'I2D', 'ns': CASE WHEN NOT merged THEN d_time_ns - i_time_ns END},
        {'stage': 'Q2M', 'ns': m_time_ns - q_time_ns},
        {'stage': 'M2D', 'ns': CASE WHEN merged THEN d_time_ns - m_time_ns END},
        {'stage': 'D2C', 'ns': d2c_ns}, {'stage': 'Q2C', 'ns': q2c_ns}]) AS s FROM c)
    UNION ALL
    SELECT dev_major, dev_minor, op_base, op_class, process, 'process', 'Q2Q',
           q_time_ns - lag(q_time_ns) OVER (PARTITION BY dev_major, dev_minor, op_class, process
                                            ORDER BY q_time_ns, q_eid) FROM c
    UNION ALL
    SELECT dev_major, dev_minor, op_base, op_class, process, 'class', 'Q2Q',
           q_time_ns - lag(q_time_ns) OVER (PARTITION BY dev_major, dev_minor, op_class
                                            ORDER BY q_time_ns, q_eid) FROM c
    UNION ALL
    SELECT dev_major, dev_minor, op_base, op_class, process, 'op', 'Q2Q',
           q_time_ns - lag(q_time_ns) OVER (PARTITION BY dev_major, dev_minor, op_base
                                            ORDER BY q_time_ns, q_eid) FROM c
    UNION ALL
    SELECT dev_major, dev_minor, op_base, op_class, process, 'device', 'Q2Q',
           q_time_ns - lag(q_time_ns) OVER (PARTITION BY dev_major::BIGINT << 32 | dev_minor
                                            ORDER BY q_time_ns, q_eid) FROM c
)
SELECT
    dev_major,    -- device major
    dev_minor,    -- device minor
    op_base,      -- read, write, discard, flush, other
    op_class,     -- op_base plus /sync and /meta when the Q's RWBS has S / M
    process,      -- submitting comm ('?' when unknown)
    scope,        -- for Q2Q: the level its gap was computed at; null for other stages
    stage,        -- Q2G G2I I2D Q2M M2D D2C Q2C Q2Q
    ns            -- the latency in ns
FROM stages WHERE ns IS NOT NULL
