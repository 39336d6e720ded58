-- Basic selects
SELECT * FROM users;
SELECT id, email FROM users WHERE id = 1;
SELECT id, email FROM users WHERE id = $1;
SELECT u.id, u.email AS address FROM users u WHERE u.active ORDER BY u.id;
SELECT count(*) FROM orders;
SELECT count(DISTINCT user_id) FROM orders WHERE status = 'paid';
SELECT DISTINCT status FROM orders;
SELECT DISTINCT ON (user_id) user_id, id, created_at FROM orders ORDER BY user_id, created_at DESC;
SELECT DISTINCT ON (a, b) a, b, c FROM t ORDER BY a, b, c DESC NULLS LAST;
SELECT ALL a FROM t;
SELECT * FROM ONLY cities;
SELECT * FROM cities*;
SELECT name, population FROM cities WHERE population > 1e6 ORDER BY population DESC LIMIT 10;
SELECT * FROM orders ORDER BY created_at DESC LIMIT 20 OFFSET 40;
SELECT * FROM orders ORDER BY created_at DESC OFFSET 40 ROWS FETCH FIRST 20 ROWS ONLY;
SELECT * FROM orders ORDER BY total_cents DESC FETCH FIRST 5 ROWS WITH TIES;
SELECT * FROM orders ORDER BY total_cents DESC FETCH NEXT ROW ONLY;
SELECT * FROM orders ORDER BY total_cents DESC OFFSET 1 ROW FETCH NEXT 3 ROWS WITH TIES;
SELECT * FROM t LIMIT ALL;
SELECT * FROM t LIMIT NULL OFFSET 0;
SELECT * FROM t LIMIT $1 OFFSET $2;
SELECT * FROM t ORDER BY a ASC NULLS FIRST, b DESC NULLS LAST, c;
SELECT * FROM t ORDER BY a USING <, b USING > NULLS FIRST;
SELECT * FROM t ORDER BY 1, 2 DESC;
SELECT a, b FROM t ORDER BY a + b, lower(b) COLLATE "C";

-- Joins
SELECT * FROM users u INNER JOIN orders o ON o.user_id = u.id;
SELECT * FROM users u JOIN orders o ON o.user_id = u.id AND o.status = 'paid';
SELECT u.id, o.id FROM users u LEFT JOIN orders o ON o.user_id = u.id;
SELECT u.id, o.id FROM users u LEFT OUTER JOIN orders o ON o.user_id = u.id WHERE o.id IS NULL;
SELECT * FROM orders o RIGHT JOIN users u ON u.id = o.user_id;
SELECT * FROM orders o RIGHT OUTER JOIN users u ON u.id = o.user_id;
SELECT * FROM a FULL JOIN b ON a.id = b.id;
SELECT coalesce(a.k, b.k) AS k, a.v, b.v FROM a FULL OUTER JOIN b ON a.k = b.k;
SELECT * FROM colors CROSS JOIN sizes;
SELECT * FROM colors, sizes;
SELECT * FROM employees NATURAL JOIN departments;
SELECT * FROM employees NATURAL LEFT JOIN departments;
SELECT * FROM t1 NATURAL FULL JOIN t2;
SELECT * FROM t1 NATURAL RIGHT OUTER JOIN t2;
SELECT * FROM t1 JOIN t2 USING (id);
SELECT * FROM t1 JOIN t2 USING (id, tenant_id);
SELECT j.id, t1.a, t2.b FROM t1 JOIN t2 USING (id) AS j;
SELECT * FROM t1 LEFT JOIN t2 USING (id) AS j WHERE j.id > 10;
SELECT * FROM t1 INNER JOIN t2 ON t1.a = t2.a INNER JOIN t3 ON t2.b = t3.b LEFT JOIN t4 ON t3.c = t4.c;
SELECT * FROM (t1 JOIN t2 ON t1.a = t2.a) JOIN t3 ON t3.a = t1.a;
SELECT * FROM t1 JOIN (t2 JOIN t3 ON t2.b = t3.b) ON t1.a = t2.a;
SELECT * FROM (t1 CROSS JOIN t2) AS x (a1, b1, a2, b2);
SELECT * FROM users u JOIN LATERAL (SELECT * FROM orders o WHERE o.user_id = u.id ORDER BY created_at DESC LIMIT 3) recent ON true;
SELECT * FROM users u LEFT JOIN LATERAL (SELECT count(*) AS n FROM orders WHERE user_id = u.id) c ON true;
SELECT * FROM users u, LATERAL (SELECT max(created_at) AS last_order FROM orders WHERE user_id = u.id) lo;
SELECT * FROM users u CROSS JOIN LATERAL jsonb_array_elements(u.preferences -> 'items') AS item;
SELECT p.name, s.* FROM products p, LATERAL unnest(p.sizes) WITH ORDINALITY AS s(size, idx);
SELECT * FROM t1 a JOIN t1 b ON a.parent_id = b.id;
SELECT * FROM t1 JOIN t2 ON (t1.a, t1.b) = (t2.a, t2.b);
SELECT * FROM t1 JOIN t2 ON t1.r && t2.r;
SELECT * FROM t1 JOIN t2 ON true;
SELECT * FROM t1 LEFT JOIN t2 ON false;

-- Subqueries
SELECT name, (SELECT count(*) FROM orders o WHERE o.user_id = u.id) AS order_count FROM users u;
SELECT * FROM users WHERE id IN (SELECT user_id FROM orders WHERE total_cents > 10000);
SELECT * FROM users WHERE id NOT IN (SELECT user_id FROM orders WHERE user_id IS NOT NULL);
SELECT * FROM users u WHERE EXISTS (SELECT 1 FROM orders o WHERE o.user_id = u.id);
SELECT * FROM users u WHERE NOT EXISTS (SELECT FROM orders o WHERE o.user_id = u.id);
SELECT * FROM products WHERE price > ANY (SELECT price FROM competitor_prices WHERE sku = products.sku);
SELECT * FROM products WHERE price >= ALL (SELECT price FROM products);
SELECT * FROM products WHERE price < SOME (SELECT price FROM products WHERE category = 'x');
SELECT * FROM t WHERE a = ANY (ARRAY[1, 2, 3]);
SELECT * FROM t WHERE a <> ALL ('{1,2,3}'::int[]);
SELECT * FROM t WHERE a = ANY ($1);
SELECT * FROM t WHERE a = ANY ($1::int[]) AND b = ALL ($2::text[]);
SELECT * FROM t WHERE (a, b) IN (SELECT x, y FROM t2);
SELECT * FROM t WHERE (a, b) = (SELECT x, y FROM t2 LIMIT 1);
SELECT * FROM t WHERE a > (SELECT avg(a) FROM t);
SELECT * FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM t) sub WHERE rn % 10 = 0;
SELECT * FROM (SELECT 1 AS a, 2 AS b) AS s;
SELECT * FROM (SELECT 1) AS s(x);
SELECT * FROM (SELECT * FROM t) ;
SELECT e.name, e.salary FROM employees e WHERE e.salary > (SELECT avg(salary) FROM employees WHERE dept_id = e.dept_id);
SELECT ARRAY(SELECT id FROM users ORDER BY id LIMIT 10) AS first_ids;
SELECT (SELECT max(id) FROM users) - (SELECT min(id) FROM users) AS id_span;
SELECT * FROM t WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.a = t.a AND EXISTS (SELECT 1 FROM t3 WHERE t3.b = t2.b));

