-- jsonb operators
SELECT payload -> 'user' FROM events;
SELECT payload ->> 'type' FROM events;
SELECT payload -> 'items' -> 0 ->> 'sku' FROM events;
SELECT payload #> '{user,address,city}' FROM events;
SELECT payload #>> '{user,address,city}' FROM events;
SELECT payload #>> ARRAY['a', 'b'] FROM events;
SELECT * FROM events WHERE payload @> '{"type": "click"}';
SELECT * FROM events WHERE payload @> $1::jsonb;
SELECT * FROM events WHERE '{"a":1}'::jsonb <@ payload;
SELECT * FROM events WHERE payload ? 'user_id';
SELECT * FROM events WHERE payload ?| array['a', 'b'];
SELECT * FROM events WHERE payload ?& ARRAY['a', 'b'];
SELECT * FROM events WHERE payload @? '$.items[*] ? (@.price > 100)';
SELECT * FROM events WHERE payload @@ '$.items[*].price > 100';
SELECT payload || '{"seen": true}'::jsonb FROM events;
SELECT payload - 'secret', payload - ARRAY['a', 'b'], payload - 0, payload #- '{a,b}' FROM events;
SELECT '[1,2,3]'::jsonb -> -1, '{"a":{"b":1}}'::json -> 'a' ->> 'b';
SELECT (payload ->> 'amount')::numeric FROM events WHERE (payload ->> 'amount')::numeric > 10;
SELECT payload['user']['name'] FROM events;
SELECT payload['items'][0] FROM events WHERE payload['type'] = '"order"';
UPDATE events SET payload['status'] = '"archived"' WHERE id = $1;
SELECT count(*) FROM events WHERE payload ->> 'type' = $1 AND (payload -> 'meta' ->> 'v')::int >= 2;
SELECT data->'a'->>'b' AS ab, data->>'c' AS c FROM docs ORDER BY data->>'c' DESC;

-- JSON functions
SELECT json_build_object('id', id, 'email', email) FROM users;
SELECT jsonb_build_object('id', u.id, 'orders', (SELECT jsonb_agg(o) FROM orders o WHERE o.user_id = u.id)) FROM users u;
SELECT json_build_array(1, 'two', 3.0, NULL, true);
SELECT jsonb_build_array();
SELECT to_json(now()), to_jsonb(ROW(1, 'a')), row_to_json(u) FROM users u;
SELECT json_object('{a,1,b,2}'), json_object('{a,b}', '{1,2}');
SELECT jsonb_each(payload) FROM events;
SELECT key, value FROM jsonb_each_text('{"a":"x","b":"y"}');
SELECT * FROM jsonb_array_elements('[1,2,3]'::jsonb) WITH ORDINALITY AS e(value, idx);
SELECT jsonb_array_elements_text(payload -> 'tags') AS tag FROM events;
SELECT jsonb_object_keys(payload) FROM events;
SELECT jsonb_array_length(payload -> 'items') FROM events;
SELECT jsonb_typeof(payload -> 'x'), json_typeof('1'::json);
SELECT jsonb_set(payload, '{a,b}', '"x"', true), jsonb_insert(payload, '{items,0}', '{"new":1}'), jsonb_set_lax(payload, '{a}', NULL, true, 'delete_key') FROM events;
SELECT jsonb_strip_nulls(payload), jsonb_pretty(payload), json_strip_nulls(payload::json, true) FROM events;
SELECT jsonb_path_query(payload, '$.items[*] ? (@.qty > $min)', '{"min": 2}') FROM events;
SELECT jsonb_path_exists(payload, '$.a ? (@ like_regex "^x" flag "i")') FROM events;
SELECT jsonb_path_match(payload, 'exists($.items[*] ? (@.price >= 10))') FROM events;
SELECT jsonb_path_query_array(payload, '$.items[*].sku'), jsonb_path_query_first(payload, '$.items[0]') FROM events;
SELECT jsonb_path_query('{"a":[1,2,3,4,5]}', '$.a[*] ? (@ >= $min && @ <= $max)', '{"min":2, "max":4}');
SELECT jsonb_path_query_tz('["2015-08-01 12:00:00-05"]', '$[*] ? (@.datetime() < "2015-08-02".datetime())');
SELECT '$.a.b[*] ? (@.c == "x")'::jsonpath, 'strict $.a'::jsonpath, 'lax $.**{2 to last}'::jsonpath;
SELECT jsonb_path_query(payload, 'lax $.items[last].price.double()') FROM events;
SELECT json_populate_record(NULL::users, '{"id":1,"email":"a@b.c"}');
SELECT * FROM jsonb_populate_recordset(NULL::line_items, $1::jsonb);
SELECT * FROM jsonb_to_record('{"a":1,"b":[1,2],"c":{"d":"x"}}') AS x(a int, b int[], c jsonb);
SELECT jsonb_agg(DISTINCT tag ORDER BY tag) FROM tags;
SELECT json_agg(json_build_object('id', id, 'name', name) ORDER BY name) FILTER (WHERE active) FROM users;
SELECT jsonb_object_agg(k, v ORDER BY k) FROM kv;
SELECT json_object_agg_strict(k, v), jsonb_object_agg_unique(k, v) FROM kv;
SELECT array_to_json(ARRAY[1, 2, 3]), json_array_length('[1,2]');
SELECT jsonb_build_object('total', count(*), 'items', coalesce(jsonb_agg(t) FILTER (WHERE t.id IS NOT NULL), '[]'::jsonb)) FROM t;

