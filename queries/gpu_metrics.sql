-- GPU metric samples of the chosen metrics only (IDS: the metricIds the loader picked
-- from TARGET_INFO_GPU_METRICS; a capture has a dozen or more metrics at 10 kHz each).
-- timestamp is ns on the events' clock; value is the metric over the period ending there
-- (docs/nsys-format.md §10). No ORDER BY: the loader sorts each series once.
SELECT timestamp, typeId, metricId, value
FROM {{TABLE}}
WHERE {{IDS:metricId}}