-- CTEs
WITH regional_sales AS (
    SELECT region, SUM(amount) AS total_sales
    FROM orders
    GROUP BY region
), top_regions AS (
    SELECT region
    FROM regional_sales
    WHERE total_sales > (SELECT SUM(total_sales)/10 FROM regional_sales)
)
SELECT region,
       product,
       SUM(quantity) AS product_units,
       SUM(amount) AS product_sales
FROM orders
WHERE region IN (SELECT region FROM top_regions)
GROUP BY region, product;
WITH RECURSIVE t(n) AS (
    VALUES (1)
  UNION ALL
    SELECT n+1 FROM t WHERE n < 100
)
SELECT sum(n) FROM t;
WITH RECURSIVE search_tree(id, link, data) AS (
    SELECT t.id, t.link, t.data
    FROM tree t
  UNION ALL
    SELECT t.id, t.link, t.data
    FROM tree t, search_tree st
    WHERE t.id = st.link
) SEARCH DEPTH FIRST BY id SET ordercol
SELECT * FROM search_tree ORDER BY ordercol;
WITH RECURSIVE search_tree(id, link, data) AS (
    SELECT t.id, t.link, t.data FROM tree t
  UNION ALL
    SELECT t.id, t.link, t.data FROM tree t, search_tree st WHERE t.id = st.link
) SEARCH BREADTH FIRST BY id SET ordercol
SELECT * FROM search_tree ORDER BY ordercol;
WITH RECURSIVE search_graph(id, link, data, depth) AS (
    SELECT g.id, g.link, g.data, 0
    FROM graph g
  UNION ALL
    SELECT g.id, g.link, g.data, sg.depth + 1
    FROM graph g, search_graph sg
    WHERE g.id = sg.link
) CYCLE id SET is_cycle USING path
SELECT * FROM search_graph;
WITH RECURSIVE search_graph(id, link, data, depth) AS (
    SELECT g.id, g.link, g.data, 0 FROM graph g
  UNION ALL
    SELECT g.id, g.link, g.data, sg.depth + 1 FROM graph g, search_graph sg WHERE g.id = sg.link
) CYCLE id SET is_cycle TO true DEFAULT false USING path
SELECT * FROM search_graph;
WITH RECURSIVE search_graph(id, link, data, depth) AS (
    SELECT g.id, g.link, g.data, 1 FROM graph g
  UNION ALL
    SELECT g.id, g.link, g.data, sg.depth + 1 FROM graph g, search_graph sg WHERE g.id = sg.link
) SEARCH DEPTH FIRST BY id SET ordercol
  CYCLE id SET is_cycle USING path
