-- Interned strings every *Name / nameId / textId column points at (docs/nsys-format.md §1).
SELECT id, value FROM {{TABLE}}
