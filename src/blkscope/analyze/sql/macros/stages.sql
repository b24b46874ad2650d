-- The stages of a bio's life and their latencies, as stage_stats and latency_hist report them.

-- A bio's stage latencies in ns, in the order of bio_stage_codes(): Q2G, G2I, I2D (unmerged
-- bios whose D follows their I), Q2M, M2D (merged bios whose D follows their M), D2C, Q2C; null
-- where the bio has no such stage. I2D and M2D only when the D comes after the I (M): a split
-- bio whose pieces took different paths (most dispatched at once, one inserted into the
-- scheduler later) has its earliest D before its earliest I, an interval no piece spent; btt
-- times I2D per piece. A plain list, unnested beside the codes: a list of {stage, ns} structs
-- costs more to unnest.
CREATE MACRO bio_stage_ns(
    g_time_ns,  -- first G of its pieces
    i_time_ns,  -- first I
    d_time_ns,  -- earliest last-D of its requests
    m_time_ns,  -- first M/F
    merged,     -- some piece merged
    q_time_ns,  -- its Q
    d2c_ns,     -- D to last completion
    q2c_ns      -- Q to last completion
) RETURNS BIGINT[] AS
[g_time_ns - q_time_ns, i_time_ns - g_time_ns,
 CASE WHEN NOT merged AND d_time_ns >= i_time_ns THEN d_time_ns - i_time_ns END,
 m_time_ns - q_time_ns,
 CASE WHEN merged AND d_time_ns >= m_time_ns THEN d_time_ns - m_time_ns END,
 d2c_ns, q2c_ns];

-- The stage codes of bio_stage_ns()'s latencies, in its order (stage_name names them): unnest
-- both side by side.
CREATE MACRO bio_stage_codes(
) RETURNS INTEGER[] AS
[1, 2, 3, 4, 5, 6, 7];

-- bio_stage_ns() as [{stage code, ns}] (for queries; the tables unnest the plain lists).
CREATE MACRO bio_stage_list(
    g_time_ns,  -- as bio_stage_ns
    i_time_ns,
    d_time_ns,
    m_time_ns,
    merged,
    q_time_ns,
    d2c_ns,
    q2c_ns
) RETURNS STRUCT(stage INTEGER, ns BIGINT)[] AS
list_transform(bio_stage_codes(), lambda c: {'stage': c, 'ns': bio_stage_ns(g_time_ns, i_time_ns, d_time_ns, m_time_ns, merged, q_time_ns, d2c_ns, q2c_ns)[c]});

-- The name of a stage code of bio_stage_codes (8 is Q2Q, the gap between Qs).
CREATE MACRO stage_name(
    code  -- 1 Q2G 2 G2I 3 I2D 4 Q2M 5 M2D 6 D2C 7 Q2C 8 Q2Q
) RETURNS VARCHAR AS
['Q2G', 'G2I', 'I2D', 'Q2M', 'M2D', 'D2C', 'Q2C', 'Q2Q'][code];
