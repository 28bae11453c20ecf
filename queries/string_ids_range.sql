-- Size of the StringIds id space: picks a dense or hashed id map before loading.
SELECT count(*), COALESCE(max(id), 0) FROM {{TABLE}}
