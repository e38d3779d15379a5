-- silver.orders: POS and web orders together; rows that break business rules removed
-- (missing keys, quantity <= 0, negative price); one row per order_id; canonical status;
-- amount = quantity * unit_price; order_date = the day of order_ts.
WITH all_orders AS (
    SELECT order_id, customer_id, order_ts, product, quantity, unit_price, status,
           _source_file, _source_line
    FROM bronze.pos_orders
    UNION ALL
    SELECT order_id, customer_id, order_ts, product, quantity, unit_price, status,
           _source_file, _source_line
    FROM bronze.web_orders
),
valid AS (
    SELECT *
    FROM all_orders
    WHERE order_id IS NOT NULL
      AND customer_id IS NOT NULL
      AND order_ts IS NOT NULL
      AND quantity IS NOT NULL AND quantity > 0
      AND unit_price IS NOT NULL AND unit_price >= 0
),
ranked AS (
    SELECT *,
           row_number() OVER (
               PARTITION BY order_id
               ORDER BY order_ts DESC, _source_file DESC, _source_line DESC
           ) AS copy_no
    FROM valid
)
SELECT order_id,
       customer_id,
       order_ts,
       CAST(order_ts AS DATE) AS order_date,
       product,
       quantity,
       unit_price,
       CAST(quantity * unit_price AS DECIMAL(12, 2)) AS amount,
       CASE WHEN lower(trim(status)) = 'canceled' THEN 'cancelled'
            ELSE lower(trim(status)) END AS status
FROM ranked
WHERE copy_no = 1
