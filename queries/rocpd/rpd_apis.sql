-- HIP calls with their name and args (a ROCTx range is a `UserMarker` call whose args is its text).
SELECT A.start, A."end", A.pid, A.tid, COALESCE(N.string, ''), COALESCE(G.string, ''), A.id
FROM rocpd_api A
LEFT JOIN rocpd_string N ON N.id = A.apiName_id
LEFT JOIN rocpd_string G ON G.id = A.args_id
