-- Closed NVTX ranges: 59 push/pop, 60 start/end, 70/71 their NVTXT twins
-- (ENUM_NSYS_EVENT_TYPE, docs/nsys-format.md §4). An open range (end NULL) has no extent.
-- And 75, a named domain's create row (no end): its text names the domain whose ranges
-- share its domainId in that process; read in the same pass, so naming `Domain:Name`
-- (as nsys does) costs no second scan of the table.
-- The name is COALESCE(text, StringIds[textId]); the loader resolves textId itself.
-- endGlobalTid: the thread a start/end range was ended on, NULL when it is the thread it
-- started on (nsys' own projection reads only those, docs/nvtx.md).
-- The ROWS placeholder becomes a rowid range when the loader reads the table in slices.
SELECT start, end, eventType, globalTid, text, {{textId}}, {{domainId}}, {{endGlobalTid}}
FROM {{TABLE}}
-- The kinds are spelled as ORs, not IN (…): SQLite answers IN with a lookup in a
-- temporary index per row, a third of this query's time on a 5M-row table.
WHERE ((eventType = 59 OR eventType = 60 OR eventType = 70 OR eventType = 71)
  AND end IS NOT NULL OR eventType = 75) AND {{ROWS}}
