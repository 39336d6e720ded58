-- MERGE
MERGE INTO customer_account ca
USING recent_transactions t
ON t.customer_id = ca.customer_id
WHEN MATCHED THEN
  UPDATE SET balance = balance + transaction_value
WHEN NOT MATCHED THEN
  INSERT (customer_id, balance)
  VALUES (t.customer_id, t.transaction_value);
MERGE INTO customer_account ca
USING (SELECT customer_id, transaction_value FROM recent_transactions) AS t
ON t.customer_id = ca.customer_id
WHEN MATCHED THEN
  UPDATE SET balance = balance + transaction_value
WHEN NOT MATCHED THEN
  INSERT (customer_id, balance)
  VALUES (t.customer_id, t.transaction_value);
MERGE INTO wines w
USING wine_stock_changes s
ON s.winename = w.winename
WHEN NOT MATCHED AND s.stock_delta > 0 THEN
  INSERT VALUES(s.winename, s.stock_delta)
WHEN MATCHED AND w.stock + s.stock_delta > 0 THEN
  UPDATE SET stock = w.stock + s.stock_delta
WHEN MATCHED THEN
  DELETE
RETURNING merge_action(), w.*;
MERGE INTO wines w
USING new_wine_list s
ON s.winename = w.winename
WHEN NOT MATCHED BY TARGET THEN
  INSERT VALUES(s.winename, s.stock)
WHEN MATCHED AND w.stock != s.stock THEN
  UPDATE SET stock = s.stock
WHEN NOT MATCHED BY SOURCE THEN
  DELETE;
MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN DO NOTHING;
MERGE INTO target t USING source s ON t.id = s.id WHEN NOT MATCHED THEN DO NOTHING;
MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN DELETE;
MERGE INTO target t USING source s ON t.id = s.id WHEN NOT MATCHED THEN INSERT DEFAULT VALUES;
MERGE INTO target t USING source s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, val) VALUES (s.id, DEFAULT);
MERGE INTO target t USING source s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, val) OVERRIDING SYSTEM VALUE VALUES (s.id, s.val);
MERGE INTO target t USING source s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, val) OVERRIDING USER VALUE VALUES (s.id, s.val);
MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN UPDATE SET val = s.val, updated_at = now();
MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN UPDATE SET (val, note) = (s.val, s.note);
MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN UPDATE SET (val, note) = (SELECT v, n FROM lookup WHERE lookup.id = s.id);
MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED AND s.deleted THEN DELETE WHEN MATCHED THEN UPDATE SET val = s.val WHEN NOT MATCHED AND NOT s.deleted THEN INSERT (id, val) VALUES (s.id, s.val);
MERGE INTO target AS t USING source AS s ON (t.id = s.id) WHEN MATCHED THEN UPDATE SET val = s.val RETURNING t.id, merge_action() AS action;
MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN UPDATE SET val = s.val WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.val) RETURNING *;
MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN UPDATE SET val = s.val RETURNING old.val AS old_val, new.val AS new_val, merge_action();
MERGE INTO target t USING source s ON t.id = s.id WHEN MATCHED THEN DELETE RETURNING WITH (OLD AS o, NEW AS n) o.*, n.*, merge_action();
MERGE INTO target t USING source s ON t.id = s.id WHEN NOT MATCHED BY SOURCE AND t.val > 0 THEN UPDATE SET val = 0;
MERGE INTO target t USING source s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DO NOTHING;
MERGE INTO target t USING source s ON t.id = s.id WHEN NOT MATCHED BY TARGET AND s.val IS NOT NULL THEN INSERT (id, val) VALUES (s.id, s.val);
MERGE INTO ONLY target t USING source s ON t.id = s.id WHEN MATCHED THEN DELETE;
MERGE INTO public.target USING public.source ON target.id = source.id WHEN MATCHED THEN UPDATE SET val = source.val;
MERGE INTO target t USING (VALUES (1, 'a'), (2, 'b'), (3, 'c')) AS s(id, val) ON t.id = s.id WHEN MATCHED THEN UPDATE SET val = s.val WHEN NOT MATCHED THEN INSERT (id, val) VALUES (s.id, s.val);
MERGE INTO target t USING (SELECT $1::int AS id, $2::text AS val) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET val = s.val WHEN NOT MATCHED THEN INSERT (id, val) VALUES (s.id, s.val);
MERGE INTO target t USING (SELECT unnest($1::int[]) AS id, unnest($2::text[]) AS val) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET val = s.val WHEN NOT MATCHED THEN INSERT (id, val) VALUES (s.id, s.val);
MERGE INTO target t USING source s ON t.id = s.id AND t.tenant_id = s.tenant_id WHEN MATCHED THEN UPDATE SET val = s.val;
MERGE INTO target t USING source s JOIN extra e ON e.sid = s.id ON t.id = s.id WHEN MATCHED THEN UPDATE SET val = e.val;
MERGE INTO target t USING (source s LEFT JOIN extra e ON e.sid = s.id) ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, val) VALUES (s.id, coalesce(e.val, 'none'));
WITH src AS (SELECT id, val FROM staging WHERE batch_id = $1)
MERGE INTO target t USING src s ON t.id = s.id
WHEN MATCHED THEN UPDATE SET val = s.val
WHEN NOT MATCHED THEN INSERT (id, val) VALUES (s.id, s.val);
WITH RECURSIVE tree AS (SELECT id, parent_id FROM nodes WHERE id = 1 UNION ALL SELECT n.id, n.parent_id FROM nodes n JOIN tree ON n.parent_id = tree.id)
MERGE INTO node_flags f USING tree ON f.node_id = tree.id WHEN MATCHED THEN UPDATE SET flagged = true WHEN NOT MATCHED THEN INSERT (node_id, flagged) VALUES (tree.id, true);
MERGE INTO inventory i
USING (SELECT product_id, sum(qty) AS qty FROM order_lines WHERE order_id = $1 GROUP BY product_id) ol
ON i.product_id = ol.product_id
WHEN MATCHED AND i.qty >= ol.qty THEN UPDATE SET qty = i.qty - ol.qty
WHEN MATCHED THEN UPDATE SET qty = 0, backordered = backordered + (ol.qty - i.qty)
RETURNING i.product_id, i.qty, merge_action();
MERGE INTO daily_totals d
USING (SELECT current_date AS day, $1::text AS metric, $2::bigint AS amount) s
ON d.day = s.day AND d.metric = s.metric
WHEN MATCHED THEN UPDATE SET amount = d.amount + s.amount
WHEN NOT MATCHED THEN INSERT (day, metric, amount) VALUES (s.day, s.metric, s.amount);
MERGE INTO users u
USING import_users iu
ON u.email = iu.email
WHEN MATCHED AND iu.deleted THEN DELETE
WHEN MATCHED AND (u.name, u.phone) IS DISTINCT FROM (iu.name, iu.phone) THEN UPDATE SET name = iu.name, phone = iu.phone, updated_at = now()
WHEN MATCHED THEN DO NOTHING
WHEN NOT MATCHED AND NOT iu.deleted THEN INSERT (email, name, phone) VALUES (iu.email, iu.name, iu.phone)
WHEN NOT MATCHED BY SOURCE AND u.source = 'import' THEN UPDATE SET active = false;
MERGE INTO accounts a
USING transfers t
ON a.id = t.account_id
WHEN MATCHED THEN UPDATE SET balance = a.balance + t.amount
RETURNING merge_action() AS action, old.balance AS prev_balance, new.balance AS balance, t.id AS transfer_id;
MERGE INTO products p
USING price_updates pu ON p.sku = pu.sku
WHEN MATCHED AND pu.price IS NULL THEN DELETE
WHEN MATCHED THEN UPDATE SET price = pu.price
WHEN NOT MATCHED THEN INSERT (sku, price) VALUES (pu.sku, pu.price)
RETURNING WITH (OLD AS before, NEW AS after) merge_action(), before.price, after.price, coalesce(after.sku, before.sku);
MERGE INTO sessions s USING (VALUES ($1::uuid, $2::bigint, $3::timestamptz)) AS v(id, user_id, expires_at) ON s.id = v.id WHEN MATCHED THEN UPDATE SET expires_at = v.expires_at WHEN NOT MATCHED THEN INSERT (id, user_id, expires_at) VALUES (v.id, v.user_id, v.expires_at);
MERGE INTO kv USING (SELECT 'key1' AS k, 'v1' AS v) src ON kv.k = src.k WHEN MATCHED THEN UPDATE SET v = src.v WHEN NOT MATCHED THEN INSERT (k, v) VALUES (src.k, src.v);
MERGE INTO t USING s ON t.a = s.a WHEN MATCHED AND t.b < s.b THEN UPDATE SET b = s.b;
MERGE INTO t USING s ON t.a = s.a WHEN MATCHED AND t.b >= s.b THEN DO NOTHING WHEN MATCHED THEN UPDATE SET b = s.b;
MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN UPDATE SET b = DEFAULT;
MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN UPDATE SET arr[1] = s.v;
MERGE INTO t USING s ON t.a = s.a WHEN MATCHED THEN UPDATE SET comp.f1 = s.v;
MERGE INTO t USING s ON true WHEN NOT MATCHED THEN INSERT VALUES (s.a, s.b);
MERGE INTO t USING s ON false WHEN NOT MATCHED BY SOURCE THEN DELETE WHEN NOT MATCHED BY TARGET THEN INSERT VALUES (s.a, s.b);
MERGE INTO t USING (SELECT * FROM s WHERE s.ts > now() - interval '1 hour') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET ts = s.ts;
MERGE INTO t USING generate_series(1, 10) AS g(i) ON t.id = g.i WHEN NOT MATCHED THEN INSERT (id) VALUES (g.i);
MERGE INTO t USING LATERAL (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE;
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v RETURNING t.id, t.v, s.v AS src_v;
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE RETURNING merge_action(), old.id;
MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v) RETURNING new.id, new.v;
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND merge_flag THEN UPDATE SET v = v + 1 WHEN NOT MATCHED BY SOURCE AND t.v = 0 THEN DELETE RETURNING *;
MERGE INTO "Target" AS "T" USING "Source" AS "S" ON "T"."Id" = "S"."Id" WHEN MATCHED THEN UPDATE SET "Val" = "S"."Val";
MERGE INTO measurement m USING new_measurements n ON m.city_id = n.city_id AND m.logdate = n.logdate WHEN MATCHED THEN UPDATE SET peaktemp = greatest(m.peaktemp, n.peaktemp), unitsales = coalesce(m.unitsales, 0) + coalesce(n.unitsales, 0) WHEN NOT MATCHED THEN INSERT (city_id, logdate, peaktemp, unitsales) VALUES (n.city_id, n.logdate, n.peaktemp, n.unitsales);
MERGE INTO station_data_actual sda
USING station_data_new sdn
ON sda.station_id = sdn.station_id
WHEN MATCHED THEN
  UPDATE SET a = sdn.a, b = sdn.b, updated = DEFAULT