-- SQL/JSON constructors
SELECT JSON_OBJECT('id': 1, 'name': 'x');
SELECT JSON_OBJECT('id' VALUE id, 'name' VALUE name) FROM users;
SELECT JSON_OBJECT(KEY 'a' VALUE 1, KEY 'b' VALUE NULL ABSENT ON NULL);
SELECT JSON_OBJECT('a' VALUE NULL NULL ON NULL WITH UNIQUE KEYS RETURNING jsonb);
SELECT JSON_OBJECT('a' : 1, 'a' : 2 WITHOUT UNIQUE KEYS RETURNING text);
SELECT JSON_OBJECT('data' VALUE '{"x":1}' FORMAT JSON);
SELECT JSON_OBJECT();
SELECT JSON_ARRAY(1, 'a', true, NULL);
SELECT JSON_ARRAY(1, NULL, 3 NULL ON NULL RETURNING jsonb);
SELECT JSON_ARRAY(1, NULL ABSENT ON NULL);
SELECT JSON_ARRAY(SELECT id FROM users ORDER BY id);
SELECT JSON_ARRAY(SELECT name FROM users RETURNING jsonb);
SELECT JSON_ARRAY('[1,2]' FORMAT JSON, '{}' FORMAT JSON ENCODING UTF8);
SELECT JSON_ARRAY();
SELECT JSON_OBJECTAGG(k VALUE v) FROM kv;
SELECT JSON_OBJECTAGG(k : v ABSENT ON NULL WITH UNIQUE KEYS RETURNING jsonb) FROM kv;
SELECT user_id, JSON_OBJECTAGG(key_name VALUE val NULL ON NULL) FROM user_attrs GROUP BY user_id;
SELECT JSON_ARRAYAGG(id) FROM users;
SELECT JSON_ARRAYAGG(name ORDER BY name DESC NULL ON NULL RETURNING jsonb) FROM users;
SELECT JSON_ARRAYAGG(status ABSENT ON NULL) FROM orders;
SELECT JSON_ARRAYAGG(x) FILTER (WHERE x > 0) OVER (PARTITION BY g) FROM t;
SELECT JSON('{"a":1}');
SELECT JSON('{"a":1,"a":2}' WITH UNIQUE KEYS);
SELECT JSON('[1]' WITHOUT UNIQUE KEYS);
SELECT JSON($1::text FORMAT JSON);
SELECT JSON_SCALAR(123.45), JSON_SCALAR('text'), JSON_SCALAR(now()), JSON_SCALAR(NULL);
SELECT JSON_SERIALIZE('{"a":1}');
SELECT JSON_SERIALIZE(payload RETURNING bytea) FROM events;
SELECT JSON_SERIALIZE(JSON_OBJECT('x': 1) RETURNING text FORMAT JSON);

-- IS JSON predicates
SELECT js IS JSON FROM docs;
SELECT js IS NOT JSON FROM docs;
SELECT js IS JSON VALUE, js IS JSON SCALAR, js IS JSON ARRAY, js IS JSON OBJECT FROM docs;
SELECT * FROM docs WHERE js IS JSON OBJECT WITH UNIQUE KEYS;
SELECT * FROM docs WHERE js IS JSON ARRAY WITHOUT UNIQUE KEYS;
SELECT * FROM docs WHERE js IS NOT JSON SCALAR;
SELECT '{"a":1,"a":2}' IS JSON WITH UNIQUE, '[]' IS JSON WITHOUT UNIQUE;

