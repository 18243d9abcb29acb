CREATE TABLE IF NOT EXISTS events_p0 (
    "offset" bigint NOT NULL UNIQUE,
    payload bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
)
----
CREATE TABLE IF NOT EXISTS msg.events_p7 (
    "offset" bigint NOT NULL UNIQUE,
    payload bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
)
----
CREATE TABLE IF NOT EXISTS msg.events_p15 (
    "offset" bigint NOT NULL UNIQUE,
    payload bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
)
----
CREATE TABLE IF NOT EXISTS msg.events_p29 (
    "offset" bigint NOT NULL UNIQUE,
    payload bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
)
----
CREATE TABLE IF NOT EXISTS log_counters (
    partition_id integer PRIMARY KEY CHECK (partition_id BETWEEN 0 AND 29),
    next_offset bigint NOT NULL DEFAULT 0
)
----
CREATE TABLE IF NOT EXISTS consumer_offsets (
    group_id text NOT NULL,
    partition_id integer NOT NULL,
    committed_offset bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, partition_id)
)
----
CREATE TABLE IF NOT EXISTS queue (id bigserial PRIMARY KEY, topic_id int NOT NULL, payload bytea NOT NULL, enqueued_at timestamptz NOT NULL DEFAULT now(), attempts int NOT NULL DEFAULT 0)
----
CREATE TABLE IF NOT EXISTS archive (LIKE queue INCLUDING DEFAULTS, processed_at timestamptz NOT NULL DEFAULT now())
----
INSERT INTO log_counters (partition_id, next_offset) SELECT g, 0 FROM generate_series(0, 29) AS g ON CONFLICT (partition_id) DO NOTHING
----
UPDATE log_counters SET next_offset = next_offset + $2 WHERE partition_id = 0 RETURNING next_offset - $2 AS first_offset
----
UPDATE log_counters SET next_offset = next_offset + $2 WHERE partition_id = 3 RETURNING next_offset - $2 AS first_offset
----
UPDATE log_counters SET next_offset = next_offset + $2 WHERE partition_id = 11 RETURNING next_offset - $2 AS first_offset
----
UPDATE log_counters SET next_offset = next_offset + $2 WHERE partition_id = 22 RETURNING next_offset - $2 AS first_offset
----
UPDATE log_counters SET next_offset = next_offset + $2 WHERE partition_id = $1 RETURNING next_offset - $2 AS first_offset
----
UPDATE log_counters SET next_offset = next_offset + cardinality($2::bytea[]) WHERE partition_id = $1::int RETURNING next_offset
----
UPDATE msg.log_counters AS c SET next_offset = c.next_offset + 500 WHERE c.partition_id = 17 RETURNING c.next_offset - 500, c.next_offset
----
UPDATE log_counters SET next_offset = next_offset + 1 WHERE partition_id = $1 RETURNING next_offset - 1
----
INSERT INTO events_p0 ("offset", payload)
SELECT $1::bigint + u.ord - 1, u.payload
FROM unnest($2::bytea[]) WITH ORDINALITY AS u(payload, ord)
----
INSERT INTO events_p4 ("offset", payload)
SELECT $1::bigint + u.ord - 1, u.payload
FROM unnest($2::bytea[]) WITH ORDINALITY AS u(payload, ord)
----
INSERT INTO msg.events_p7 ("offset", payload)
SELECT $1::bigint + u.ord - 1, u.payload
FROM unnest($2::bytea[]) WITH ORDINALITY AS u(payload, ord)
----
INSERT INTO events_p13 ("offset", payload)
SELECT $1::bigint + u.ord - 1, u.payload
FROM unnest($2::bytea[]) WITH ORDINALITY AS u(payload, ord)
----
INSERT INTO msg.events_p19 ("offset", payload)
SELECT $1::bigint + u.ord - 1, u.payload
FROM unnest($2::bytea[]) WITH ORDINALITY AS u(payload, ord)
----
INSERT INTO events_p28 ("offset", payload)
SELECT $1::bigint + u.ord - 1, u.payload
FROM unnest($2::bytea[]) WITH ORDINALITY AS u(payload, ord)
----
INSERT INTO events_p9 ("offset", payload, created_at)
SELECT $1 + ord - 1, p, now() FROM unnest($2::bytea[]) WITH ORDINALITY t(p, ord)
RETURNING "offset"
----
INSERT INTO msg.events_p21 ("offset", payload, created_at)
SELECT base.first + x.i - 1, x.body, clock_timestamp()
FROM (SELECT $1::bigint AS first) base, unnest($2::bytea[]) WITH ORDINALITY AS x(body, i)
ON CONFLICT ("offset") DO NOTHING
----
WITH reserved AS (
    UPDATE log_counters SET next_offset = next_offset + cardinality($2::bytea[])
    WHERE partition_id = 5
    RETURNING next_offset - cardinality($2::bytea[]) AS first_offset
)
INSERT INTO events_p5 ("offset", payload)
SELECT r.first_offset + u.ord - 1, u.payload
FROM reserved r, unnest($2::bytea[]) WITH ORDINALITY AS u(payload, ord)
RETURNING "offset"
----
WITH reserved AS (
    UPDATE msg.log_counters SET next_offset = next_offset + $3 WHERE partition_id = $1 RETURNING next_offset - $3 AS start
)
INSERT INTO msg.events_p26 ("offset", payload) SELECT start + n - 1, b FROM reserved, unnest($2::bytea[]) WITH ORDINALITY AS t(b, n)
----
INSERT INTO events_p2 ("offset", payload) VALUES ($1, $2), ($1 + 1, $3), ($1 + 2, $4)
----
INSERT INTO events_p16 ("offset", payload) VALUES ($1, $2), ($1 + 1, $3), ($1 + 2, $4)
----
INSERT INTO events_p27 ("offset", payload) VALUES ($1, $2), ($1 + 1, $3), ($1 + 2, $4)
----
INSERT INTO events_p1 ("offset", payload) VALUES (0, '\x68656c6c6f'::bytea)
----
INSERT INTO events_p8 ("offset", payload, created_at) VALUES (1024, decode('deadbeef', 'hex'), '2024-06-01T12:00:00Z')
----
SELECT committed_offset FROM consumer_offsets WHERE group_id = 'billing' AND partition_id = 0 FOR UPDATE
----
SELECT committed_offset FROM consumer_offsets WHERE group_id = 'analytics' AND partition_id = 12 FOR UPDATE
----
SELECT committed_offset FROM consumer_offsets WHERE group_id = $1 AND partition_id = 29 FOR UPDATE
----
SELECT committed_offset FROM consumer_offsets WHERE group_id = $1 AND partition_id = $2 FOR UPDATE
----
SELECT committed_offset FROM consumer_offsets WHERE group_id = $1 AND partition_id = $2 FOR NO KEY UPDATE NOWAIT
----
SELECT partition_id, committed_offset FROM consumer_offsets WHERE group_id = $1 AND partition_id = ANY ($2::int[]) ORDER BY partition_id FOR UPDATE SKIP LOCKED
----
SELECT co.committed_offset, lc.next_offset FROM consumer_offsets co JOIN log_counters lc USING (partition_id) WHERE co.group_id = $1 AND co.partition_id = $2 FOR UPDATE OF co
----
SELECT * FROM msg.consumer_offsets WHERE group_id = 'search-indexer' AND partition_id IN (3, 4, 5) FOR UPDATE
----
UPDATE consumer_offsets SET committed_offset = $3, updated_at = now() WHERE group_id = $1 AND partition_id = $2
----
UPDATE consumer_offsets SET committed_offset = GREATEST(committed_offset, $3::bigint) WHERE group_id = $1 AND partition_id = $2::int RETURNING committed_offset
----
UPDATE consumer_offsets SET committed_offset = committed_offset + 100 WHERE group_id = 'billing' AND partition_id = 6 RETURNING committed_offset - 100 AS from_offset, committed_offset AS to_offset
----
INSERT INTO consumer_offsets (group_id, partition_id, committed_offset) VALUES ($1, $2, $3) ON CONFLICT (group_id, partition_id) DO UPDATE SET committed_offset = EXCLUDED.committed_offset, updated_at = now() WHERE consumer_offsets.committed_offset < EXCLUDED.committed_offset
----
INSERT INTO consumer_offsets (group_id, partition_id) SELECT 'new-group', g FROM generate_series(0, 29) g ON CONFLICT DO NOTHING
----
INSERT INTO msg.consumer_offsets AS co (group_id, partition_id, committed_offset) VALUES ($1, $2, 0) ON CONFLICT ON CONSTRAINT consumer_offsets_pkey DO NOTHING RETURNING co.committed_offset
----
SELECT "offset", payload, created_at FROM events_p0 WHERE "offset" BETWEEN $1 AND $2 ORDER BY "offset"
----
SELECT "offset", payload, created_at FROM events_p3 WHERE "offset" BETWEEN $1 AND $2 ORDER BY "offset"
----
SELECT "offset", payload, created_at FROM msg.events_p7 WHERE "offset" BETWEEN $1 AND $2 ORDER BY "offset"
----
SELECT "offset", payload, created_at FROM events_p10 WHERE "offset" BETWEEN $1 AND $2 ORDER BY "offset"
----
SELECT "offset", payload, created_at FROM msg.events_p14 WHERE "offset" BETWEEN $1 AND $2 ORDER BY "offset"
----
SELECT "offset", payload, created_at FROM events_p18 WHERE "offset" BETWEEN $1 AND $2 ORDER BY "offset"
----
SELECT "offset", payload, created_at FROM events_p23 WHERE "offset" BETWEEN $1 AND $2 ORDER BY "offset"
----
SELECT "offset", payload, created_at FROM msg.events_p29 WHERE "offset" BETWEEN $1 AND $2 ORDER BY "offset"
----
SELECT "offset", payload FROM events_p6 WHERE "offset" > $1 ORDER BY "offset" LIMIT $2
----
SELECT "offset", payload FROM events_p6 WHERE "offset" >= $1::bigint AND "offset" < $1::bigint + $2::int ORDER BY "offset" ASC
----
SELECT "offset", length(payload) AS size FROM events_p20 WHERE "offset" BETWEEN 5000 AND 5999 ORDER BY "offset" DESC LIMIT 10
----
SELECT max("offset") FROM events_p11
----
SELECT coalesce(max("offset") + 1, 0) AS high_watermark FROM msg.events_p11
----
SELECT min("offset"), max("offset"), count(*) FROM events_p24 WHERE created_at >= now() - interval '1 hour'
----
SELECT e."offset", e.payload FROM events_p2 e WHERE e."offset" BETWEEN $1 AND $2 AND e.created_at > $3::timestamptz ORDER BY e."offset"
----
SELECT "offset", payload FROM events_p12 WHERE "offset" > (SELECT committed_offset FROM consumer_offsets WHERE group_id = $1 AND partition_id = 12) ORDER BY "offset" LIMIT 500
----
WITH cur AS (
    SELECT committed_offset FROM consumer_offsets WHERE group_id = $1 AND partition_id = 8 FOR UPDATE
), batch AS (
    SELECT "offset", payload FROM events_p8, cur WHERE "offset" > cur.committed_offset ORDER BY "offset" LIMIT 100
)
SELECT * FROM batch
----
SELECT lc.partition_id, lc.next_offset - co.committed_offset AS lag
FROM log_counters lc LEFT JOIN consumer_offsets co ON co.partition_id = lc.partition_id AND co.group_id = $1
ORDER BY lag DESC NULLS FIRST
----
SELECT partition_id, next_offset FROM log_counters WHERE partition_id BETWEEN 0 AND 29 ORDER BY partition_id
----
SELECT next_offset FROM log_counters WHERE partition_id = $1 FOR SHARE
----
DELETE FROM events_p4 WHERE "offset" < $1
----
DELETE FROM msg.events_p25 WHERE created_at < now() - interval '7 days' RETURNING "offset"
----
DELETE FROM events_p13 WHERE "offset" < (SELECT min(committed_offset) FROM consumer_offsets WHERE partition_id = 13)
----
SELECT "offset", payload FROM events_p0 WHERE "offset" = ANY ($1::bigint[]) ORDER BY "offset"
----
SELECT "offset", payload FROM events_p1 UNION ALL SELECT "offset", payload FROM events_p2 ORDER BY "offset" LIMIT 100
----
COPY (SELECT "offset", payload FROM events_p15 WHERE "offset" BETWEEN 0 AND 99999 ORDER BY "offset") TO STDOUT WITH (FORMAT binary)
----
COPY msg.events_p17 ("offset", payload) FROM STDIN WITH (FORMAT binary)
----
SELECT id, payload FROM queue WHERE topic_id = $1 ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1
----
SELECT id, payload, attempts FROM queue ORDER BY enqueued_at LIMIT 1 FOR UPDATE SKIP LOCKED
----
SELECT * FROM msg.queue WHERE topic_id IN (1, 2, 3) AND attempts < 5 ORDER BY id FOR NO KEY UPDATE SKIP LOCKED LIMIT 10
----
DELETE FROM queue WHERE id = $1 RETURNING id, topic_id, payload, enqueued_at
----
DELETE FROM queue
WHERE id = (SELECT id FROM queue WHERE topic_id = 4 ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1)
RETURNING *
----
WITH job AS (
    DELETE FROM queue WHERE id = (SELECT id FROM queue ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING *
)
INSERT INTO archive (id, topic_id, payload, enqueued_at, attempts) SELECT id, topic_id, payload, enqueued_at, attempts FROM job RETURNING id
----
INSERT INTO archive (id, topic_id, payload, enqueued_at, attempts, processed_at) VALUES ($1, $2, $3, $4, $5, now())
----
INSERT INTO msg.archive SELECT q.*, now() FROM msg.queue q WHERE q.id = ANY ($1::bigint[])
----
INSERT INTO queue (topic_id, payload) VALUES ($1, $2) RETURNING id
----
INSERT INTO queue (topic_id, payload) SELECT $1, p FROM unnest($2::bytea[]) AS p
----
UPDATE queue SET attempts = attempts + 1 WHERE id = $1 RETURNING attempts
----
UPDATE queue SET attempts = attempts + 1, enqueued_at = now() + (interval '1 second' * power(2, attempts)) WHERE id = $1 AND attempts < 10
----
SELECT count(*) FROM queue WHERE topic_id = $1::int
----
SELECT topic_id, count(*), min(enqueued_at) FROM queue GROUP BY topic_id HAVING count(*) > 1000 ORDER BY 2 DESC
----
BEGIN; SELECT id, payload FROM queue ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1; DELETE FROM queue WHERE id = $1; COMMIT
----
BEGIN; SELECT committed_offset FROM consumer_offsets WHERE group_id = $1 AND partition_id = $2 FOR UPDATE; UPDATE consumer_offsets SET committed_offset = $3 WHERE group_id = $1 AND partition_id = $2; COMMIT
----
SELECT * FROM consumer_offsets WHERE partition_id = 3 OR partition_id = 4 OR partition_id = 5
----
SELECT * FROM consumer_offsets WHERE partition_id = $1::int AND group_id = $2::text
----
SELECT * FROM log_counters WHERE partition_id = '7'::integer
----
SELECT * FROM log_counters WHERE partition_id IN ($1, $2, $3, $4)
----
SELECT * FROM queue WHERE topic_id = CAST($1 AS int) LIMIT 1 FOR UPDATE SKIP LOCKED
----
UPDATE log_counters SET next_offset = 0 WHERE partition_id = ANY ($1::int[])
----
TRUNCATE events_p3, events_p4, msg.events_p5
----
ANALYZE events_p9, events_p10, log_counters, consumer_offsets
----
LOCK TABLE log_counters IN ROW EXCLUSIVE MODE
----
NOTIFY events_p14_new, '4096'
----
LISTEN events_p14_new
----
PREPARE reserve (int, int) AS UPDATE log_counters SET next_offset = next_offset + $2 WHERE partition_id = $1 RETURNING next_offset - $2
----
EXECUTE reserve(22, 64)
----
PREPARE read_range (bigint, bigint) AS SELECT "offset", payload FROM events_p22 WHERE "offset" BETWEEN $1 AND $2 ORDER BY "offset"