SELECT * FROM search_graph;
WITH RECURSIVE org AS (
    SELECT id, manager_id, name, 1 AS level, ARRAY[id] AS path FROM employees WHERE manager_id IS NULL
    UNION ALL
    SELECT e.id, e.manager_id, e.name, o.level + 1, o.path || e.id FROM employees e JOIN org o ON e.manager_id = o.id WHERE NOT e.id = ANY(o.path)
)
SELECT repeat('  ', level - 1) || name AS tree FROM org ORDER BY path;
WITH w AS MATERIALIZED (SELECT * FROM big_table) SELECT * FROM w AS w1 JOIN w AS w2 ON w1.key = w2.ref WHERE w2.key = 123;
WITH w AS NOT MATERIALIZED (SELECT * FROM big_table) SELECT * FROM w WHERE key = 123;
WITH a AS (SELECT 1 AS x), b AS (SELECT x + 1 AS y FROM a) SELECT * FROM a, b;
WITH t (a, b) AS (VALUES (1, 'one'), (2, 'two')) SELECT * FROM t;
WITH RECURSIVE fib(a, b) AS (SELECT 0::numeric, 1::numeric UNION ALL SELECT b, a + b FROM fib WHERE b < 1000000) SELECT a FROM fib;
WITH RECURSIVE dates AS (SELECT date '2024-01-01' AS d UNION ALL SELECT d + 1 FROM dates WHERE d < date '2024-01-31') SELECT d FROM dates;
WITH x AS (SELECT * FROM t) SELECT * FROM x UNION ALL SELECT * FROM x;
WITH RECURSIVE r AS (SELECT 1 AS n UNION SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r;

-- Window functions
SELECT depname, empno, salary, avg(salary) OVER (PARTITION BY depname) FROM empsalary;
SELECT depname, empno, salary, rank() OVER (PARTITION BY depname ORDER BY salary DESC) FROM empsalary;
SELECT salary, sum(salary) OVER () FROM empsalary;
SELECT salary, sum(salary) OVER (ORDER BY salary) FROM empsalary;
SELECT depname, empno, salary, enroll_date FROM (SELECT depname, empno, salary, enroll_date, row_number() OVER (PARTITION BY depname ORDER BY salary DESC, empno) AS pos FROM empsalary) AS ss WHERE pos < 3;
SELECT sum(salary) OVER w, avg(salary) OVER w FROM empsalary WINDOW w AS (PARTITION BY depname ORDER BY salary DESC);
SELECT id, lag(value) OVER w AS prev, lead(value, 2, 0) OVER w AS next2 FROM readings WINDOW w AS (ORDER BY ts);
SELECT id, first_value(v) OVER w, last_value(v) OVER w, nth_value(v, 2) OVER w FROM t WINDOW w AS (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING);
SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS moving_sum FROM t;
SELECT id, avg(v) OVER (ORDER BY id ROWS BETWEEN 3 PRECEDING AND 3 FOLLOWING) FROM t;
SELECT id, sum(v) OVER (ORDER BY ts RANGE BETWEEN interval '1 hour' PRECEDING AND CURRENT ROW) FROM t;
SELECT id, sum(v) OVER (ORDER BY n RANGE BETWEEN 5 PRECEDING AND 5 FOLLOWING) FROM t;
SELECT id, count(*) OVER (ORDER BY grp GROUPS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM t;
SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW) FROM t;
SELECT id, sum(v) OVER (ORDER BY id RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE GROUP) FROM t;
SELECT id, sum(v) OVER (ORDER BY id GROUPS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING EXCLUDE TIES) FROM t;
SELECT id, sum(v) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING EXCLUDE NO OTHERS) FROM t;
SELECT id, sum(v) OVER (ORDER BY id ROWS 5 PRECEDING) FROM t;
SELECT id, sum(v) OVER (w ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM t WINDOW w AS (PARTITION BY grp ORDER BY id);
SELECT id, rank() OVER w1, dense_rank() OVER w2 FROM t WINDOW w1 AS (ORDER BY a), w2 AS (w1 ORDER BY b);
SELECT ntile(4) OVER (ORDER BY score DESC), percent_rank() OVER (ORDER BY score), cume_dist() OVER (ORDER BY score) FROM scores;
SELECT count(*) FILTER (WHERE status = 'paid') AS paid, count(*) FILTER (WHERE status = 'pending') AS pending FROM orders;
SELECT user_id, sum(total_cents) FILTER (WHERE created_at > now() - interval '30 days') OVER (PARTITION BY user_id) FROM orders;
SELECT id, row_number() OVER (PARTITION BY a, b ORDER BY c DESC NULLS LAST, d) FROM t;
SELECT region, sum(amount), sum(sum(amount)) OVER (ORDER BY region) AS running FROM sales GROUP BY region;
SELECT id, v, v - lag(v) OVER (PARTITION BY sensor ORDER BY ts) AS delta FROM readings WHERE sensor = $1;

-- Grouping
SELECT brand, size, sum(sales) FROM items_sold GROUP BY GROUPING SETS ((brand), (size), ());
SELECT brand, size, sum(sales) FROM items_sold GROUP BY ROLLUP (brand, size);
SELECT brand, size, sum(sales) FROM items_sold GROUP BY CUBE (brand, size);
SELECT a, b, c, sum(d) FROM t GROUP BY a, CUBE (b, c), GROUPING SETS ((a), (b));
SELECT a, b, grouping(a, b), sum(v) FROM t GROUP BY ROLLUP (a, b) ORDER BY 1, 2;
SELECT a, b, c FROM t GROUP BY DISTINCT ROLLUP (a, b), ROLLUP (a, c);
SELECT a, b FROM t GROUP BY ALL a, b;
SELECT a, count(*) FROM t GROUP BY ();
SELECT a, sum(b) FROM t GROUP BY ROLLUP ((a, b), c);
SELECT user_id, count(*) FROM orders GROUP BY user_id HAVING count(*) > 5;
SELECT user_id, sum(total_cents) AS total FROM orders GROUP BY 1 HAVING sum(total_cents) > 100000 ORDER BY total DESC;
SELECT count(*) FROM t HAVING count(*) > 0;
SELECT date_trunc('month', created_at) AS month, count(*) FROM orders GROUP BY date_trunc('month', created_at) ORDER BY month;

-- Locking
SELECT * FROM accounts WHERE id = $1 FOR UPDATE;
SELECT * FROM accounts WHERE id = $1 FOR UPDATE NOWAIT;
SELECT * FROM jobs WHERE state = 'queued' ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED;
SELECT * FROM accounts WHERE id = $1 FOR NO KEY UPDATE;
SELECT * FROM accounts WHERE id = $1 FOR SHARE;
SELECT * FROM accounts WHERE id = $1 FOR KEY SHARE;
SELECT * FROM orders o JOIN users u ON u.id = o.user_id WHERE o.id = $1 FOR UPDATE OF o;
SELECT * FROM orders o JOIN users u ON u.id = o.user_id FOR UPDATE OF o SKIP LOCKED FOR SHARE OF u NOWAIT;
SELECT * FROM t1, t2 FOR NO KEY UPDATE OF t1, t2 SKIP LOCKED;
SELECT * FROM t FOR KEY SHARE NOWAIT;
SELECT id FROM t WHERE id = 1 FOR READ ONLY;

-- Set operations
SELECT id FROM a UNION SELECT id FROM b;
SELECT id FROM a UNION ALL SELECT id FROM b;
SELECT id FROM a INTERSECT SELECT id FROM b;
SELECT id FROM a INTERSECT ALL SELECT id FROM b;
SELECT id FROM a EXCEPT SELECT id FROM b;
SELECT id FROM a EXCEPT ALL SELECT id FROM b;
SELECT id FROM a UNION DISTINCT SELECT id FROM b;
(SELECT id FROM a ORDER BY id LIMIT 5) UNION ALL (SELECT id FROM b ORDER BY id DESC LIMIT 5) ORDER BY id;
SELECT 1 UNION SELECT 2 INTERSECT SELECT 2 EXCEPT SELECT 3;
(SELECT 1 UNION SELECT 2) INTERSECT (SELECT 2 UNION SELECT 3);
SELECT a FROM t1 UNION ALL SELECT a FROM t2 UNION ALL SELECT a FROM t3 ORDER BY a LIMIT 10;
TABLE a UNION TABLE b;
TABLE users;
TABLE ONLY public.users;

-- VALUES
VALUES (1, 'one'), (2, 'two'), (3, 'three');
VALUES (1), (2) ORDER BY 1 DESC LIMIT 1;
SELECT * FROM (VALUES (1, 'one'), (2, 'two')) AS t (num, letter);
SELECT v.* FROM (VALUES ('a'::text, 1::int), ('b', 2)) v(k, n) WHERE v.n > 1;
SELECT * FROM t WHERE (a, b) IN (VALUES (1, 2), (3, 4));
SELECT * FROM users u JOIN (VALUES (1, 'admin'), (2, 'staff')) AS r(id, role) ON r.id = u.role_id;

-- TABLESAMPLE
SELECT * FROM big_table TABLESAMPLE SYSTEM (1);
SELECT * FROM big_table TABLESAMPLE BERNOULLI (0.5) REPEATABLE (42);
SELECT avg(v) FROM big_table AS b TABLESAMPLE SYSTEM (10) WHERE b.flag;
SELECT * FROM big_table TABLESAMPLE system_rows (100);

-- Arrays and rows
SELECT ARRAY[1, 2, 3] AS arr;
SELECT ARRAY[[1, 2], [3, 4]] AS matrix;
SELECT ARRAY[]::int[];
SELECT '{1,2,3}'::int[] AS arr, '{{1,2},{3,4}}'::int[][] AS m;
SELECT arr[1], arr[2:3], arr[:2], arr[2:], arr[:] FROM t;
SELECT matrix[1][2], matrix[1:2][1:1] FROM t;
SELECT (ARRAY[1, 2, 3])[2];
SELECT (string_to_array('a,b,c', ','))[1:2];
SELECT array_length(tags, 1), cardinality(tags), array_upper(tags, 1), array_lower(tags, 1) FROM posts;
SELECT tags @> ARRAY['postgres'], tags && ARRAY['sql', 'db'], ARRAY['x'] <@ tags FROM posts;
SELECT array_cat(a, b), array_append(a, 4), array_prepend(0, a), a || b, a || 5 FROM t;
SELECT unnest(ARRAY[1, 2, 3]);
SELECT * FROM unnest(ARRAY[1, 2], ARRAY['a', 'b', 'c']) AS x(n, s);
SELECT array_position(ARRAY['a', 'b'], 'b'), array_positions(ARRAY[1, 2, 1], 1), array_remove(ARRAY[1, 2, 1], 1), array_replace(ARRAY[1, 2], 2, 3);
SELECT array_to_string(ARRAY[1, NULL, 3], ',', '*'), string_to_array('1|2|3', '|');
SELECT ROW(1, 'a', true);
SELECT ROW(1, 2) = ROW(1, 2), ROW(1, 2) < ROW(1, 3), (1, 2) <> (2, 1);
SELECT (1, 'x')::my_pair;
SELECT (u).id, (u).email FROM (SELECT u FROM users u) s;
SELECT (compfunc(t)).* FROM t;
SELECT (addr).city, (t.addr).zip FROM addresses t;
SELECT ROW(t.*) FROM t;
SELECT row_to_json(t) FROM t;
SELECT * FROM t WHERE ROW(a, b) IS NULL;
SELECT * FROM t WHERE ROW(a, b) IS NOT NULL;
SELECT ROW(1, 2) IS DISTINCT FROM ROW(1, NULL);
SELECT ARRAY(SELECT ROW(id, name) FROM users);
SELECT array_dims(ARRAY[[1, 2, 3], [4, 5, 6]]), array_ndims('{{1}}'::int[]);
SELECT '[1:3]={1,2,3}'::int[];
SELECT trim_array(ARRAY[1, 2, 3, 4], 2), array_sample(ARRAY[1, 2, 3], 2), array_shuffle(ARRAY[1, 2, 3]);
SELECT array_reverse(ARRAY[1, 2, 3]), array_sort(ARRAY[3, 1, 2]);

-- Conditional expressions
SELECT CASE WHEN a > 0 THEN 'positive' WHEN a < 0 THEN 'negative' ELSE 'zero' END FROM t;
SELECT CASE status WHEN 'paid' THEN 1 WHEN 'pending' THEN 2 ELSE 3 END AS sort_key FROM orders;
SELECT CASE WHEN x IS NULL THEN NULL END FROM t;
SELECT CASE WHEN a THEN CASE WHEN b THEN 1 ELSE 2 END ELSE 3 END FROM t;
SELECT COALESCE(nickname, name, 'anonymous') FROM users;
SELECT NULLIF(value, 0), NULLIF(trim(name), '') FROM t;
SELECT GREATEST(a, b, c), LEAST(a, b, c) FROM t;
SELECT GREATEST(updated_at, created_at, '2000-01-01'::timestamptz) FROM t;
SELECT * FROM t WHERE a IS DISTINCT FROM b;
SELECT * FROM t WHERE a IS NOT DISTINCT FROM $1;
SELECT * FROM t WHERE a IS NULL OR b IS NOT NULL;
SELECT * FROM t WHERE a ISNULL OR b NOTNULL;
SELECT * FROM t WHERE flag IS TRUE AND other IS NOT FALSE AND third IS UNKNOWN AND fourth IS NOT UNKNOWN;
SELECT * FROM t WHERE a BETWEEN 1 AND 10;
SELECT * FROM t WHERE a NOT BETWEEN 1 AND 10;
SELECT * FROM t WHERE a BETWEEN SYMMETRIC 10 AND 1;
SELECT * FROM t WHERE a NOT BETWEEN SYMMETRIC $1 AND $2;
SELECT * FROM t WHERE a BETWEEN ASYMMETRIC 1 AND 10;
SELECT * FROM t WHERE ts BETWEEN now() - interval '1 day' AND now();
SELECT * FROM t WHERE NOT (a = 1 AND (b = 2 OR c = 3));
SELECT * FROM t WHERE a IN (1, 2, 3) AND b NOT IN ('x', 'y');

-- Pattern matching
SELECT * FROM users WHERE email LIKE '%@example.com';
SELECT * FROM users WHERE email NOT LIKE 'test%';
SELECT * FROM users WHERE name ILIKE 'al%';
SELECT * FROM users WHERE name NOT ILIKE '%bot%';
SELECT * FROM products WHERE sku LIKE 'AB\_%' ESCAPE '\';
SELECT * FROM products WHERE sku LIKE 'AB!_%' ESCAPE '!';
SELECT * FROM products WHERE name ILIKE $1 ESCAPE '#';
SELECT * FROM t WHERE s SIMILAR TO '%(b|d)%';
SELECT * FROM t WHERE s NOT SIMILAR TO '(a|b)%';
SELECT * FROM t WHERE s SIMILAR TO '%#"o_b#"%' ESCAPE '#';
SELECT * FROM t WHERE s ~ '^[a-z]+$';
SELECT * FROM t WHERE s ~* 'ERROR|WARN';
SELECT * FROM t WHERE s !~ '\d';
SELECT * FROM t WHERE s !~* 'debug';
SELECT * FROM t WHERE s ~~ 'a%' AND s !~~ '%z' AND s ~~* 'A%' AND s !~~* '%Z';
SELECT regexp_matches('foobarbequebaz', '(bar)(beque)');
SELECT regexp_replace('Thomas', '.[mN]a.', 'M'), regexp_split_to_array('hello world', '\s+');
SELECT regexp_substr('number of your street, town zip, FR', '[^,]+', 1, 2), regexp_count('ABCABC', 'A'), regexp_like('Hello', 'h', 'i'), regexp_instr('abcabc', 'c');
SELECT substring('Thomas' FROM '...$'), substring('Thomas' SIMILAR '%#"o_a#"_' ESCAPE '#');
SELECT * FROM t WHERE s LIKE ANY (ARRAY['a%', 'b%']);
SELECT * FROM t WHERE s ILIKE ALL ($1::text[]);
SELECT * FROM t WHERE s ^@ 'pre';
SELECT starts_with(s, 'pre') FROM t;

-- Casts
SELECT '42'::int, '3.14'::numeric(5, 2), 'true'::boolean, '2024-01-01'::date;
SELECT CAST('42' AS integer), CAST(3.7 AS int), CAST(now() AS date);
SELECT int '42', bool 't', date '2024-01-01', time '12:34:56', timestamp '2024-01-01 00:00:00';
SELECT timestamptz '2024-01-01 00:00:00+02', numeric '1.5', text 'abc', varchar 'xyz';
SELECT interval '1 day', interval '1 day 2 hours 3 minutes', interval 'P1Y2M3DT4H5M6S';
SELECT interval '1 day 2:03' hour to minute;
SELECT interval '1-2' year to month, interval '3 4:05:06' day to second, interval '10' minute;
SELECT interval '1.5' second(3), interval '2 days' day, interval '3' hour;
SELECT INTERVAL '1' YEAR, INTERVAL '2' MONTH, INTERVAL '3 4' DAY TO HOUR, INTERVAL '5:06' MINUTE TO SECOND;
SELECT x::text::int::bigint FROM t;
SELECT id::text || '-' || name FROM users;
SELECT $1::uuid, $2::timestamptz, $3::jsonb, $4::int[], $5::text[];
SELECT 'abc'::char(5), 'abc'::varchar(2), 'abc'::character varying, 'a'::"char";
SELECT 1::double precision, 1::float4, 1::float(24), 1::real, 1::smallint, 1::int2, 1::int8, 1::decimal(10, 3);
SELECT now()::timestamp(0), now()::time with time zone, now()::timestamp without time zone, '12:00'::time(3) without time zone;
SELECT 'users'::regclass, 'now'::regproc, 'int4'::regtype, 'public'::regnamespace, 'postgres'::regrole;
SELECT 'users'::regclass::oid, pg_typeof(1::int8);
SELECT '1'::bit(8), B'1010'::bit varying(8), '1010'::varbit;
SELECT '{"a":1}'::json, '{"a":1}'::jsonb, '<a/>'::xml, '192.168.0.1'::inet, 'a b'::tsvector;
SELECT '[1,10)'::int4range, '{[1,3),[5,7)}'::int4multirange, 'empty'::numrange;
SELECT ARRAY['1', '2']::int[], '{a,b}'::varchar(10)[], '{}'::text[][];
SELECT TREAT(x AS int) FROM t;
SELECT CAST($1 AS bigint), CAST($2 AS text[]), CAST(ROW(1, 2) AS my_pair);
SELECT 3 + 4 * 2 ^ 2, -5 % 3, 10 / 3, 10.0 / 3, 7 & 3, 7 | 8, 7 # 2, ~7, 1 << 4, 256 >> 2, |/ 16, ||/ 27, @ -5;
SELECT 'abc' || 'def', 'abc' || 1, 1 || 'abc', NULL || 'x';

-- Collation and time zones
SELECT name FROM users ORDER BY name COLLATE "C";
SELECT name COLLATE "en_US" FROM users WHERE name COLLATE "de_DE" < 'm';
SELECT * FROM t WHERE a = b COLLATE "case_insensitive";
SELECT name FROM users ORDER BY name COLLATE pg_catalog."default" DESC;
SELECT now() AT TIME ZONE 'UTC';
SELECT created_at AT TIME ZONE 'America/New_York' FROM orders;
SELECT timestamp '2001-02-16 20:38:40' AT TIME ZONE 'America/Denver';
SELECT timestamptz '2001-02-16 20:38:40-05' AT TIME ZONE 'Asia/Tokyo' AT TIME ZONE 'Asia/Tokyo';
SELECT ts AT TIME ZONE tz FROM events_with_tz;
SELECT now() AT LOCAL, localtimestamp AT TIME ZONE INTERVAL '-08:00';
SELECT (DATE '2001-02-16', DATE '2001-12-21') OVERLAPS (DATE '2001-10-30', DATE '2002-10-30');
SELECT (DATE '2001-02-16', INTERVAL '100 days') OVERLAPS (DATE '2001-10-30', DATE '2002-10-30');
SELECT * FROM bookings b1, bookings b2 WHERE b1.id < b2.id AND (b1.starts, b1.ends) OVERLAPS (b2.starts, b2.ends);

-- Special syntax functions
SELECT extract(year FROM created_at), extract(epoch FROM now()), extract(dow FROM current_date) FROM orders;
SELECT EXTRACT(MONTH FROM INTERVAL '2 years 3 months'), EXTRACT('hour' FROM TIME '17:12:28');
SELECT date_part('day', now()), date_trunc('hour', now()), date_trunc('day', now(), 'Europe/Paris'), date_bin('15 minutes', now(), '2000-01-01');
SELECT position('om' IN 'Thomas'), strpos('high', 'ig');
SELECT substring('Thomas' FROM 2 FOR 3), substring('Thomas' FROM 3), substring('Thomas' FOR 2), substr('Thomas', 2, 3);
SELECT trim(both 'xyz' FROM 'yxTomxx'), trim(leading FROM '  x'), trim(trailing 'x' FROM 'xTomxx'), trim('  a  '), btrim('xyxtrimyyx', 'xyz');
SELECT trim(LEADING '0' FROM '000123'), trim(FROM '  padded  '), trim(BOTH FROM '  b  ');
SELECT overlay('Txxxxas' PLACING 'hom' FROM 2 FOR 4), overlay('abc' PLACING 'X' FROM 2);
SELECT current_date, current_time, current_timestamp, localtime, localtimestamp, current_time(2), current_timestamp(3), localtimestamp(0);
SELECT current_user, session_user, user, current_role, current_catalog, current_schema, system_user;
SELECT normalize(U&'\0061\0308bc', NFC), 'abc' IS NFC NORMALIZED, 'abc' IS NOT NFKD NORMALIZED;
SELECT collation for ('foo'::text);
SELECT upper('abc'), lower('ABC'), initcap('hello world'), length('abc'), char_length('abc'), octet_length('abc'), bit_length('abc');
SELECT lpad('42', 5, '0'), rpad('x', 3), repeat('ab', 3), reverse('abc'), left('abcdef', 2), right('abcdef', 2), split_part('a.b.c', '.', 2);
SELECT format('Hello %s, you are %L years, %I', name, age, col) FROM people;
SELECT concat('a', 1, NULL, 'b'), concat_ws(', ', 'a', NULL, 'c'), quote_ident('Foo Bar'), quote_literal('O''Reilly'), quote_nullable(NULL);
SELECT md5('abc'), sha256('abc'::bytea), encode(decode('68656c6c6f', 'hex'), 'base64'), to_hex(255), chr(65), ascii('A');
SELECT to_char(now(), 'YYYY-MM-DD HH24:MI:SS'), to_date('05 Dec 2000', 'DD Mon YYYY'), to_timestamp('2024-01-01', 'YYYY-MM-DD'), to_number('12,454.8-', '99G999D9S');
SELECT make_date(2024, 2, 29), make_time(8, 15, 23.5), make_timestamp(2024, 1, 1, 0, 0, 0), make_interval(days => 10), age(timestamp '2001-04-10', timestamp '1957-06-13');
SELECT abs(-17.4), ceil(42.2), floor(-42.8), round(42.4382, 2), trunc(42.8), sqrt(2), cbrt(27), power(2, 10), exp(1), ln(10), log(100), log10(1000), mod(9, 4), sign(-8.4), pi(), random(), div(9, 4), gcd(12, 18), lcm(4, 6), width_bucket(5.35, 0.024, 10.06, 5);
SELECT random(1, 10), random(0.0, 1.0), uuidv4(), uuidv7(), gen_random_uuid();

-- Aggregates
SELECT string_agg(name, ', ' ORDER BY name) FROM users;
SELECT string_agg(DISTINCT tag, ',' ORDER BY tag DESC) FROM post_tags;
SELECT array_agg(id ORDER BY created_at DESC) FROM orders WHERE user_id = $1;
SELECT array_agg(DISTINCT status) FILTER (WHERE status IS NOT NULL) FROM orders;
SELECT user_id, array_agg(id) AS order_ids, sum(total_cents), avg(total_cents)::numeric(10, 2), min(created_at), max(created_at) FROM orders GROUP BY user_id;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY total_cents) FROM orders;
SELECT percentile_cont(ARRAY[0.25, 0.5, 0.75]) WITHIN GROUP (ORDER BY latency_ms) FROM requests;
SELECT percentile_disc(0.95) WITHIN GROUP (ORDER BY latency_ms DESC) FROM requests WHERE path = $1;
SELECT mode() WITHIN GROUP (ORDER BY browser) FROM page_views;
SELECT rank(42) WITHIN GROUP (ORDER BY score), dense_rank(42) WITHIN GROUP (ORDER BY score), percent_rank(42) WITHIN GROUP (ORDER BY score), cume_dist(42) WITHIN GROUP (ORDER BY score) FROM scores;
SELECT bool_and(active), bool_or(active), every(active) FROM users;
SELECT bit_and(flags), bit_or(flags), bit_xor(flags) FROM t;
SELECT stddev(v), stddev_pop(v), stddev_samp(v), variance(v), var_pop(v), var_samp(v) FROM t;
SELECT corr(x, y), covar_pop(x, y), covar_samp(x, y), regr_slope(y, x), regr_intercept(y, x), regr_r2(y, x), regr_count(y, x) FROM points;
SELECT count(*) AS n, count(1), count(email), count(ALL email), count(DISTINCT email) FROM users;
SELECT json_agg(t ORDER BY t.id) FROM t;
SELECT jsonb_object_agg(key, value) FROM settings;
SELECT xmlagg(xmlelement(name item, name) ORDER BY name) FROM products;
SELECT any_value(name) FROM users GROUP BY email;
SELECT range_agg(during), range_intersect_agg(during) FROM reservations;
SELECT sum(x ORDER BY y) FROM t;
SELECT avg(DISTINCT price) FROM products;
SELECT my_agg(a, b ORDER BY c, d) FROM t;
SELECT count(*) FILTER (WHERE x > 0) OVER (PARTITION BY g) FROM t;

