-- GPU memsets (docs/nsys-format.md §5).
SELECT start, end, deviceId, streamId, globalPid, correlationId, bytes
FROM {{TABLE}}