-- JSON_EXISTS / JSON_QUERY / JSON_VALUE
SELECT JSON_EXISTS(payload, '$.user') FROM events;
SELECT JSON_EXISTS(payload, 'strict $.items[*] ? (@.qty > $q)' PASSING 3 AS q) FROM events;
SELECT JSON_EXISTS(payload, '$.a' TRUE ON ERROR), JSON_EXISTS(payload, '$.b' UNKNOWN ON ERROR), JSON_EXISTS(payload, '$.c' ERROR ON ERROR) FROM events;
SELECT * FROM events WHERE JSON_EXISTS(payload, '$.tags[*] ? (@ == $t)' PASSING $1::text AS t FALSE ON ERROR);
SELECT JSON_QUERY(payload, '$.items') FROM events;
SELECT JSON_QUERY(payload, '$.items[*].sku' WITH WRAPPER) FROM events;
SELECT JSON_QUERY(payload, '$.items[*].sku' WITH CONDITIONAL ARRAY WRAPPER) FROM events;
SELECT JSON_QUERY(payload, '$.items[*]' RETURNING jsonb WITH UNCONDITIONAL WRAPPER) FROM events;
SELECT JSON_QUERY(payload, '$.items[0]' WITHOUT ARRAY WRAPPER) FROM events;
SELECT JSON_QUERY(payload, '$.name' RETURNING text KEEP QUOTES) FROM events;
SELECT JSON_QUERY(payload, '$.name' RETURNING text OMIT QUOTES ON SCALAR STRING) FROM events;
SELECT JSON_QUERY(payload, '$.missing' RETURNING jsonb EMPTY ARRAY ON EMPTY EMPTY OBJECT ON ERROR) FROM events;
SELECT JSON_QUERY(payload, '$.x' NULL ON EMPTY ERROR ON ERROR) FROM events;
SELECT JSON_QUERY(payload, '$.x' DEFAULT '[]' ON EMPTY) FROM events;
SELECT JSON_QUERY(jsonb '{"a":[1,2,3]}', 'lax $.a[$i]' PASSING 1 AS i);
SELECT JSON_QUERY(payload FORMAT JSON, '$' RETURNING bytea FORMAT JSON) FROM events;
SELECT JSON_VALUE(payload, '$.type') FROM events;
SELECT JSON_VALUE(payload, '$.amount' RETURNING numeric) FROM events;
SELECT JSON_VALUE(payload, '$.ts' RETURNING timestamptz NULL ON EMPTY NULL ON ERROR) FROM events;
SELECT JSON_VALUE(payload, '$.qty' RETURNING int DEFAULT 0 ON EMPTY DEFAULT -1 ON ERROR) FROM events;
SELECT JSON_VALUE(payload, '$.qty' RETURNING int ERROR ON EMPTY ERROR ON ERROR) FROM events;
SELECT JSON_VALUE(payload, '$.items[$idx].price' PASSING $1 AS idx RETURNING numeric(10, 2)) FROM events;
SELECT JSON_VALUE(jsonb '"2024-01-01"', '$' RETURNING date);
SELECT * FROM events WHERE JSON_VALUE(payload, '$.user.id' RETURNING bigint) = $1;
SELECT JSON_VALUE(payload, 'strict $.a' PASSING 'x' AS s, 2 AS n RETURNING varchar(20) DEFAULT 'none' ON EMPTY) FROM events;

-- JSON_TABLE
SELECT jt.* FROM my_films, JSON_TABLE (js, '$.favorites[*]' COLUMNS (
    id FOR ORDINALITY,
    kind text PATH '$.kind',
    title text PATH '$.films[*].title' WITH WRAPPER,
    director text PATH '$.films[*].director' WITH WRAPPER)) AS jt;
SELECT jt.* FROM my_films, JSON_TABLE (js, '$.favorites[*] ? (@.films[*].director == $filter)'
    PASSING 'Alfred Hitchcock' AS filter
    COLUMNS (
        id FOR ORDINALITY,
        kind text PATH '$.kind',
        title text FORMAT JSON PATH '$.films[*].title' OMIT QUOTES,
        director text PATH '$.films[*].director' KEEP QUOTES)) AS jt;
SELECT * FROM JSON_TABLE (
'{"favorites":
    {"movies":
      [{"name": "One", "director": "John Doe"},
       {"name": "Two", "director": "Don Joe"}],
     "books":
      [{"name": "Mystery", "authors": [{"name": "Brown Dan"}]},
       {"name": "Wonder", "authors": [{"name": "Jun Murakami"}, {"name":"Craig Doe"}]}]
}}'::json, '$.favorites[*]'
COLUMNS (
  user_id FOR ORDINALITY,
  NESTED '$.movies[*]'
    COLUMNS (
    movie_id FOR ORDINALITY,
    mname text PATH '$.name',
    director text),
  NESTED '$.books[*]'
    COLUMNS (
      book_id FOR ORDINALITY,
      bname text PATH '$.name',
      NESTED '$.authors[*]'
        COLUMNS (
          author_id FOR ORDINALITY,
          author_name text PATH '$.name'))));
SELECT * FROM JSON_TABLE(jsonb '[1, 2, "x"]', '$[*]' COLUMNS (v int PATH '$' NULL ON ERROR, ok boolean EXISTS PATH '$ ? (@ > 1)'));
SELECT jt.* FROM events e, JSON_TABLE(e.payload, '$.items[*]' AS items COLUMNS (sku text, qty int PATH '$.qty' DEFAULT 1 ON EMPTY, price numeric PATH '$.price' ERROR ON ERROR, NESTED PATH '$.options[*]' AS opts COLUMNS (opt text PATH '$'))) jt WHERE e.id = $1;
SELECT * FROM JSON_TABLE($1::jsonb, '$' COLUMNS (a int, b text, c jsonb FORMAT JSON PATH '$.c' WITHOUT WRAPPER) ERROR ON ERROR) AS t;
SELECT * FROM JSON_TABLE('{"a":[1,2]}'::jsonb, 'lax $.a[*]' COLUMNS (n int PATH '$', has_a boolean EXISTS PATH '$.a' FALSE ON ERROR) EMPTY ARRAY ON ERROR);
SELECT u.id, j.* FROM users u CROSS JOIN LATERAL JSON_TABLE(u.preferences, '$.notifications[*]' COLUMNS (channel text PATH '$.channel', enabled boolean PATH '$.enabled')) AS j;
