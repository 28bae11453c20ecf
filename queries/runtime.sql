-- CUDA runtime (eventClass 0) and driver (1) API calls. eventClass 67 rows are CUDA
-- backtrace duplicates carrying the same correlationId (docs/nsys-format.md §3): dropped here.
-- The ROWS placeholder becomes a rowid range when the loader reads the table in slices.
SELECT start, end, eventClass, globalTid, correlationId, nameId
FROM {{TABLE}}
WHERE eventClass IN (0, 1) AND {{ROWS}}
