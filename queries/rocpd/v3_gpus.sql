-- The GPUs the database names: `rocpd_info_agent` rows of type GPU (agents repeat per
-- process, so one per `type_index`), with the first non-empty of their names.
SELECT type_index, COALESCE(NULLIF(product_name, ''), NULLIF(model_name, ''), name)
FROM rocpd_info_agent WHERE type = 'GPU' AND type_index IS NOT NULL ORDER BY type_index
