COPY users FROM STDIN
----
COPY users TO STDOUT
----
COPY users (id, email, tenant_id) FROM STDIN
----
COPY users (id, email) TO STDOUT WITH (FORMAT csv, HEADER true)
----
COPY users FROM STDIN WITH (FORMAT csv, HEADER, DELIMITER ',', QUOTE '"', ESCAPE '\')
----
COPY users FROM STDIN (FORMAT binary)
----
COPY users TO STDOUT (FORMAT binary)
----
COPY events FROM STDIN WITH (FORMAT text, DELIMITER E'\t', NULL '\N')
----
COPY events FROM STDIN WITH (FORMAT csv, NULL 'NULL', FORCE_NOT_NULL (name, email), FORCE_NULL (age))
----
COPY events TO STDOUT WITH (FORMAT csv, FORCE_QUOTE (name, note))
----
COPY events TO STDOUT WITH (FORMAT csv, FORCE_QUOTE *)
----
COPY events FROM STDIN WITH (FORMAT csv, HEADER MATCH)
----
COPY events FROM STDIN WITH (FORMAT csv, ENCODING 'UTF8', FREEZE true)
----
COPY events FROM STDIN WITH (FORMAT csv, ON_ERROR ignore, LOG_VERBOSITY verbose)
----
COPY events FROM STDIN WITH (FORMAT text, ON_ERROR stop, REJECT_LIMIT 10)
----
COPY events FROM STDIN WITH (DEFAULT '\D')
----
COPY (SELECT * FROM users WHERE tenant_id = 5) TO STDOUT
----
COPY (SELECT id, email FROM users WHERE created_at > now() - interval '1 day' ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)
----
COPY (SELECT * FROM events_p3 WHERE "offset" BETWEEN 1000 AND 2000 ORDER BY "offset") TO STDOUT (FORMAT binary)
----
COPY (WITH x AS (SELECT 1 AS a) SELECT * FROM x) TO STDOUT
----
COPY (VALUES (1, 'a'), (2, 'b')) TO STDOUT
----
COPY (UPDATE t SET v = v + 1 RETURNING *) TO STDOUT
----
COPY (DELETE FROM staging RETURNING *) TO STDOUT WITH CSV
----
COPY users FROM '/tmp/users.csv' WITH (FORMAT csv)
----
COPY users TO '/tmp/users.csv' CSV HEADER
----
COPY users FROM PROGRAM 'gunzip -c /data/users.csv.gz' WITH (FORMAT csv)
----
COPY users TO PROGRAM 'gzip > /data/users.csv.gz'
----
COPY public.orders (id, tenant_id, total) FROM STDIN WITH CSV HEADER DELIMITER ';' QUOTE '''' NULL ''
----
COPY orders TO STDOUT WITH BINARY
----
COPY orders FROM STDIN BINARY
----
COPY orders TO STDOUT WITH DELIMITER '|' NULL AS 'NA'
----
COPY orders FROM STDIN CSV FORCE NOT NULL a, b
----
COPY orders TO STDOUT CSV FORCE QUOTE a, b ESCAPE '\\'
----
COPY orders FROM STDIN WHERE tenant_id = 3
----
COPY orders (id, total) FROM STDIN WITH (FORMAT csv) WHERE total > 0
----
COPY "Mixed Case" ("Col A", "Col B") TO STDOUT WITH (FORMAT csv, HEADER false)
----
COPY msg.events_p7 ("offset", payload, created_at) FROM STDIN WITH (FORMAT binary)
----
COPY (SELECT tenant_id, count(*) FROM orders GROUP BY tenant_id) TO STDOUT WITH (FORMAT text)
----
COPY users (id) FROM stdin WITH (FORMAT csv, HEADER 1)
----
COPY big TO STDOUT (FORMAT csv, DELIMITER ',', HEADER, QUOTE '"', ESCAPE '"', ENCODING 'LATIN1')
----
COPY t FROM STDIN (FORMAT csv, FORCE_NULL *, FORCE_NOT_NULL *)
