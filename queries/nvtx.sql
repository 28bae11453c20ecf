-- Closed NVTX ranges: 59 push/pop, 60 start/end, 70/71 their NVTXT twins
-- (ENUM_NSYS_EVENT_TYPE, docs/nsys-format.md §4). An open range (end NULL) has no extent.
-- The name is COALESCE(text, StringIds[textId]); the loader resolves textId itself.
-- The ROWS placeholder becomes a rowid range when the loader reads the table in slices.
SELECT start, end, eventType, globalTid, text, {{textId}}, {{domainId}}
FROM {{TABLE}}
WHERE eventType IN (59, 60, 70, 71) AND end IS NOT NULL AND {{ROWS}}
