-- gold.fact_orders: every order with its customer (orders of unknown customers are kept,
-- with NULL customer attributes).
SELECT o.order_id,
       o.order_date,
       o.customer_id,
       c.name AS customer_name,
       c.country,
       o.product,
       o.quantity,
       o.amount,
       o.status
FROM silver.orders o
LEFT JOIN silver.customers c ON o.customer_id = c.customer_id
