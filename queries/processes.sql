-- Process names (PROCESSES.globalPid carries the pid in bits 24..47, NSYS_SCHEMA.md §8).
SELECT globalPid, pid, name FROM {{TABLE}}
