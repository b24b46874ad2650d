INCLUDE _bio_row_counts, op_class;

-- The `bio_counts` table: the bios table counted per device and op class. The streaming pass
-- counts its rows as it writes them, per op letter, RWBS and whether the bio has a sector
-- (analyze/stream/row_counts.py), into the analysis connection's _bio_row_counts: op_class, the
-- one definition of a class, needs only those. This view exists only while `analyze` runs.
CREATE VIEW internal._bio_counts_build(LIKE bio_counts) AS
SELECT
    dev_major,
    dev_minor,
    op_class(op, flags, CASE WHEN has_sector THEN 0 END) AS op,
    sum(bios)::BIGINT AS bios,
    sum(merged)::BIGINT AS merged,
    sum(split)::BIGINT AS split,
    sum(splits)::BIGINT AS splits,
    sum(partial)::BIGINT AS partial
FROM internal._bio_row_counts
GROUP BY ALL
ORDER BY ALL;
