-- gold.customer_metrics: per known customer, over orders that were not cancelled.
-- Segment by total spend: Platinum >= 1000, Gold >= 500, Silver >= 200, else Bronze.
WITH spend AS (
    SELECT customer_id,
           count(*) AS orders,
           sum(amount) AS total_spend,
           min(order_date) AS first_order_date,
           max(order_date) AS last_order_date
    FROM gold.fact_orders
    WHERE status <> 'cancelled'
      AND customer_id IN (SELECT customer_id FROM silver.customers)
    GROUP BY customer_id
)
SELECT s.customer_id,
       c.name AS customer_name,
       c.country,
       s.orders,
       s.total_spend,
       CAST(round(s.total_spend / s.orders, 2) AS DECIMAL(12, 2)) AS avg_order_value,
       s.first_order_date,
       s.last_order_date,
       CASE WHEN s.total_spend >= 1000 THEN 'Platinum'
            WHEN s.total_spend >= 500 THEN 'Gold'
            WHEN s.total_spend >= 200 THEN 'Silver'
            ELSE 'Bronze' END AS segment
FROM spend s
JOIN silver.customers c ON c.customer_id = s.customer_id