-- XML
SELECT xmlelement(name foo, xmlattributes('xyz' AS bar), 'content', xmlelement(name child));
SELECT xmlelement(name "foo$bar", xmlattributes(current_date AS "date"));
SELECT xmlforest('abc' AS foo, 123 AS bar);
SELECT xmlconcat('<abc/>', '<bar>foo</bar>');
SELECT xmlcomment('hello');
SELECT xmlpi(name php, 'echo "hello world";');
SELECT xmlroot(xmlparse(document '<?xml version="1.1"?><content>abc</content>'), version '1.0', standalone yes);
SELECT xmlparse(content '<a>b</a>'), xmlparse(document '<r/>');
SELECT xmlserialize(content '<a>b</a>'::xml AS text), xmlserialize(document '<r/>'::xml AS varchar(100) INDENT);
SELECT xmlserialize(CONTENT x AS text NO INDENT) FROM xmltab;
SELECT '<a/>'::xml IS DOCUMENT, '<a/>'::xml IS NOT DOCUMENT;
SELECT xmlexists('//town[text() = ''Toronto'']' PASSING BY VALUE '<towns><town>Toronto</town></towns>');
SELECT xpath('/my:a/text()', '<my:a xmlns:my="http://example.com">test</my:a>', ARRAY[ARRAY['my', 'http://example.com']]);
SELECT xmltable.* FROM xmldata, XMLTABLE('//ROWS/ROW' PASSING data COLUMNS id int PATH '@id', ordinality FOR ORDINALITY, "COUNTRY_NAME" text, country_id text PATH 'COUNTRY_ID', size_sq_km float PATH 'SIZE[@unit = "sq_km"]', premier_name text PATH 'PREMIER_NAME' DEFAULT 'not specified');
SELECT * FROM XMLTABLE(XMLNAMESPACES('http://example.com/myns' AS x, 'http://example.com/b' AS "B"), '/x:example/x:item' PASSING (SELECT data FROM xmldata) COLUMNS foo int PATH '@foo', bar int PATH '@B:bar');
SELECT table_to_xml('users', true, false, ''), query_to_xml('select 1', true, true, '');

