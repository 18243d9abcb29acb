SELECT data->'user' FROM events
----
SELECT data->>'email' AS email FROM users_json WHERE data->>'tenant_id' = '5'
----
SELECT data->'items'->0->>'sku' FROM orders_json
----
SELECT data #> '{address,city}', data #>> '{address,zip}' FROM customers_json
----
SELECT data #> ARRAY['a', 'b', '0'] FROM docs
----
SELECT * FROM products WHERE attrs @> '{"color": "red"}'
----
SELECT * FROM products WHERE '{"size": "L"}'::jsonb <@ attrs
----
SELECT * FROM products WHERE attrs ? 'discount'
----
SELECT * FROM products WHERE attrs ?| array['sale', 'clearance']
----
SELECT * FROM products WHERE attrs ?& ARRAY['weight', 'height', 'width']
----
SELECT * FROM events WHERE payload @? '$.tags[*] ? (@ == "urgent")'
----
SELECT * FROM events WHERE payload @@ '$.priority > 3'
----
SELECT jsonb_path_query(doc, '$.store.book[*] ? (@.price < 10).title') FROM library
----
SELECT jsonb_path_exists(doc, '$.a ? (@ > $min)', '{"min": 2}') FROM t
----
SELECT data || '{"updated": true}'::jsonb, data - 'password', data - ARRAY['a', 'b'], data #- '{nested,key}' FROM accounts
----
SELECT data->'a' ? 'b', (data->'n')::int FROM t
----
SELECT jsonb_set(settings, '{theme}', '"dark"', true) FROM user_settings WHERE user_id = $1
----
UPDATE user_settings SET settings = settings || jsonb_build_object('locale', $2::text) WHERE user_id = $1
----
SELECT jsonb_build_object('id', id, 'name', name, 'tags', to_jsonb(tags)) FROM items
----
SELECT json_build_array(1, 'two', 3.0, null, true), jsonb_build_array()
----
SELECT json_agg(t ORDER BY t.id) FROM (SELECT id, name FROM users LIMIT 5) t
----
SELECT jsonb_object_agg(key, value) FROM settings WHERE scope = 'global'
----
SELECT key, value FROM jsonb_each('{"a":1,"b":2}'::jsonb)
----
SELECT * FROM jsonb_array_elements(data->'items') WITH ORDINALITY AS e(item, idx)
----
SELECT * FROM jsonb_to_recordset('[{"a":1,"b":"x"},{"a":2,"b":"y"}]') AS x(a int, b text)
----
SELECT row_to_json(u), to_json(u.name), array_to_json(ARRAY[1, 2]) FROM users u
----
SELECT JSON_OBJECT('a': 1, 'b': 'two')
----
SELECT JSON_OBJECT('a' VALUE 1, 'b' VALUE NULL ABSENT ON NULL)
----
SELECT JSON_OBJECT(KEY 'id' VALUE id, KEY 'email' VALUE email NULL ON NULL WITH UNIQUE KEYS RETURNING jsonb) FROM users
----
SELECT JSON_OBJECT('k': v WITHOUT UNIQUE KEYS RETURNING text) FROM kv
----
SELECT JSON_OBJECT()
----
SELECT JSON_OBJECT('data': payload FORMAT JSON) FROM raw_events
----
SELECT JSON_ARRAY(1, true, 'x', NULL)
----
SELECT JSON_ARRAY(1, NULL, 3 NULL ON NULL RETURNING jsonb)
----
SELECT JSON_ARRAY(SELECT id FROM users ORDER BY id)
----
SELECT JSON_ARRAY(SELECT name FROM tags WHERE post_id = 3 RETURNING json)
----
SELECT JSON_ARRAY()
----
SELECT JSON_ARRAYAGG(name ORDER BY name) FROM users
----
SELECT JSON_ARRAYAGG(score ORDER BY score DESC ABSENT ON NULL RETURNING jsonb) FROM results
----
SELECT dept, JSON_ARRAYAGG(emp NULL ON NULL) FILTER (WHERE active) FROM staff GROUP BY dept
----
SELECT JSON_OBJECTAGG(k VALUE v) FROM pairs
----
SELECT JSON_OBJECTAGG(k : v ABSENT ON NULL WITH UNIQUE KEYS RETURNING jsonb) FROM pairs
----
SELECT grp, JSON_OBJECTAGG(name VALUE qty) OVER (PARTITION BY grp) FROM stock
----
SELECT js IS JSON, js IS NOT JSON, js IS JSON VALUE, js IS JSON SCALAR, js IS JSON ARRAY, js IS JSON OBJECT FROM samples
----
SELECT js IS JSON OBJECT WITH UNIQUE KEYS, js IS JSON WITHOUT UNIQUE KEYS, js IS JSON ARRAY WITH UNIQUE FROM samples
----
SELECT * FROM inbox WHERE body::text IS JSON OBJECT
----
SELECT JSON_QUERY(jsonb '{"a":[1,2,3]}', '$.a')
----
SELECT JSON_QUERY(doc, '$.items[*]' WITH WRAPPER) FROM t
----
SELECT JSON_QUERY(doc, '$.items[*]' RETURNING text WITH CONDITIONAL ARRAY WRAPPER) FROM t
----
SELECT JSON_QUERY(doc, '$.name' WITHOUT WRAPPER OMIT QUOTES) FROM t
----
SELECT JSON_QUERY(doc, '$.name' KEEP QUOTES ON SCALAR STRING EMPTY ARRAY ON EMPTY ERROR ON ERROR) FROM t
----
SELECT JSON_QUERY(doc, '$.x ? (@ > $lim)' PASSING 10 AS lim RETURNING jsonb NULL ON EMPTY EMPTY OBJECT ON ERROR) FROM t
----
SELECT JSON_VALUE(jsonb '"123.45"', '$' RETURNING float)
----
SELECT JSON_VALUE(doc, '$.price' RETURNING numeric(10,2) DEFAULT 0 ON EMPTY DEFAULT -1 ON ERROR) FROM t
----
SELECT JSON_VALUE(doc, '$.user.id' RETURNING int ERROR ON ERROR) AS uid FROM t WHERE JSON_VALUE(doc, '$.tenant') = $1
----
SELECT JSON_VALUE(doc, 'strict $.a[$i]' PASSING 2 AS i, 'x' AS unused NULL ON EMPTY) FROM t
----
SELECT JSON_EXISTS(jsonb '{"key1": [1,2,3]}', 'strict $.key1[*] ? (@ > 2)')
----
SELECT * FROM t WHERE JSON_EXISTS(doc, '$.tags[*] ? (@ == $tag)' PASSING $1::text AS tag)
----
SELECT JSON_EXISTS(doc, 'lax $.a' TRUE ON ERROR), JSON_EXISTS(doc, '$.b' UNKNOWN ON ERROR), JSON_EXISTS(doc, '$.c' FALSE ON ERROR) FROM t
----
SELECT JSON('{"a": 1}'), JSON('[1]' WITH UNIQUE KEYS), JSON_SCALAR(42), JSON_SCALAR('text'), JSON_SERIALIZE('{"a":1}' RETURNING bytea)
----
SELECT * FROM JSON_TABLE(
  jsonb '[{"a":1,"b":"x"},{"a":2,"b":"y"}]', '$[*]'
  COLUMNS (a int PATH '$.a', b text PATH '$.b')
) AS jt
----
SELECT jt.* FROM orders o, JSON_TABLE(o.doc, '$.lines[*]' COLUMNS (
  line_no FOR ORDINALITY,
  sku text PATH '$.sku',
  qty int PATH '$.qty' DEFAULT 1 ON EMPTY,
  price numeric PATH '$.price' NULL ON ERROR,
  has_discount boolean EXISTS PATH '$.discount'
)) AS jt WHERE o.tenant_id = 4
----
SELECT * FROM JSON_TABLE(
  '{"favorites":[{"movies":[{"name":"One","director":"A"},{"name":"Two","director":"B"}],"books":[{"name":"Three"}]}]}'::json, '$.favorites[*]'
  COLUMNS (
    user_id FOR ORDINALITY,
    NESTED '$.movies[*]' COLUMNS (movie_id FOR ORDINALITY, mname text PATH '$.name', director text),
    NESTED PATH '$.books[*]' AS books COLUMNS (book_id FOR ORDINALITY, bname text PATH '$.name')
  )
) AS jt
----
SELECT * FROM JSON_TABLE(doc, '$.a' AS root PASSING 3 AS n COLUMNS (v jsonb FORMAT JSON PATH '$.v' WITH WRAPPER, s text PATH '$.s' OMIT QUOTES) ERROR ON ERROR) jt
----
SELECT * FROM JSON_TABLE(doc, 'lax $[*]' COLUMNS (id int, vals text[] PATH '$.vals' KEEP QUOTES) EMPTY ON ERROR) AS t2
----
SELECT * FROM users u LEFT JOIN LATERAL JSON_TABLE(u.prefs, '$.notify[*]' COLUMNS (channel text PATH '$.ch', enabled bool PATH '$.on')) n ON true
----
SELECT '{"a":{"b":{"c":1}}}'::jsonb -> 'a' -> 'b' ->> 'c'
----
SELECT payload->'meta'->>'trace_id' AS trace, payload #>> '{meta,span}' AS span FROM events_p3 WHERE "offset" > $1
----
SELECT * FROM tenants WHERE config->>'region' = 'eu-west-1' AND (config->'limits'->>'max_users')::int > 100
----
SELECT id FROM docs WHERE data @> jsonb_build_object('owner_id', $1::bigint)
----
SELECT jsonb_pretty(data), jsonb_typeof(data->'x'), jsonb_array_length(data->'arr'), jsonb_strip_nulls(data) FROM docs
----
SELECT data['name'], data['address']['city'], arr_json[0] FROM jdocs
----
UPDATE jdocs SET data['status'] = '"archived"', data['counts']['views'] = to_jsonb(42) WHERE id = 1
----
SELECT jsonb_path_query_array(doc, '$.items[*] ? (@.qty >= 2) .sku'), jsonb_path_query_first(doc, '$.items[0]') FROM t
----
SELECT * FROM t WHERE doc @? '$.** ? (@.type() == "number")'
----
SELECT * FROM t WHERE doc @@ 'exists($.a) && $.b like_regex "^x" flag "i"'
----
SELECT jsonb_insert(data, '{arr, 0}', '"first"'), jsonb_set_lax(data, '{k}', NULL, true, 'delete_key') FROM t
----
SELECT json_object_keys(data::json), json_extract_path_text(data::json, 'a', 'b') FROM t
----
SELECT JSON_OBJECT('id': t.id, 'children': (SELECT JSON_ARRAYAGG(JSON_OBJECT('id': c.id) RETURNING jsonb) FROM children c WHERE c.parent_id = t.id)) FROM parents t
----
SELECT to_jsonb(r) - 'secret' FROM (SELECT * FROM accounts WHERE id = $1) r
----
INSERT INTO events_json (tenant_id, body) VALUES ($1, $2::jsonb) RETURNING body->>'id'
----
SELECT jsonb_agg(DISTINCT elem) FROM t, jsonb_array_elements_text(t.tags) AS elem
