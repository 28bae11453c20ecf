-- GPUs as the report names them. The id column was `deviceId` in nsys 2020.5 and `id`
-- from 2021.3 on; the other columns appear with the 41-column layout (docs/nsys-format.md §7).
-- pwGpuId (PerfWorks GPU id) is what GPU metrics name a GPU by (§10).
SELECT {{id|deviceId}}, name, {{memoryBandwidth}}, {{smCount}}, {{totalMemory}}, {{pwGpuId}}
FROM {{TABLE}}
