-- gold.repeat_buyers: customers with two or more (non-cancelled) orders versus one.
SELECT CASE WHEN orders >= 2 THEN 'repeat' ELSE 'one-time' END AS buyer_type,
       count(*) AS customers,
       sum(total_spend) AS revenue
FROM gold.customer_metrics
GROUP BY CASE WHEN orders >= 2 THEN 'repeat' ELSE 'one-time' END
