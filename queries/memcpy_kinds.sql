-- Memcpy kind symbols (3.x exports); older exports have no ENUM tables and the loader
-- uses the same fixed table (docs/nsys-format.md §5).
SELECT id, name FROM {{TABLE}}
