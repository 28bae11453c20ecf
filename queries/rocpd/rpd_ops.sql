-- GPU ops with their launching call (the smallest linked api id: an op has one), the
-- process of that call, and the copy size where the call was a copy.
SELECT O.start, O."end", O.gpuId, O.queueId, COALESCE(D.string, ''), COALESCE(T.string, ''),
       COALESCE(L.api_id, -1), COALESCE(A.pid, -1), COALESCE(C.size, 0)
FROM rocpd_op O
LEFT JOIN rocpd_string D ON D.id = O.description_id
LEFT JOIN rocpd_string T ON T.id = O.opType_id
LEFT JOIN (SELECT op_id, MIN(api_id) AS api_id FROM rocpd_api_ops GROUP BY op_id) L ON L.op_id = O.id
LEFT JOIN rocpd_api A ON A.id = L.api_id
LEFT JOIN rocpd_copyapi C ON C.api_ptr_id = L.api_id
