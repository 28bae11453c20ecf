-- Kernel dispatches: device = the GPU agent's `type_index` (GPU 0..n-1), the launching
-- process's OS pid, the demangled name, the link id, and the launch geometry (rocpd's
-- grid is in work-items; the model's grid counts workgroups, as CUDA's does).
SELECT K.start, K."end", COALESCE(A.type_index, A.logical_index, K.agent_id),
       K.stream_id, COALESCE(P.pid, K.pid),
       COALESCE(NULLIF(S.display_name, ''), S.kernel_name, ''),
       COALESCE(E.stack_id, -1),
       K.grid_size_x, K.grid_size_y, K.grid_size_z,
       K.workgroup_size_x, K.workgroup_size_y, K.workgroup_size_z
FROM rocpd_kernel_dispatch K
LEFT JOIN rocpd_info_agent A ON A.id = K.agent_id
LEFT JOIN rocpd_info_process P ON P.id = K.pid
LEFT JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id
LEFT JOIN rocpd_event E ON E.id = K.event_id
