INCLUDE bios, op_class;

-- D2C and Q2C of every complete bio, keyed by device, op class, stage and 1 s window of
-- completion (the rows _window_latency aggregates; exact_quantiles groups on g and ranks v).
CREATE VIEW internal._window_bio_latencies(
    g STRUCT(dev_major INTEGER, dev_minor INTEGER, op_class VARCHAR, stage VARCHAR, win BIGINT),  -- device, op class, D2C or Q2C, window
    v BIGINT                                                                                      -- the latency, ns
) AS
SELECT
    {'dev_major': dev_major, 'dev_minor': dev_minor, 'op_class': op_class, 'stage': stage,
     'win': c_time_ns // 1000000000} AS g,
    lat AS v
FROM (
    SELECT dev_major, dev_minor, op_class(op, flags, sector) AS op_class, c_time_ns,
           'D2C' AS stage, d2c_ns AS lat FROM bios
    WHERE NOT partial AND d2c_ns IS NOT NULL
    UNION ALL
    SELECT dev_major, dev_minor, op_class(op, flags, sector), c_time_ns, 'Q2C', q2c_ns FROM bios
    WHERE NOT partial AND q2c_ns IS NOT NULL
);