WHEN NOT MATCHED THEN
  INSERT (station_id, a, b)
  VALUES (sdn.station_id, sdn.a, sdn.b);
MERGE INTO cust_account ca USING (SELECT customer_id, sum(amount) AS total FROM txns WHERE processed = false GROUP BY customer_id) t ON ca.customer_id = t.customer_id WHEN MATCHED THEN UPDATE SET balance = ca.balance + t.total, last_txn = now() WHEN NOT MATCHED THEN INSERT (customer_id, balance, last_txn) VALUES (t.customer_id, t.total, now());
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.op = 'D' THEN DELETE WHEN MATCHED AND s.op = 'U' THEN UPDATE SET v = s.v WHEN NOT MATCHED AND s.op = 'I' THEN INSERT (id, v) VALUES (s.id, s.v) WHEN NOT MATCHED THEN DO NOTHING;
MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = (SELECT max(v) FROM s2 WHERE s2.id = s.id);
MERGE INTO t USING s ON t.id = s.id AND s.v > (SELECT avg(v) FROM s) WHEN MATCHED THEN DELETE;
MERGE INTO t AS tgt USING s AS src ON tgt.k = src.k WHEN NOT MATCHED BY SOURCE THEN UPDATE SET stale = true RETURNING merge_action(), tgt.k;
MERGE INTO t USING (SELECT $1::bigint AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET hits = t.hits + 1 WHEN NOT MATCHED THEN INSERT (id, hits) VALUES (s.id, 1) RETURNING t.hits;
EXPLAIN MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE;
PREPARE merge_plan (int, text) AS MERGE INTO t USING (SELECT $1 AS id, $2 AS v) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v);
