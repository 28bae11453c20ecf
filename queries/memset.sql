-- GPU memsets (NSYS_SCHEMA.md §5).
SELECT start, end, deviceId, streamId, globalPid, correlationId, bytes, {{graphNodeId}}
FROM {{TABLE}}
