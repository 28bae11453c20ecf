-- Opaque CUDA-graph replays of graph-mode tracing, one interval per launch
-- (CUPTI_ActivityGraphTrace; column list per nsys2prv graph_cupti.sql, docs/nsys-format.md §6).
SELECT start, end, deviceId, streamId, {{globalPid}}, {{correlationId}}, {{graphId}}
FROM {{TABLE}}
