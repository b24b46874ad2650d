INCLUDE _request_row_counts, op_class;

-- The `request_counts` table: the requests table counted per device, op class and kind, from
-- the streaming pass's counts of its rows (see _bio_counts_build). This view exists only while
-- `analyze` runs.
CREATE VIEW internal._request_counts_build(LIKE request_counts) AS
SELECT
    dev_major,
    dev_minor,
    op_class(op, flags, CASE WHEN has_sector THEN 0 END) AS op,
    kind,
    sum(requests)::BIGINT AS requests,
    sum(dispatches)::BIGINT AS dispatches,
    sum(completions)::BIGINT AS completions,
    sum(requeues)::BIGINT AS requeues,
    sum(partial)::BIGINT AS partial
FROM internal._request_row_counts
GROUP BY ALL
ORDER BY ALL;