-- SELECT INTO
SELECT * INTO films_recent FROM films WHERE date_prod >= '2002-01-01';
SELECT id, email INTO TEMP TABLE tmp_users FROM users WHERE active;
SELECT * INTO UNLOGGED TABLE scratch FROM t LIMIT 0;
SELECT 1 AS x INTO TEMPORARY one_row;

-- Set-returning functions
SELECT * FROM generate_series(1, 10);
SELECT * FROM generate_series(1, 10, 2) AS g(n);
SELECT generate_series(now() - interval '7 days', now(), interval '1 day')::date AS day;
SELECT * FROM generate_series('2024-01-01'::timestamp, '2024-12-01', '1 month') WITH ORDINALITY AS t(ts, idx);
SELECT * FROM generate_subscripts(ARRAY['a', 'b', 'c'], 1) AS s;
SELECT * FROM unnest(ARRAY['a', 'b']) WITH ORDINALITY AS t(elem, n);
SELECT * FROM ROWS FROM (generate_series(1, 3), unnest(ARRAY['a', 'b'])) AS x(n, s);
SELECT * FROM ROWS FROM (generate_series(10, 11), generate_series(1, 4)) WITH ORDINALITY AS t(a, b, ord);
SELECT * FROM ROWS FROM (json_to_recordset('[{"a":40,"b":"foo"}]') AS (a int, b text), generate_series(1, 3)) AS x(p, q, s) ORDER BY p;
SELECT * FROM json_to_record('{"a":1,"b":"x"}') AS x(a int, b text);
SELECT * FROM dblink('dbname=mydb', 'select proname, prosrc from pg_proc') AS t1(proname name, prosrc text) WHERE proname LIKE 'bytea%';
SELECT * FROM pg_get_keywords() WHERE catcode = 'R';
SELECT * FROM lateral_fn(1) f, LATERAL other_fn(f.id) o;
SELECT s.i, s.i * 2 FROM generate_series(1, 5) s(i);
SELECT * FROM regexp_split_to_table('a b  c', '\s+') WITH ORDINALITY;
SELECT * FROM pg_catalog.pg_ls_dir('.') AS f;

