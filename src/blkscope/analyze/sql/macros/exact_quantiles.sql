INCLUDE buckets;

-- Per group, the values quantile_disc(v, permille / 1000) returns (the value at 0-based rank
-- ceil(n * permille / 1000) - 1 of the group's sorted values, as DuckDB ranks for a decimal
-- fraction), without holding a group's values in memory.
-- How: a first pass counts each group's values per value bucket (value_bucket) and finds the
-- bucket holding each wanted rank; a second pass sorts only the values of those buckets (none
-- when a bucket holds one distinct value). Memory goes with the number of buckets, not of
-- values; both passes are aggregates and joins that DuckDB can spill.
CREATE MACRO exact_quantiles(
    tbl,       -- the name of a table, view or CTE with columns g (the group, any type; null
               -- fields are equal) and v (BIGINT, not null)
    permilles  -- the wanted quantiles, a list of integers in 1..1000
) RETURNS TABLE(
    g ANY,             -- the group (the type of tbl's g)
    permille INTEGER,  -- the wanted quantile in thousandths
    v BIGINT           -- the group's value at that rank
) AS TABLE
WITH counts AS (
    SELECT g, value_bucket(v) AS b, count(*) AS c, min(v) AS lo, max(v) AS hi
    FROM query_table(tbl) GROUP BY ALL
), cum AS (
    SELECT *, sum(c) OVER (PARTITION BY g ORDER BY b ROWS UNBOUNDED PRECEDING) - c AS before,
           sum(c) OVER (PARTITION BY g) AS n
    FROM counts
), ranks AS (
    SELECT g, k AS permille, (n * k + 999) // 1000 - 1 AS r
    FROM (SELECT DISTINCT g, n FROM cum), (SELECT unnest(permilles) AS k)
), hits AS (
    -- the bucket holding each wanted rank, and the rank's offset among the bucket's values
    SELECT w.g, w.permille, w.r - c.before AS offset, c.lo, c.hi
    FROM ranks w JOIN cum c ON c.g IS NOT DISTINCT FROM w.g AND w.r >= c.before AND w.r < c.before + c.c
), spread AS (
    -- a bucket's values are exactly the group's values from its lowest to its highest
    SELECT DISTINCT g, lo, hi FROM hits WHERE lo < hi
), ranked AS (
    SELECT s.g, s.lo, t.v, row_number() OVER (PARTITION BY s.g, s.lo ORDER BY t.v) - 1 AS offset
    FROM query_table(tbl) t JOIN spread s ON t.g IS NOT DISTINCT FROM s.g AND t.v BETWEEN s.lo AND s.hi
)
SELECT
    h.g,
    h.permille,
    coalesce(x.v, h.lo) AS v
FROM hits h LEFT JOIN ranked x ON h.lo < h.hi AND x.g IS NOT DISTINCT FROM h.g AND x.lo = h.lo AND x.offset = h.offset;
