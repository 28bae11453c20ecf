-- The GPU metrics the capture sampled (`nsys profile --gpu-metrics-devices`): one row per
-- (target, metric); typeId names the sampled GPU (docs/nsys-format.md §10). Small: the
-- loader picks the DRAM bandwidth and SM activity metrics by name from it.
SELECT typeId, metricId, metricName
FROM {{TABLE}}