-- Named and variadic arguments
SELECT make_interval(days => 10, hours => 5);
SELECT make_interval(years := 1, months := 2);
SELECT concat_lower_or_upper('Hello', 'World', uppercase => true);
SELECT concat_lower_or_upper(a => 'Hello', b => 'World');
SELECT concat_lower_or_upper('Hello', b := 'World', uppercase := false);
SELECT mleast(VARIADIC ARRAY[10, -1, 5, 4.4]);
SELECT mleast(10, -1, 5, 4.4);
SELECT mleast(VARIADIC arr := ARRAY[1, 2]);
SELECT format(VARIADIC ARRAY['%s-%s', 'a', 'b']);
SELECT json_build_object(VARIADIC ARRAY['a', '1', 'b', '2']);
SELECT concat(VARIADIC $1::text[]);
SELECT pg_catalog.format('%s', 1), public.my_func(1, x => 2);

-- Realistic reporting queries
SELECT date_trunc('day', o.created_at) AS day, count(DISTINCT o.user_id) AS buyers, sum(o.total_cents) / 100.0 AS revenue FROM orders o WHERE o.created_at >= now() - interval '30 days' AND o.status = 'paid' GROUP BY 1 ORDER BY 1;
SELECT u.id, u.email, coalesce(sum(o.total_cents), 0) AS lifetime FROM users u LEFT JOIN orders o ON o.user_id = u.id AND o.status = 'paid' GROUP BY u.id ORDER BY lifetime DESC NULLS LAST LIMIT 100;
SELECT p.id, p.title, count(c.id) AS comments, max(c.created_at) AS last_comment FROM posts p LEFT JOIN comments c ON c.post_id = p.id WHERE p.published_at IS NOT NULL GROUP BY p.id, p.title HAVING count(c.id) >= 3 ORDER BY last_comment DESC;
SELECT cohort, period, count(*) AS users FROM (SELECT u.id, date_trunc('month', u.created_at) AS cohort, (extract(year FROM age(o.created_at, u.created_at)) * 12 + extract(month FROM age(o.created_at, u.created_at)))::int AS period FROM users u JOIN orders o ON o.user_id = u.id) s GROUP BY cohort, period ORDER BY cohort, period;
SELECT id, name, parent_id FROM categories WHERE parent_id IS NULL UNION ALL SELECT c.id, c.name, c.parent_id FROM categories c JOIN categories p ON c.parent_id = p.id WHERE p.parent_id IS NULL ORDER BY 1;
SELECT t.* FROM tasks t WHERE t.assignee_id = $1 AND t.status IN ('open', 'in_progress') AND (t.due_at IS NULL OR t.due_at > now()) ORDER BY t.priority DESC, t.due_at ASC NULLS LAST, t.id LIMIT 50;
SELECT id, title, ts_rank_cd(tsv, query) AS rank FROM documents, websearch_to_tsquery('english', $1) query WHERE tsv @@ query ORDER BY rank DESC LIMIT 20;
SELECT id, ts_headline('english', body, plainto_tsquery('english', 'postgres index'), 'MaxWords=20') FROM documents WHERE to_tsvector('english', body) @@ to_tsquery('english', 'postgres & index');
SELECT name, similarity(name, $1) AS sml FROM products WHERE name % $1 ORDER BY sml DESC, name;
SELECT id, location <-> point(40.7, -74.0) AS dist FROM stores ORDER BY location <-> point(40.7, -74.0) LIMIT 5;
SELECT * FROM reservations WHERE during && tstzrange(now(), now() + interval '1 day', '[)');
SELECT * FROM reservations WHERE during @> now() AND lower(during) > '2024-01-01' AND upper_inf(during) = false;
SELECT * FROM ip_log WHERE ip << inet '10.0.0.0/8' OR ip >>= inet '192.168.0.0/16';
SELECT id FROM t WHERE created_at >= date_trunc('week', current_date) AND created_at < date_trunc('week', current_date) + interval '1 week';
SELECT sum(amount) FILTER (WHERE kind = 'credit') - sum(amount) FILTER (WHERE kind = 'debit') AS balance FROM ledger WHERE account_id = $1;
SELECT user_id, max(created_at) - min(created_at) AS span, count(*) FROM sessions GROUP BY user_id HAVING max(created_at) - min(created_at) > interval '1 hour';
SELECT a.id, b.id FROM a JOIN b ON a.email = b.email AND a.id <> b.id WHERE a.created_at < b.created_at;
SELECT to_char(date_trunc('month', created_at), 'Mon YYYY') AS month, round(avg(total_cents) / 100.0, 2) AS aov FROM orders GROUP BY date_trunc('month', created_at) ORDER BY date_trunc('month', created_at);
SELECT pg_size_pretty(pg_total_relation_size('orders')), pg_size_pretty(pg_relation_size('orders')), pg_size_pretty(pg_indexes_size('orders'));
SELECT relname, n_live_tup, n_dead_tup, last_autovacuum FROM pg_stat_user_tables ORDER BY n_dead_tup DESC LIMIT 10;
SELECT pid, usename, state, query, now() - query_start AS duration FROM pg_stat_activity WHERE state <> 'idle' AND pid <> pg_backend_pid() ORDER BY duration DESC;
SELECT query, calls, total_exec_time, mean_exec_time, rows FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 20;
SELECT blocked.pid AS blocked_pid, blocking.pid AS blocking_pid, blocked.query FROM pg_stat_activity blocked JOIN pg_stat_activity blocking ON blocking.pid = ANY(pg_blocking_pids(blocked.pid));
SELECT datname, numbackends, xact_commit, xact_rollback, blks_hit::float / nullif(blks_hit + blks_read, 0) AS hit_ratio FROM pg_stat_database;
SELECT 1;
SELECT 1 AS one, 'two' AS two, 3.0 AS three;
SELECT version();
SELECT now();
SELECT current_setting('server_version_num')::int;
SELECT pg_is_in_recovery();
SELECT txid_current(), pg_current_xact_id(), pg_current_wal_lsn();
SELECT pg_sleep(0.1);
SELECT pg_cancel_backend($1), pg_terminate_backend($2);
SELECT nextval('users_id_seq'), currval('users_id_seq'), setval('users_id_seq', 100, false), lastval();
SELECT * FROM t WHERE id > $1 ORDER BY id LIMIT $2;
SELECT * FROM t WHERE (created_at, id) < ($1, $2) ORDER BY created_at DESC, id DESC LIMIT 25;
SELECT count(*) OVER () AS total_count, t.* FROM t WHERE t.kind = $1 ORDER BY t.id LIMIT 20 OFFSET 40;
SELECT exists(SELECT 1 FROM users WHERE email = $1);
SELECT CASE WHEN EXISTS (SELECT 1 FROM t WHERE a = 1) THEN 'yes' ELSE 'no' END;
SELECT id FROM users WHERE lower(email) = lower($1) LIMIT 1;
SELECT * FROM t WHERE created_at > now() - '1 hour'::interval;
SELECT * FROM t WHERE created_at::date = current_date - 1;
SELECT * FROM t WHERE extract(hour FROM created_at AT TIME ZONE 'UTC') BETWEEN 9 AND 17;
SELECT age(now(), birth_date) > interval '18 years' AS adult FROM people;
SELECT id, coalesce(display_name, split_part(email, '@', 1)) AS label FROM users;
SELECT x, y, x * y AS product, x::float / nullif(y, 0) AS ratio FROM t;
SELECT a, b, a IS DISTINCT FROM b AS changed FROM t;
SELECT t1.*, t2.name AS t2_name FROM t1 LEFT JOIN t2 ON t1.t2_id = t2.id WHERE t1.deleted = false;
SELECT *, ctid, xmin, xmax, tableoid FROM t;
SELECT u.* FROM users AS u WHERE u.id IN ($1, $2, $3, $4, $5);
SELECT id FROM t GROUP BY id HAVING bool_and(ok);
SELECT sum(x) AS s FROM t WINDOW w AS (ORDER BY x);
SELECT id, (SELECT string_agg(name, ',') FROM tags WHERE tags.post_id = p.id) AS tag_list FROM posts p;
SELECT *
FROM orders
WHERE status = 'pending'
  AND created_at < now() - interval '15 minutes'
