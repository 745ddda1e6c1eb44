-- Clicks per page and 5-minute window, appended once the watermark (10 minutes) passes the window's end
CREATE STREAMING TABLE gold_page_windows AS
SELECT w.start AS window_start, w.end AS window_end, page, clicks
FROM (
  SELECT window(ts, '5 minutes') AS w, page, count(*) AS clicks
  FROM STREAM(silver_clicks) WATERMARK ts DELAY OF INTERVAL 10 MINUTES AS s
  GROUP BY window(ts, '5 minutes'), page
);
