-- Host regions: HIP calls and ROCTx ranges, told apart by their event's category.
SELECT R.start, R."end", COALESCE(P.pid, R.pid), COALESCE(T.tid, R.tid),
       COALESCE(N.string, ''), COALESCE(E.stack_id, R.id), COALESCE(C.string, ''),
       json_extract(E.extdata, '$.message')
FROM rocpd_region R
LEFT JOIN rocpd_string N ON N.id = R.name_id
LEFT JOIN rocpd_event E ON E.id = R.event_id
LEFT JOIN rocpd_string C ON C.id = E.category_id
LEFT JOIN rocpd_info_process P ON P.id = R.pid
LEFT JOIN rocpd_info_thread T ON T.id = R.tid
