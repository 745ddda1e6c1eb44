-- Clicks per page over every closed window so far, recomputed at each update
CREATE MATERIALIZED VIEW page_totals AS
SELECT page, SUM(clicks) AS clicks
FROM gold_page_windows
GROUP BY page;
