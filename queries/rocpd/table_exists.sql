-- Whether the database has a table or view of this name (?1): what tells RPD, rocprofv3
-- and other SQLite files apart.
SELECT 1 FROM sqlite_master WHERE name = ?1 AND type IN ('table', 'view')
