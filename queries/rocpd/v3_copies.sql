-- Memory copies, on the GPU that receives them (or sends them, for device → host).
SELECT M.start, M."end",
       CASE WHEN DA.type = 'GPU' THEN DA.type_index WHEN SA.type = 'GPU' THEN SA.type_index END,
       COALESCE(M.stream_id, -1), COALESCE(P.pid, M.pid), COALESCE(N.string, 'MEMORY_COPY'),
       COALESCE(E.stack_id, -1), M.size
FROM rocpd_memory_copy M
LEFT JOIN rocpd_info_agent DA ON DA.id = M.dst_agent_id
LEFT JOIN rocpd_info_agent SA ON SA.id = M.src_agent_id
LEFT JOIN rocpd_string N ON N.id = M.name_id
LEFT JOIN rocpd_info_process P ON P.id = M.pid
LEFT JOIN rocpd_event E ON E.id = M.event_id