ORDER BY created_at
LIMIT 100
FOR UPDATE SKIP LOCKED;

-- More joins and subquery shapes seen in applications
SELECT o.id, o.total_cents, u.email, a.city FROM orders o JOIN users u ON u.id = o.user_id LEFT JOIN addresses a ON a.id = o.shipping_address_id WHERE o.id = $1;
SELECT p.*, c.name AS category_name FROM products p JOIN categories c ON c.id = p.category_id WHERE c.slug = $1 AND p.active ORDER BY p.created_at DESC LIMIT 24;
SELECT u.id, u.name, r.name AS role FROM users u JOIN user_roles ur ON ur.user_id = u.id JOIN roles r ON r.id = ur.role_id WHERE u.org_id = $1 ORDER BY u.name;
SELECT m.*, s.name AS sender FROM messages m JOIN users s ON s.id = m.sender_id WHERE m.conversation_id = $1 AND m.created_at > $2 ORDER BY m.created_at ASC;
SELECT f.followee_id, u.name FROM follows f JOIN users u ON u.id = f.followee_id WHERE f.follower_id = $1 AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.blocker_id = $1 AND b.blocked_id = f.followee_id);
SELECT p.id, p.title, p.created_at FROM posts p WHERE p.author_id IN (SELECT followee_id FROM follows WHERE follower_id = $1) ORDER BY p.created_at DESC LIMIT 50;
SELECT s.id, s.name, count(e.id) AS enrolled, s.capacity - count(e.id) AS remaining FROM sections s LEFT JOIN enrollments e ON e.section_id = s.id GROUP BY s.id HAVING s.capacity > count(e.id);
SELECT i.invoice_no, c.name, sum(li.amount) AS total, i.due_date, CASE WHEN i.paid_at IS NOT NULL THEN 'paid' WHEN i.due_date < current_date THEN 'overdue' ELSE 'open' END AS state FROM invoices i JOIN customers c ON c.id = i.customer_id JOIN invoice_lines li ON li.invoice_id = i.id GROUP BY i.id, c.name;
SELECT d.name, e.name, e.salary FROM departments d JOIN LATERAL (SELECT name, salary FROM employees WHERE dept_id = d.id ORDER BY salary DESC LIMIT 3) e ON true ORDER BY d.name, e.salary DESC;
SELECT * FROM products WHERE id = ANY (SELECT product_id FROM wishlist WHERE user_id = $1);
SELECT * FROM orders WHERE user_id = $1 AND created_at >= $2 AND created_at < $3 AND status = ANY ($4::text[]);
SELECT id, name FROM users WHERE to_tsvector('simple', name) @@ to_tsquery('simple', $1 || ':*');
SELECT l.id, l.created_at, l.level, l.message FROM logs l WHERE l.app = $1 AND l.level >= 3 AND l.created_at BETWEEN $2 AND $3 ORDER BY l.created_at DESC, l.id DESC LIMIT 200;
SELECT t1.id FROM t1 WHERE t1.x > 0 INTERSECT SELECT t2.id FROM t2 WHERE t2.y < 0 ORDER BY 1;
SELECT a.* FROM a LEFT JOIN b ON b.a_id = a.id LEFT JOIN c ON c.b_id = b.id RIGHT JOIN d ON d.c_id = c.id FULL JOIN e ON e.d_id = d.id;
SELECT * FROM t1 CROSS JOIN t2 CROSS JOIN t3 WHERE t1.a = t2.a AND t2.b = t3.b;
SELECT x.id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM t) a) b) x;
SELECT count(*) FROM (SELECT DISTINCT user_id FROM orders) AS buyers;
SELECT * FROM users WHERE id = (SELECT user_id FROM sessions WHERE token = $1 AND expires_at > now());
SELECT * FROM (SELECT *, lag(status) OVER (PARTITION BY order_id ORDER BY at) AS prev_status FROM order_events) e WHERE prev_status IS DISTINCT FROM status;
SELECT name, CASE WHEN score >= 90 THEN 'A' WHEN score >= 80 THEN 'B' WHEN score >= 70 THEN 'C' ELSE 'F' END AS grade FROM students ORDER BY score DESC;
SELECT k, v FROM kv WHERE k LIKE $1 || '%' ORDER BY k;
SELECT date_trunc('hour', ts) AS hour, avg(cpu) FILTER (WHERE host = 'web-1') AS web1, avg(cpu) FILTER (WHERE host = 'web-2') AS web2 FROM metrics WHERE ts > now() - interval '1 day' GROUP BY 1 ORDER BY 1;
SELECT width_bucket(latency_ms, 0, 1000, 10) AS bucket, count(*) FROM requests GROUP BY bucket ORDER BY bucket;
SELECT id, sum(amount) OVER (PARTITION BY account_id ORDER BY posted_at, id ROWS UNBOUNDED PRECEDING) AS running_balance FROM ledger;
SELECT grp, min(id), max(id) FROM (SELECT id, id - row_number() OVER (ORDER BY id) AS grp FROM t) s GROUP BY grp;
SELECT user_id, ts, ts - lag(ts) OVER (PARTITION BY user_id ORDER BY ts) > interval '30 minutes' AS new_session FROM clicks;
SELECT * FROM users WHERE (settings ->> 'theme') = 'dark' AND created_at > '2024-01-01';
SELECT * FROM users u WHERE u.id = $1 AND u.tenant_id = current_setting('app.tenant_id')::bigint;
SELECT a, b, c FROM t WHERE a = 1 ORDER BY b LIMIT 1 OFFSET 0 FOR SHARE SKIP LOCKED;
SELECT DISTINCT ON (lower(email)) id, email FROM users ORDER BY lower(email), id;
SELECT * FROM generate_series(1, 3) a, generate_series(1, 3) b WHERE a < b;
SELECT r.* FROM (VALUES (1), (2)) v(id) JOIN LATERAL (SELECT v.id * 10 AS x) r ON true;
SELECT * FROM t WHERE a = 1 AND b = 2 AND c = 3 AND d = 4 AND e = 5 OR f = 6;
SELECT id FROM t ORDER BY random() LIMIT 1;
SELECT 1 FROM t WHERE false;
SELECT NULL::int AS empty_int, NULL::text AS empty_text;
SELECT * FROM t1 WHERE id NOT IN (1, 2, 3) AND name NOT LIKE 'x%' AND NOT flag;
SELECT * FROM t AS "T" WHERE "T".id = 1;
SELECT * FROM "public"."orders" AS "o" WHERE "o"."status" = 'paid';
