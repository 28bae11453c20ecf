-- Memcpy kind symbols (3.x exports); older exports have no ENUM tables and the loader
-- uses the same fixed table (NSYS_SCHEMA.md §5).
SELECT id, name FROM {{TABLE}}
