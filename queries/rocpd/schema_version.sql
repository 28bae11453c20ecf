-- The rocpd schema version (3 for rocprofv3; RPD files have no rocpd_metadata table).
SELECT value FROM rocpd_metadata WHERE tag = 'schema_version' LIMIT 1
