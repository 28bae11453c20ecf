-- GPU memory copies; copyKind indexes ENUM_CUDA_MEMCPY_OPER (docs/nsys-format.md §5).
SELECT start, end, deviceId, streamId, globalPid, correlationId, copyKind, bytes
FROM {{TABLE}}
