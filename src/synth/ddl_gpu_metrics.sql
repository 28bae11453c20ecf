-- The two tables `nsys profile --gpu-metrics-devices=…` adds to an export, in the column
-- set of nsys 2024.x-2026.x as public readers of those exports query it (NVIDIA's User
-- Guide, "GPU Metrics": `GPU_METRICS JOIN TARGET_INFO_GPU_METRICS USING (metricId)`,
-- timestamp and value; the typeId/sourceId/typeName/metricId/metricName and rawTimestamp
-- columns as the BSC nsys2prv converter and other readers select them). No capture
-- bundled with stepgate has these tables, so this DDL is NOT copied from a real file:
-- the types and comments imitate nsys's own style (docs/nsys-format.md §10).

CREATE TABLE TARGET_INFO_GPU_METRICS (
    typeId                      INTEGER   NOT NULL,                    -- GPU metrics target; low byte: TARGET_INFO_GPU(pwGpuId).
    sourceId                    INTEGER   NOT NULL,                    -- Metrics source.
    typeName                    TEXT      NOT NULL,                    -- Target name.
    metricId                    INTEGER   NOT NULL,                    -- Metric ID.
    metricName                  TEXT      NOT NULL                     -- Metric name, with its unit in brackets.
)
;
CREATE TABLE GPU_METRICS (
    rawTimestamp                INTEGER,                               -- Raw sample timestamp.
    timestamp                   INTEGER   NOT NULL,                    -- Sample timestamp (ns).
    typeId                      INTEGER   NOT NULL,                    -- REFERENCES TARGET_INFO_GPU_METRICS(typeId)
    metricId                    INTEGER   NOT NULL,                    -- REFERENCES TARGET_INFO_GPU_METRICS(metricId)
    value                       INTEGER   NOT NULL                     -- Metric value over the period ending at timestamp.
)
;
