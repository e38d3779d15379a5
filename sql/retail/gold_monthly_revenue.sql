-- gold.monthly_revenue: orders, distinct customers and revenue per month, cancelled orders
-- excluded (orders of unknown customers included: revenue is revenue).
SELECT CAST(date_trunc('month', order_date) AS DATE) AS month,
       count(*) AS orders,
       count(DISTINCT customer_id) AS customers,
       sum(amount) AS revenue
FROM gold.fact_orders
WHERE status <> 'cancelled'
GROUP BY CAST(date_trunc('month', order_date) AS DATE)
