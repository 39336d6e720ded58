-- INSERT
INSERT INTO users (email, name) VALUES ('alice@example.com', 'Alice');
INSERT INTO users (email, name) VALUES ('bob@example.com', 'Bob'), ('carol@example.com', 'Carol'), ('dave@example.com', 'Dave');
INSERT INTO users (email, name) VALUES ($1, $2);
INSERT INTO users (email, name) VALUES ($1, $2) RETURNING id;
INSERT INTO users (email, name) VALUES ($1, $2) RETURNING *;
INSERT INTO users (email, name, created_at) VALUES ($1, $2, now()) RETURNING id, created_at;
INSERT INTO users (email, name) VALUES ($1, $2), ($3, $4), ($5, $6) RETURNING id;
INSERT INTO users DEFAULT VALUES;
INSERT INTO users DEFAULT VALUES RETURNING id;
INSERT INTO users VALUES (DEFAULT, 'eve@example.com', 'Eve', 30, DEFAULT, DEFAULT);
INSERT INTO public.users AS u (email) VALUES ('frank@example.com');
INSERT INTO archive.orders SELECT * FROM orders WHERE created_at < now() - interval '1 year';
INSERT INTO order_totals (user_id, total) SELECT user_id, sum(total_cents) FROM orders GROUP BY user_id;
INSERT INTO tmp_ids SELECT id FROM users WHERE email LIKE '%@example.com' ORDER BY id LIMIT 100;
INSERT INTO audit_log (table_name, op, row_data) SELECT 'users', 'I', to_jsonb(u) FROM users u WHERE u.id = $1;
INSERT INTO tags (name) VALUES ('postgres') ON CONFLICT DO NOTHING;
INSERT INTO tags (name) VALUES ('postgres') ON CONFLICT (name) DO NOTHING;
INSERT INTO tags (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id;
INSERT INTO counters (key, value) VALUES ('hits', 1) ON CONFLICT (key) DO UPDATE SET value = counters.value + EXCLUDED.value;
INSERT INTO counters AS c (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = c.value + excluded.value RETURNING c.value;
INSERT INTO users (email, name) VALUES ($1, $2) ON CONFLICT (email) DO UPDATE SET name = EXCLUDED.name, updated_at = now() WHERE users.name IS DISTINCT FROM EXCLUDED.name;
INSERT INTO users (email, name) VALUES ($1, $2) ON CONFLICT ON CONSTRAINT users_email_key DO UPDATE SET name = EXCLUDED.name;
INSERT INTO users (email, name) VALUES ($1, $2) ON CONFLICT ON CONSTRAINT users_email_key DO NOTHING;
INSERT INTO products (product_no, name, price) VALUES (1, 'Cheese', 9.99) ON CONFLICT (product_no) WHERE price > 0 DO UPDATE SET price = EXCLUDED.price;
INSERT INTO distributors (did, dname) VALUES (5, 'Gizmo Transglobal'), (6, 'Associated Computing, Inc') ON CONFLICT (did) DO UPDATE SET dname = EXCLUDED.dname;
INSERT INTO distributors (did, dname) VALUES (7, 'Redline GmbH') ON CONFLICT (did) DO NOTHING;
INSERT INTO distributors AS d (did, dname) VALUES (8, 'Anvil Distribution') ON CONFLICT (did) DO UPDATE SET dname = EXCLUDED.dname || ' (formerly ' || d.dname || ')' WHERE d.zipcode <> '21201';
INSERT INTO distributors (did, dname) VALUES (10, 'Conrad International') ON CONFLICT (lower(dname)) DO NOTHING;
INSERT INTO inventory (sku, warehouse, qty) VALUES ($1, $2, $3) ON CONFLICT (sku, warehouse) DO UPDATE SET qty = inventory.qty + EXCLUDED.qty, updated_at = now();
INSERT INTO kv (k, v) VALUES ('a', '1'), ('b', '2') ON CONFLICT (k) DO UPDATE SET (v, updated_at) = (EXCLUDED.v, now());
INSERT INTO kv (k, v) VALUES ('c', '3') ON CONFLICT (k) DO UPDATE SET v = (SELECT max(v) FROM kv_defaults) RETURNING k, v;
INSERT INTO orders (id, user_id, total_cents) OVERRIDING SYSTEM VALUE VALUES (1, 1, 1000);
INSERT INTO orders (id, user_id, total_cents) OVERRIDING USER VALUE VALUES (1, 1, 1000);
INSERT INTO accounts (id, owner_id) OVERRIDING SYSTEM VALUE SELECT id, owner_id FROM old_accounts;
INSERT INTO events (payload, tags) VALUES ('{"type": "click", "x": 10}'::jsonb, ARRAY['ui', 'click']);
INSERT INTO events (payload, tags, occurred_at) VALUES (jsonb_build_object('type', 'view'), '{web,view}', '2024-05-01T10:00:00Z') RETURNING id;
INSERT INTO line_items (order_id, line_no, sku, qty, price_cents) SELECT $1, ordinality, sku, qty, price FROM unnest($2::text[], $3::int[], $4::int[]) WITH ORDINALITY AS t(sku, qty, price);
INSERT INTO users (email) SELECT unnest(ARRAY['x@a.com', 'y@a.com', 'z@a.com']);
INSERT INTO measurements (ts, value) SELECT g, random() * 100 FROM generate_series(now() - interval '1 day', now(), interval '1 minute') AS g;
INSERT INTO t (a, b) VALUES (1, (SELECT max(b) FROM t2));
INSERT INTO t (a) VALUES (1) RETURNING a AS inserted_a, a * 2 AS doubled;
INSERT INTO users (email, name) VALUES ('g@example.com', 'G') RETURNING old.*, new.*;
INSERT INTO counters (key, value) VALUES ('k', 1) ON CONFLICT (key) DO UPDATE SET value = counters.value + 1 RETURNING old.value AS old_value, new.value AS new_value;
INSERT INTO counters (key, value) VALUES ('k2', 5) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value RETURNING WITH (OLD AS o, NEW AS n) o.value, n.value;
INSERT INTO counters (key, value) VALUES ('k3', 7) ON CONFLICT (key) DO UPDATE SET value = 0 RETURNING WITH (OLD AS before) before.*, counters.*;
INSERT INTO "Users" ("Email", "Name") VALUES ('h@example.com', 'H');
INSERT INTO t1 (c1, c2) TABLE t2;
INSERT INTO t1 VALUES (1, 'a') , (2, 'b');
INSERT INTO weather VALUES ('San Francisco', 46, 50, 0.25, '1994-11-27');
INSERT INTO weather (city, temp_lo, temp_hi, prcp, date) VALUES ('San Francisco', 43, 57, 0.0, '1994-11-29');
INSERT INTO weather (date, city, temp_hi, temp_lo) VALUES ('1994-11-29', 'Hayward', 54, 37);
INSERT INTO films (code, title, did, date_prod, kind) VALUES ('T_601', 'Yojimbo', 106, DEFAULT, 'Drama');
INSERT INTO films SELECT * FROM tmp_films WHERE date_prod < '2004-05-07';
INSERT INTO tictactoe (game, board[1:3][1:3]) VALUES (1, '{{" "," "," "},{" "," "," "},{" "," "," "}}');
INSERT INTO tictactoe (game, board) VALUES (2, '{{X," "," "},{" ",O," "},{" ",X," "}}');
INSERT INTO addresses (id, addr.street, addr.city) VALUES (1, 'Main St', 'Springfield');
INSERT INTO jsontab (doc) VALUES (json_object('a' VALUE 1, 'b' VALUE 'x'));

-- UPDATE
UPDATE users SET name = 'Alice Smith' WHERE id = 1;
UPDATE users SET name = $1 WHERE id = $2;
UPDATE users SET name = $1, updated_at = now() WHERE id = $2 RETURNING *;
UPDATE users SET email = lower(email);
UPDATE ONLY users SET active = false WHERE last_login < now() - interval '90 days';
UPDATE users AS u SET last_login = now() WHERE u.id = $1 RETURNING u.id, u.last_login;
UPDATE accounts SET balance = balance - 100.00 WHERE id = 1;
UPDATE accounts SET balance = balance + 100.00 WHERE id = 2 RETURNING balance;
UPDATE products SET price = price * 1.10 WHERE price <= 99.99 RETURNING name, price AS new_price;
UPDATE orders SET status = 'shipped', shipped_at = now() FROM shipments s WHERE s.order_id = orders.id AND s.dispatched;
UPDATE orders o SET status = 'cancelled' FROM users u WHERE u.id = o.user_id AND u.deleted_at IS NOT NULL RETURNING o.id;
UPDATE employees SET sales_count = sales_count + 1 FROM accounts WHERE accounts.name = 'Acme Corporation' AND employees.id = accounts.sales_person;
UPDATE employees SET sales_count = sales_count + 1 WHERE id = (SELECT sales_person FROM accounts WHERE name = 'Acme Corporation');
UPDATE accounts SET (contact_first_name, contact_last_name) = (SELECT first_name, last_name FROM employees WHERE employees.id = accounts.sales_person);
UPDATE accounts SET contact_first_name = first_name, contact_last_name = last_name FROM employees WHERE employees.id = accounts.sales_person;
UPDATE summary s SET (sum_x, sum_y, avg_x, avg_y) = (SELECT sum(x), sum(y), avg(x), avg(y) FROM data d WHERE d.group_id = s.group_id);
UPDATE weather SET temp_hi = temp_hi + 1, temp_lo = temp_lo + 1, prcp = DEFAULT WHERE city = 'San Francisco' AND date = '2003-07-03';
UPDATE weather SET (temp_lo, temp_hi, prcp) = (temp_lo + 1, temp_lo + 15, DEFAULT) WHERE city = 'San Francisco' AND date = '2003-07-03';
UPDATE weather SET (temp_lo, temp_hi) = ROW(10, 20) WHERE city = 'Oakland';
UPDATE films SET kind = 'Dramatic' WHERE CURRENT OF c_films;
UPDATE films SET kind = 'Comedy' WHERE kind = 'Drama' RETURNING old.kind, new.kind;
UPDATE accounts SET balance = balance * 1.01 RETURNING old.balance AS before, new.balance AS after;
UPDATE accounts SET balance = 0 WHERE id = $1 RETURNING WITH (OLD AS o, NEW AS n) o.balance AS old_balance, n.balance AS new_balance;
UPDATE accounts SET balance = balance + $2 WHERE id = $1 RETURNING old.*, new.*;
UPDATE tictactoe SET board[2][2] = 'X' WHERE game = 1;
UPDATE arr_tbl SET vals[1:2] = '{10,20}' WHERE id = 3;
UPDATE addresses SET addr.city = 'Shelbyville' WHERE id = 1;
UPDATE addresses SET addr = ROW('Elm St', 'Springfield', '12345')::address WHERE id = 2;
UPDATE events SET payload = jsonb_set(payload, '{status}', '"done"') WHERE id = $1;
UPDATE events SET payload = payload || '{"seen": true}'::jsonb, tags = array_append(tags, 'seen') WHERE id = ANY($1::uuid[]);
UPDATE events SET payload = payload - 'tmp' WHERE payload ? 'tmp';
UPDATE users SET name = DEFAULT;
UPDATE users SET email = t.email FROM (VALUES (1, 'a@x.com'), (2, 'b@x.com')) AS t(id, email) WHERE users.id = t.id;
UPDATE inventory i SET qty = i.qty - li.qty FROM line_items li JOIN orders o ON o.id = li.order_id WHERE o.id = $1 AND i.sku = li.sku;
UPDATE tasks SET status = 'running', started_at = now() WHERE id = (SELECT id FROM tasks WHERE status = 'queued' ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, payload;
UPDATE t SET c = CASE WHEN c IS NULL THEN 0 ELSE c + 1 END;
UPDATE t SET c = c + 1 WHERE (a, b) IN (SELECT a, b FROM t2);
UPDATE public.t AS x SET c = x.c || '!' WHERE x.id BETWEEN 10 AND 20;
UPDATE sessions SET expires_at = now() + make_interval(mins => 30) WHERE id = $1 AND expires_at > now();

-- DELETE
DELETE FROM users WHERE id = 1;
DELETE FROM users WHERE id = $1;
DELETE FROM users WHERE id = $1 RETURNING *;
DELETE FROM users WHERE id = ANY($1);
DELETE FROM users WHERE id IN (1, 2, 3) RETURNING id, email;
DELETE FROM ONLY users WHERE deleted_at < now() - interval '30 days';
DELETE FROM users;
DELETE FROM sessions WHERE expires_at < now();
DELETE FROM orders o USING users u WHERE o.user_id = u.id AND u.email LIKE '%@spam.example';
DELETE FROM films USING producers WHERE producer_id = producers.id AND producers.name = 'foo';
DELETE FROM films WHERE producer_id IN (SELECT id FROM producers WHERE name = 'foo');
DELETE FROM tasks WHERE status = 'DONE' RETURNING *;
DELETE FROM tasks WHERE CURRENT OF c_tasks;
DELETE FROM user_logs AS dl USING delete_batch AS del WHERE dl.ctid = del.ctid;
DELETE FROM events WHERE ctid IN (SELECT ctid FROM events WHERE occurred_at < $1 LIMIT 10000);
DELETE FROM line_items li USING orders o, users u WHERE li.order_id = o.id AND o.user_id = u.id AND u.id = $1 RETURNING li.*;
DELETE FROM t WHERE NOT EXISTS (SELECT 1 FROM t2 WHERE t2.id = t.id);
DELETE FROM accounts WHERE balance = 0 RETURNING old.id, old.balance;
DELETE FROM accounts WHERE id = $1 RETURNING WITH (OLD AS gone) gone.*;
DELETE FROM queue WHERE id = (SELECT id FROM queue ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING payload;
DELETE FROM duplicates a USING duplicates b WHERE a.id < b.id AND a.key = b.key;
DELETE FROM "public"."Users" WHERE "Id" = $1;

-- Writable CTEs
WITH moved_rows AS (
    DELETE FROM products WHERE "date" >= '2010-10-01' AND "date" < '2010-11-01' RETURNING *
)
INSERT INTO products_log SELECT * FROM moved_rows;
WITH t AS (
    UPDATE products SET price = price * 1.05 RETURNING *
)
SELECT * FROM products;
WITH t AS (
    UPDATE products SET price = price * 1.05 RETURNING *
)
SELECT * FROM t;
WITH new_user AS (
    INSERT INTO users (email, name) VALUES ($1, $2) RETURNING id
)
INSERT INTO accounts (owner_id) SELECT id FROM new_user RETURNING id;
WITH deleted AS (DELETE FROM sessions WHERE expires_at < now() RETURNING user_id)
SELECT user_id, count(*) FROM deleted GROUP BY user_id;
WITH upsert AS (
    UPDATE counters SET value = value + 1 WHERE key = 'x' RETURNING *
)
INSERT INTO counters (key, value) SELECT 'x', 1 WHERE NOT EXISTS (SELECT * FROM upsert);
WITH RECURSIVE included_parts(sub_part, part) AS (
    SELECT sub_part, part FROM parts WHERE part = 'our_product'
  UNION ALL
    SELECT p.sub_part, p.part FROM included_parts pr, parts p WHERE p.part = pr.sub_part
)
DELETE FROM parts WHERE part IN (SELECT part FROM included_parts);
WITH src AS (SELECT id, total_cents FROM orders WHERE status = 'paid')
UPDATE users SET lifetime_value = s.total FROM (SELECT o.user_id, sum(o.total_cents) AS total FROM orders o JOIN src USING (id) GROUP BY o.user_id) s WHERE users.id = s.user_id;
WITH archived AS (
    DELETE FROM orders WHERE created_at < $1 RETURNING *
), items AS (
    DELETE FROM line_items WHERE order_id IN (SELECT id FROM archived) RETURNING *
)
INSERT INTO orders_archive SELECT * FROM archived;
WITH ins AS (
    INSERT INTO tags (name) VALUES ('a'), ('b') ON CONFLICT (name) DO NOTHING RETURNING id, name
)
SELECT id, name FROM ins UNION ALL SELECT id, name FROM tags WHERE name IN ('a', 'b');
WITH batch AS MATERIALIZED (
    SELECT id FROM jobs WHERE state = 'pending' ORDER BY created_at LIMIT 50 FOR UPDATE SKIP LOCKED
)
UPDATE jobs SET state = 'running' FROM batch WHERE jobs.id = batch.id RETURNING jobs.*;
WITH x AS (SELECT 1 AS a) INSERT INTO t (a) SELECT a FROM x;
WITH x AS (SELECT $1::int AS id) DELETE FROM t USING x WHERE t.id = x.id;
WITH x AS (SELECT 2 AS id, 'new' AS v) UPDATE t SET v = x.v FROM x WHERE t.id = x.id RETURNING t.*;

-- More application-style INSERTs
INSERT INTO sessions (id, user_id, expires_at) VALUES ($1, $2, now() + interval '2 weeks');
INSERT INTO sessions (id, user_id, data, expires_at) VALUES (gen_random_uuid(), $1, $2::jsonb, $3) RETURNING id;
INSERT INTO password_resets (user_id, token, created_at) VALUES ($1, encode(gen_random_bytes(32), 'hex'), now());
INSERT INTO page_views (path, referrer, user_agent, viewed_at) VALUES ($1, $2, $3, $4);
INSERT INTO page_views (path, viewed_at) VALUES ('/', now()), ('/about', now()), ('/pricing', now() - interval '5 minutes');
INSERT INTO comments (post_id, author_id, body, parent_id) VALUES (42, 7, 'Great post!', NULL) RETURNING id, created_at;
INSERT INTO follows (follower_id, followee_id) VALUES ($1, $2) ON CONFLICT DO NOTHING;
INSERT INTO likes (user_id, post_id) VALUES ($1, $2) ON CONFLICT (user_id, post_id) DO NOTHING RETURNING 1;
INSERT INTO daily_stats (day, metric, value) VALUES (current_date, 'signups', 1) ON CONFLICT (day, metric) DO UPDATE SET value = daily_stats.value + 1;
INSERT INTO daily_stats (day, metric, value) SELECT date_trunc('day', created_at)::date, 'orders', count(*) FROM orders WHERE created_at >= current_date - 7 GROUP BY 1 ON CONFLICT (day, metric) DO UPDATE SET value = EXCLUDED.value;
INSERT INTO user_settings (user_id, settings) VALUES ($1, '{}') ON CONFLICT (user_id) DO UPDATE SET settings = user_settings.settings || EXCLUDED.settings RETURNING settings;
INSERT INTO rate_limits (key, window_start, hits) VALUES ($1, date_trunc('minute', now()), 1) ON CONFLICT (key, window_start) DO UPDATE SET hits = rate_limits.hits + 1 RETURNING hits;
INSERT INTO schema_migrations (version) VALUES ('20240101120000');
INSERT INTO schema_migrations (version, dirty) VALUES (15, false);
INSERT INTO ar_internal_metadata (key, value, created_at, updated_at) VALUES ('environment', 'production', now(), now()) ON CONFLICT (key) DO NOTHING;
INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('order', $1, 'OrderPlaced', $2::jsonb);
INSERT INTO job_queue (queue, payload, run_at, priority) VALUES ('default', '{"job":"SendEmail","args":[1]}', now(), 0) RETURNING id;
INSERT INTO accounts_ledger (account_id, amount, kind) VALUES (1, -50.00, 'debit'), (2, 50.00, 'credit');
INSERT INTO files (name, content, sha256) VALUES ('a.txt', '\x68656c6c6f'::bytea, digest('hello', 'sha256'));
INSERT INTO metrics (host, ts, cpu, mem) VALUES ('web-1', to_timestamp(1700000000), 0.42, 0.73);
INSERT INTO geo_points (name, location) VALUES ('origin', point(0, 0)), ('somewhere', point(1.5, -2.25));
INSERT INTO ranges (r) VALUES (int4range(1, 10)), ('[2024-01-01,2024-02-01)'::daterange::text);
INSERT INTO ip_allow (net) VALUES ('10.0.0.0/8'::cidr), ('192.168.1.0/24');
INSERT INTO translations (locale, key, value) VALUES ('ja', 'greeting', 'こんにちは'), ('de', 'greeting', 'Grüß Gott');
INSERT INTO t_all_defaults (a, b) VALUES (DEFAULT, DEFAULT);
INSERT INTO big (id) SELECT generate_series(1, 1000000);
INSERT INTO users_copy SELECT * FROM users ON CONFLICT DO NOTHING;
INSERT INTO orders (user_id, total_cents) SELECT id, 0 FROM users WHERE NOT EXISTS (SELECT 1 FROM orders WHERE orders.user_id = users.id);
INSERT INTO nums (n) VALUES (1) RETURNING n, old.n, new.n;
INSERT INTO nums AS target (n) VALUES (2) ON CONFLICT (n) DO UPDATE SET n = target.n + 100 WHERE target.n < 50 RETURNING target.n;
INSERT INTO things (id, name) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name WHERE things.name <> EXCLUDED.name RETURNING (xmax = 0) AS inserted;
INSERT INTO tree (id, parent_id, path) VALUES (5, 2, '1.2.5'::ltree);
INSERT INTO order_events (order_id, kind, at) SELECT id, 'created', created_at FROM orders ORDER BY id OFFSET 100 LIMIT 100;

-- More UPDATEs
UPDATE users SET failed_logins = failed_logins + 1, locked_until = CASE WHEN failed_logins >= 4 THEN now() + interval '15 minutes' END WHERE email = $1;
UPDATE users SET confirmed_at = now(), confirmation_token = NULL WHERE confirmation_token = $1 AND confirmed_at IS NULL RETURNING id;
UPDATE posts SET view_count = view_count + 1 WHERE id = $1;
UPDATE posts SET deleted_at = now() WHERE author_id = $1 AND deleted_at IS NULL;
UPDATE posts SET title = $1, body = $2, updated_at = $3 WHERE id = $4 AND lock_version = $5;
UPDATE comments SET body = '[removed]' WHERE id IN (SELECT comment_id FROM reports GROUP BY comment_id HAVING count(*) > 5);
UPDATE job_queue SET locked_at = now(), locked_by = $1 WHERE id = (SELECT id FROM job_queue WHERE locked_at IS NULL AND run_at <= now() ORDER BY priority, run_at LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING *;
UPDATE job_queue SET attempts = attempts + 1, last_error = $2, run_at = now() + (interval '1 second' * power(2, attempts)) WHERE id = $1;
UPDATE outbox SET published_at = now() WHERE id = ANY($1::bigint[]);
UPDATE inventory SET qty = qty - 1 WHERE sku = $1 AND qty > 0 RETURNING qty;
UPDATE settings SET value = $2 WHERE key = $1 AND value IS DISTINCT FROM $2;
UPDATE users SET tags = array_remove(tags, 'beta') WHERE 'beta' = ANY(tags);
UPDATE users SET preferences = jsonb_set(preferences, '{notifications,email}', 'false', true) WHERE id = $1;
UPDATE users SET preferences = preferences #- '{legacy}' WHERE preferences ? 'legacy';
UPDATE documents SET tsv = to_tsvector('english', coalesce(title, '') || ' ' || coalesce(body, '')) WHERE tsv IS NULL;
UPDATE orders SET total_cents = sub.total FROM (SELECT order_id, sum(qty * price_cents) AS total FROM line_items GROUP BY order_id) AS sub WHERE orders.id = sub.order_id AND orders.total_cents <> sub.total;
UPDATE t1 SET x = t2.x, y = t2.y FROM t2 LEFT JOIN t3 ON t3.id = t2.t3_id WHERE t1.id = t2.id AND t3.id IS NULL;
UPDATE t SET (a, b, c) = (SELECT a, b, c FROM t_src WHERE t_src.id = t.id) WHERE t.id < 100;
UPDATE t SET (a, b) = (1, 2), c = 3;
UPDATE t SET a = DEFAULT, b = NULL, c = 'x' RETURNING *;
UPDATE ONLY parent_tbl SET flag = true;
UPDATE measurement SET peaktemp = peaktemp * 9 / 5 + 32 WHERE logdate >= '2024-01-01' RETURNING city_id, peaktemp;
UPDATE accounts SET balance = balance - $1 WHERE id = $2 AND balance >= $1 RETURNING balance;
UPDATE "users" SET "name" = $1 WHERE "users"."id" = $2;
UPDATE users SET last_seen_at = GREATEST(last_seen_at, $2) WHERE id = $1;
UPDATE counters SET value = value + 1 WHERE key = 'page' RETURNING WITH (NEW AS after) after.value;
UPDATE counters SET value = 0 RETURNING WITH (OLD AS prev, NEW AS cur) prev.key, prev.value, cur.value;
UPDATE products p SET stock = p.stock - s.sold FROM sales_today s WHERE p.id = s.product_id RETURNING old.stock AS before, new.stock AS after, p.id;
UPDATE t SET v = v WHERE false;

-- More DELETEs
DELETE FROM sessions WHERE user_id = $1 AND id <> $2;
DELETE FROM password_resets WHERE created_at < now() - interval '1 hour';
DELETE FROM follows WHERE follower_id = $1 AND followee_id = $2;
DELETE FROM likes WHERE user_id = $1 AND post_id = $2 RETURNING post_id;
DELETE FROM notifications WHERE user_id = $1 AND read_at IS NOT NULL AND read_at < now() - interval '30 days';
DELETE FROM job_queue WHERE id = $1 AND locked_by = $2;
DELETE FROM outbox WHERE published_at IS NOT NULL AND published_at < now() - interval '7 days';
DELETE FROM cart_items ci USING carts c WHERE ci.cart_id = c.id AND c.updated_at < now() - interval '30 days';
DELETE FROM page_views WHERE viewed_at < date_trunc('month', now()) - interval '6 months';
DELETE FROM tags WHERE id NOT IN (SELECT DISTINCT tag_id FROM post_tags);
DELETE FROM tags t WHERE NOT EXISTS (SELECT FROM post_tags pt WHERE pt.tag_id = t.id);
DELETE FROM events WHERE payload @> '{"type": "debug"}';
DELETE FROM measurement WHERE logdate < '2023-01-01' RETURNING tableoid::regclass, *;
DELETE FROM "schema_migrations" WHERE "version" = $1;
DELETE FROM public.t AS x WHERE x.a = 1 AND x.b = 2 OR x.c IS NULL;
DELETE FROM t USING t2 JOIN t3 ON t2.id = t3.id WHERE t.id = t2.id;
DELETE FROM versions WHERE item_type = $1 AND item_id = $2 AND id NOT IN (SELECT id FROM versions WHERE item_type = $1 AND item_id = $2 ORDER BY created_at DESC LIMIT 10);
DELETE FROM t WHERE (a, b) = ($1, $2);
DELETE FROM t WHERE a = $1 RETURNING WITH (OLD AS o) o.a, o.b;
DELETE FROM t WHERE a IS NULL RETURNING old.a, new.a;

-- More writable CTEs
WITH rows AS (
    INSERT INTO orders (user_id, total_cents) VALUES ($1, $2) RETURNING id
)
INSERT INTO line_items (order_id, line_no, sku, qty, price_cents)
SELECT rows.id, 1, $3, $4, $5 FROM rows
RETURNING order_id;
WITH expired AS (
    UPDATE subscriptions SET status = 'expired' WHERE ends_at < now() AND status = 'active' RETURNING user_id
)
INSERT INTO notifications (user_id, kind) SELECT user_id, 'subscription_expired' FROM expired;
WITH d AS (DELETE FROM cart_items WHERE cart_id = $1 RETURNING product_id, qty)
UPDATE inventory i SET reserved = i.reserved - d.qty FROM d WHERE i.product_id = d.product_id;
WITH input(k, v) AS (VALUES ('a', 1), ('b', 2), ('c', 3))
INSERT INTO kv2 (k, v) SELECT k, v FROM input ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;
WITH to_move AS (SELECT id FROM inbox WHERE received_at < $1 LIMIT 500),
moved AS (DELETE FROM inbox WHERE id IN (SELECT id FROM to_move) RETURNING *)
INSERT INTO inbox_archive SELECT * FROM moved;
WITH u AS (
    UPDATE accounts SET balance = balance - 10 WHERE id = 1 RETURNING WITH (OLD AS o, NEW AS n) n.id, o.balance AS before, n.balance AS after
)
SELECT * FROM u;
WITH stats AS NOT MATERIALIZED (SELECT user_id, count(*) AS c FROM orders GROUP BY user_id)
UPDATE users SET order_count = stats.c FROM stats WHERE users.id = stats.user_id;
WITH RECURSIVE descendants AS (
    SELECT id FROM categories WHERE id = $1
    UNION ALL
    SELECT c.id FROM categories c JOIN descendants d ON c.parent_id = d.id
)
UPDATE categories SET archived = true WHERE id IN (SELECT id FROM descendants);
WITH ins AS (INSERT INTO t (a) VALUES (1) RETURNING *), upd AS (UPDATE t2 SET b = 2 RETURNING *), del AS (DELETE FROM t3 RETURNING *)
SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM upd), (SELECT count(*) FROM del);
WITH m AS (
    MERGE INTO stock s USING deliveries d ON s.item_id = d.item_id
    WHEN MATCHED THEN UPDATE SET qty = s.qty + d.qty
    WHEN NOT MATCHED THEN INSERT (item_id, qty) VALUES (d.item_id, d.qty)
    RETURNING merge_action(), s.*
)
SELECT * FROM m;

-- Batch and bulk patterns
INSERT INTO users (id, email) SELECT * FROM unnest($1::bigint[], $2::text[]);
INSERT INTO users (email, name) SELECT email, name FROM json_populate_recordset(NULL::users, $1::json);
INSERT INTO users (email, name) SELECT x.email, x.name FROM jsonb_to_recordset($1::jsonb) AS x(email text, name text);
INSERT INTO audit (actor, action, at) VALUES (current_user, 'login', clock_timestamp());
INSERT INTO audit (actor, action, at, ip) VALUES (session_user, 'logout', statement_timestamp(), inet_client_addr());
INSERT INTO t (id) VALUES (nextval('t_id_seq'));
INSERT INTO t (id) VALUES (nextval('public.t_id_seq'::regclass)) RETURNING currval('t_id_seq');
INSERT INTO t (a, b) SELECT a, b FROM t_staging EXCEPT SELECT a, b FROM t;
INSERT INTO t (a) (SELECT 1 UNION SELECT 2);
INSERT INTO t (a) VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10);
INSERT INTO pairs (l, r) VALUES ($1, $2), ($3, $4), ($5, $6), ($7, $8), ($9, $10), ($11, $12);
INSERT INTO t (created_on) VALUES (CURRENT_DATE), (CURRENT_DATE - 1), (CURRENT_DATE + 1);
INSERT INTO t (a) VALUES (1) ON CONFLICT (a) WHERE a > 0 DO NOTHING;
INSERT INTO t (a, b) VALUES (1, 2) ON CONFLICT (a, b) DO UPDATE SET a = EXCLUDED.a + t.a, b = EXCLUDED.b;
INSERT INTO t (a, b) VALUES (1, 2) ON CONFLICT (a COLLATE "C", b) DO NOTHING;
INSERT INTO t (a, b) VALUES (1, 2) ON CONFLICT (a text_pattern_ops) DO NOTHING;
UPDATE t SET a = a + 1 FROM generate_series(1, 3) AS g(i) WHERE t.id = g.i;
UPDATE t SET a = s.a FROM LATERAL (SELECT max(a) AS a FROM t2 WHERE t2.tid = t.id) s WHERE t.kind = 'x';
UPDATE t SET a = (SELECT a FROM t2 ORDER BY random() LIMIT 1) WHERE a IS NULL;
UPDATE t SET arr = arr || $1::int[] WHERE id = $2;
UPDATE t SET ts = ts AT TIME ZONE 'UTC' WHERE tz_fixed = false;
UPDATE t SET txt = regexp_replace(txt, '\s+', ' ', 'g') WHERE txt ~ '\s{2,}';
UPDATE t SET n = n::numeric(10, 2), m = CAST(m AS integer) WHERE id = 1;
DELETE FROM t WHERE id = ANY(ARRAY[1, 2, 3]);
DELETE FROM t WHERE id = ANY('{4,5,6}'::int[]);
DELETE FROM t WHERE id IN (SELECT unnest($1::int[]));
DELETE FROM t WHERE created_at BETWEEN $1 AND $2 RETURNING id;
DELETE FROM t WHERE t.* IS NULL;
DELETE FROM t* WHERE false;
WITH s AS (SELECT * FROM t_src) INSERT INTO t SELECT * FROM s ON CONFLICT DO NOTHING RETURNING *;
