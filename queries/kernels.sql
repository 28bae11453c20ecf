-- GPU kernels. {{col|alt}} placeholders become the first column of that name the table
-- has, or NULL (graphId appears in nsys 2026.1, see docs/nsys-format.md §2). graphNodeId is
-- not read: no analysis uses it, and each column read costs every row. No ORDER BY: rows
-- are read in rowid (= start) order and the loader sorts only when they are not.
-- The ROWS placeholder becomes a rowid range when the loader reads the table in slices;
-- GEOMETRY becomes gridX..blockZ only when launch geometry is asked for (columns 9-14).
SELECT start, end, deviceId, streamId, globalPid, correlationId,
       demangledName, shortName, {{graphId}}{{GEOMETRY}}
FROM {{TABLE}}
WHERE {{ROWS}}
