-- silver.customers: the latest row per customer (by updated_at), names and emails trimmed,
-- blank emails as NULL, country codes upper-case.
WITH ranked AS (
    SELECT *,
           row_number() OVER (
               PARTITION BY customer_id
               ORDER BY updated_at DESC, _source_file DESC, _source_line DESC
           ) AS version_no
    FROM bronze.customers
    WHERE customer_id IS NOT NULL
)
SELECT customer_id,
       trim(name) AS name,
       nullif(trim(email), '') AS email,
       upper(trim(country)) AS country,
       updated_at
FROM ranked
WHERE version_no = 1
