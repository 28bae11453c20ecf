-- Interned strings every *Name / nameId / textId column points at (NSYS_SCHEMA.md §1).
SELECT id, value FROM {{TABLE}}
