SELECT * FROM people WHERE last_name = 'O''Hara'
----
SELECT id FROM tags WHERE label = E'caf\u00e9' AND kind = 'topic'
----
SELECT count(*) FROM users WHERE lower(email) = lower('Ada@Example.org') AND handle = 'ada'
----
UPDATE bookings SET span = '[2025-01-01,2025-02-01)'::daterange WHERE id = 9 AND ended IS NULL
----
UPDATE shifts SET hours = int4range(8, 16, '[)'), note = NULL WHERE worker IS NOT NULL AND hours IS NULL RETURNING id
----
UPDATE prices SET valid = numrange(1.5, 2.5, '(]') WHERE valid @> 2.0::numeric AND retired_at IS NULL
----
INSERT INTO pins (id, at) VALUES (1, '(0,0)'), (2, '(1.5,-2)'), (3, point(3, 4)), (4, point '(5,6)'), (5, '(7e1,8)'::point)
----
INSERT INTO shapes (id, box, circle, path) VALUES (1, box '((0,0),(1,1))', circle '<(0,0),2>', path '[(0,0),(1,1),(2,0)]'), (2, NULL, NULL, NULL)
----
WITH RECURSIVE chain(id, parent, depth) AS (SELECT id, parent, 0 FROM nodes WHERE parent IS NULL UNION ALL SELECT n.id, n.parent, c.depth + 1 FROM nodes n JOIN chain c ON n.parent = c.id) SELECT id, depth, rank() OVER (ORDER BY depth), gen_random_uuid() FROM chain
----
WITH t AS (SELECT uuid_generate_v4() AS u, ntile(4) OVER (ORDER BY x) AS q, first_value(x) OVER (PARTITION BY g ORDER BY x RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE TIES) AS f FROM s) SELECT u::text, q, f FROM t WHERE q > 1
----
WITH a AS MATERIALIZED (SELECT id, sum(v) OVER w AS running FROM m WINDOW w AS (ORDER BY id ROWS 2 PRECEDING)), b AS NOT MATERIALIZED (SELECT * FROM a WHERE running > 10) SELECT uuidv7(), * FROM b
----
SELECT a.x, b.y, c.z, d.w, e.v FROM a LEFT JOIN b ON b.a_id = a.id LEFT OUTER JOIN c USING (b_id) INNER JOIN d ON d.id = c.d_id RIGHT JOIN e ON e.id = d.e_id FULL JOIN f ON f.id = e.f_id
----
SELECT * FROM t1 NATURAL JOIN t2 CROSS JOIN t3 LEFT JOIN LATERAL (SELECT max(v) AS m FROM t4 WHERE t4.k = t1.k) l ON true JOIN t5 AS five (p, q) ON five.p = t3.p
----
CREATE TABLE accounts_ledger (id bigserial PRIMARY KEY, account_id bigint NOT NULL REFERENCES accounts ON DELETE RESTRICT, amount numeric(14, 2) NOT NULL CHECK (amount <> 0), kind text NOT NULL CHECK (kind IN ('debit', 'credit')), memo text, UNIQUE (account_id, id))
----
CREATE UNLOGGED TABLE IF NOT EXISTS public.audit (at timestamptz NOT NULL DEFAULT clock_timestamp(), who name NOT NULL, what jsonb, CONSTRAINT audit_pk PRIMARY KEY (at, who) WITH (fillfactor = 90), CONSTRAINT audit_what_ck CHECK (what IS NULL OR jsonb_typeof(what) = 'object') NOT VALID)
----
CREATE TEMP TABLE scratch (a int NOT NULL CONSTRAINT a_pos CHECK (a > 0), b int REFERENCES other (b) MATCH SIMPLE ON UPDATE CASCADE DEFERRABLE, c text NULL, PRIMARY KEY (a) INCLUDE (b)) ON COMMIT DROP
----
SELECT * FROM (VALUES (B'0101', X'FF'), (B'1', X'0'), (B'', X'')) AS v(b, h) WHERE b <> B'1111'::bit varying
----
SELECT B'1010' | B'0101', X'F0' # X'0F', ~ B'1', B'1' || B'0', get_bit(B'1010', 2)
----
SELECT * FROM items WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20) AND state NOT IN ('a', 'b')
----
DELETE FROM events WHERE kind = ANY ('{1,2,3}'::int[]) AND id NOT IN (100, 200, 300, -400, 5000000000)
