-- GPU kernels. {{col|alt}} placeholders become the first column of that name the table
-- has, or NULL (graphId appears in nsys 2026.1, see docs/nsys-format.md §2). No ORDER BY: rows
-- are read in rowid (= start) order and the loader sorts only when they are not.
-- The ROWS placeholder becomes a rowid range when the loader reads the table in slices;
-- GEOMETRY becomes gridX..blockZ only when launch geometry is asked for (columns 10-15).
SELECT start, end, deviceId, streamId, globalPid, correlationId,
       demangledName, shortName, {{graphNodeId}}, {{graphId}}{{GEOMETRY}}
FROM {{TABLE}}
WHERE {{ROWS}}
