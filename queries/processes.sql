-- Process names (PROCESSES.globalPid carries the pid in bits 24..47, docs/nsys-format.md §8).
SELECT globalPid, pid, name FROM {{TABLE}}
