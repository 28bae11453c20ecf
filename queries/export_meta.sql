-- Export tool and schema version: META_DATA_EXPORT from 2024.5, EXPORT_META_DATA in
-- 2022.1/2022.2, neither before (docs/nsys-format.md §0).
SELECT name, value FROM {{TABLE}}
WHERE name IN ('EXPORT_PRODUCT_VERSION', 'EXPORT_SCHEMA_VERSION')
