-- Queries shaped like the Django ORM (django.db.backends.postgresql)
SELECT set_config('TimeZone', 'UTC', false);
SELECT set_config('TimeZone', $1, false);
SELECT "auth_user"."id", "auth_user"."password", "auth_user"."last_login", "auth_user"."is_superuser", "auth_user"."username", "auth_user"."first_name", "auth_user"."last_name", "auth_user"."email", "auth_user"."is_staff", "auth_user"."is_active", "auth_user"."date_joined" FROM "auth_user" WHERE "auth_user"."id" = 1 LIMIT 21;
SELECT "auth_user"."id", "auth_user"."password", "auth_user"."last_login", "auth_user"."is_superuser", "auth_user"."username", "auth_user"."first_name", "auth_user"."last_name", "auth_user"."email", "auth_user"."is_staff", "auth_user"."is_active", "auth_user"."date_joined" FROM "auth_user" WHERE "auth_user"."id" = $1 LIMIT 21;
SELECT "auth_user"."id", "auth_user"."password", "auth_user"."last_login", "auth_user"."is_superuser", "auth_user"."username", "auth_user"."first_name", "auth_user"."last_name", "auth_user"."email", "auth_user"."is_staff", "auth_user"."is_active", "auth_user"."date_joined" FROM "auth_user" WHERE "auth_user"."username" = 'admin' LIMIT 21;
SELECT "auth_user"."id", "auth_user"."username", "auth_user"."email" FROM "auth_user" WHERE UPPER("auth_user"."email"::text) = UPPER('Admin@Example.com') LIMIT 21;
SELECT 1 AS "a" FROM "auth_user" WHERE "auth_user"."username" = 'bob' LIMIT 1;
SELECT 1 AS "a" FROM "auth_user" WHERE UPPER("auth_user"."username"::text) = UPPER($1) LIMIT 1;
SELECT COUNT(*) AS "__count" FROM "auth_user";
SELECT COUNT(*) AS "__count" FROM "auth_user" WHERE "auth_user"."is_active";
SELECT COUNT(*) AS "__count" FROM "auth_user" WHERE NOT "auth_user"."is_staff";
SELECT "auth_user"."id" FROM "auth_user" WHERE "auth_user"."is_active" ORDER BY "auth_user"."date_joined" DESC;
SELECT "auth_user"."id", "auth_user"."username" FROM "auth_user" ORDER BY "auth_user"."username" ASC LIMIT 25 OFFSET 50;
UPDATE "auth_user" SET "last_login" = '2024-05-01T12:34:56.789012+00:00'::timestamptz WHERE "auth_user"."id" = 1;
UPDATE "auth_user" SET "last_login" = $1::timestamptz WHERE "auth_user"."id" = $2;
UPDATE "auth_user" SET "password" = 'pbkdf2_sha256$720000$abc$def=', "last_login" = NULL, "is_superuser" = false, "username" = 'bob', "first_name" = '', "last_name" = '', "email" = 'bob@example.com', "is_staff" = false, "is_active" = true, "date_joined" = '2024-01-01T00:00:00+00:00'::timestamptz WHERE "auth_user"."id" = 2;
INSERT INTO "auth_user" ("password", "last_login", "is_superuser", "username", "first_name", "last_name", "email", "is_staff", "is_active", "date_joined") VALUES ('!', NULL, false, 'carol', '', '', 'carol@example.com', false, true, '2024-05-01T00:00:00+00:00'::timestamptz) RETURNING "auth_user"."id";
INSERT INTO "auth_user" ("password", "last_login", "is_superuser", "username", "first_name", "last_name", "email", "is_staff", "is_active", "date_joined") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING "auth_user"."id";
SELECT "django_session"."session_key", "django_session"."session_data", "django_session"."expire_date" FROM "django_session" WHERE ("django_session"."expire_date" > '2024-05-01T12:00:00.000000+00:00'::timestamptz AND "django_session"."session_key" = 'k3y5ess10n') LIMIT 21;
SELECT "django_session"."session_key", "django_session"."session_data", "django_session"."expire_date" FROM "django_session" WHERE ("django_session"."expire_date" > $1::timestamptz AND "django_session"."session_key" = $2) LIMIT 21;
SELECT 1 AS "a" FROM "django_session" WHERE "django_session"."session_key" = 'abc123' LIMIT 1;
INSERT INTO "django_session" ("session_key", "session_data", "expire_date") VALUES ('abc123', 'eyJfYXV0aF91c2VyX2lkIjoiMSJ9:1s2:abc', '2024-05-15T12:00:00+00:00'::timestamptz);
UPDATE "django_session" SET "session_data" = 'e30:1s2:xyz', "expire_date" = '2024-05-15T12:00:00+00:00'::timestamptz WHERE "django_session"."session_key" = 'abc123';
DELETE FROM "django_session" WHERE "django_session"."session_key" IN ('abc123');
DELETE FROM "django_session" WHERE "django_session"."expire_date" < '2024-05-01T00:00:00+00:00'::timestamptz;
SELECT "django_content_type"."id", "django_content_type"."app_label", "django_content_type"."model" FROM "django_content_type" WHERE ("django_content_type"."app_label" = 'auth' AND "django_content_type"."model" = 'user') LIMIT 21;
SELECT "django_content_type"."id", "django_content_type"."app_label", "django_content_type"."model" FROM "django_content_type" WHERE "django_content_type"."app_label" = 'blog';
SELECT "auth_permission"."id", "auth_permission"."name", "auth_permission"."content_type_id", "auth_permission"."codename", "django_content_type"."id", "django_content_type"."app_label", "django_content_type"."model" FROM "auth_permission" INNER JOIN "django_content_type" ON ("auth_permission"."content_type_id" = "django_content_type"."id") ORDER BY "django_content_type"."app_label" ASC, "django_content_type"."model" ASC, "auth_permission"."codename" ASC;
SELECT "auth_permission"."content_type_id", "auth_permission"."codename" FROM "auth_permission" INNER JOIN "django_content_type" ON ("auth_permission"."content_type_id" = "django_content_type"."id") WHERE "auth_permission"."content_type_id" IN (1, 2, 3, 4, 5, 6) ORDER BY "django_content_type"."app_label" ASC, "django_content_type"."model" ASC, "auth_permission"."codename" ASC;
SELECT "django_content_type"."app_label", "auth_permission"."codename" FROM "auth_permission" INNER JOIN "auth_user_user_permissions" ON ("auth_permission"."id" = "auth_user_user_permissions"."permission_id") INNER JOIN "django_content_type" ON ("auth_permission"."content_type_id" = "django_content_type"."id") WHERE "auth_user_user_permissions"."user_id" = 1;
SELECT "django_content_type"."app_label", "auth_permission"."codename" FROM "auth_permission" INNER JOIN "auth_group_permissions" ON ("auth_permission"."id" = "auth_group_permissions"."permission_id") INNER JOIN "auth_group" ON ("auth_group_permissions"."group_id" = "auth_group"."id") INNER JOIN "auth_user_groups" ON ("auth_group"."id" = "auth_user_groups"."group_id") INNER JOIN "django_content_type" ON ("auth_permission"."content_type_id" = "django_content_type"."id") WHERE "auth_user_groups"."user_id" = 1;
INSERT INTO "django_admin_log" ("action_time", "user_id", "content_type_id", "object_id", "object_repr", "action_flag", "change_message") VALUES ('2024-05-01T10:00:00+00:00'::timestamptz, 1, 7, '42', 'Post object (42)', 2, '[{"changed": {"fields": ["Title"]}}]') RETURNING "django_admin_log"."id";
SELECT "django_migrations"."id", "django_migrations"."app", "django_migrations"."name", "django_migrations"."applied" FROM "django_migrations";
INSERT INTO "django_migrations" ("app", "name", "applied") VALUES ('blog', '0001_initial', '2024-05-01T10:00:00.123456+00:00'::timestamptz) RETURNING "django_migrations"."id";
CREATE TABLE "django_migrations" ("id" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY, "app" varchar(255) NOT NULL, "name" varchar(255) NOT NULL, "applied" timestamp with time zone NOT NULL);
CREATE TABLE "blog_post" ("id" bigint NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY, "title" varchar(200) NOT NULL, "slug" varchar(50) NOT NULL UNIQUE, "body" text NOT NULL, "status" varchar(10) NOT NULL, "views" integer NOT NULL CHECK ("views" >= 0), "data" jsonb NOT NULL, "tags" varchar(50)[] NOT NULL, "created_at" timestamp with time zone NOT NULL, "author_id" integer NOT NULL);
ALTER TABLE "blog_post" ADD CONSTRAINT "blog_post_author_id_dd7a8485_fk_auth_user_id" FOREIGN KEY ("author_id") REFERENCES "auth_user" ("id") DEFERRABLE INITIALLY DEFERRED;
CREATE INDEX "blog_post_author_id_dd7a8485" ON "blog_post" ("author_id");
CREATE INDEX "blog_post_slug_b95473f2_like" ON "blog_post" ("slug" varchar_pattern_ops);
CREATE INDEX "blog_post_created_8d4f1f_idx" ON "blog_post" ("created_at" DESC);
ALTER TABLE "blog_post" ADD COLUMN "summary" text DEFAULT '' NOT NULL;
ALTER TABLE "blog_post" ALTER COLUMN "summary" DROP DEFAULT;
ALTER TABLE "blog_post" ALTER COLUMN "title" TYPE varchar(300);
ALTER TABLE "blog_post" ADD CONSTRAINT "blog_post_title_slug_uniq" UNIQUE ("title", "slug");
ALTER TABLE "blog_post" ADD CONSTRAINT "views_positive" CHECK ("views" >= 0);
SET CONSTRAINTS "blog_post_author_id_dd7a8485_fk_auth_user_id" IMMEDIATE;
ALTER TABLE "blog_post" DROP CONSTRAINT "blog_post_author_id_dd7a8485_fk_auth_user_id";
ALTER TABLE "blog_post" RENAME COLUMN "body" TO "content";
ALTER TABLE "blog_post" RENAME TO "blog_article";
DROP INDEX IF EXISTS "blog_post_slug_b95473f2_like";
-- Blog app queries
SELECT "blog_post"."id", "blog_post"."title", "blog_post"."slug", "blog_post"."body", "blog_post"."status", "blog_post"."created_at", "blog_post"."author_id" FROM "blog_post" WHERE "blog_post"."slug" = 'hello-world' LIMIT 21;
SELECT "blog_post"."id", "blog_post"."title", "blog_post"."slug", "blog_post"."created_at", "blog_post"."author_id" FROM "blog_post" WHERE "blog_post"."status" = 'published' ORDER BY "blog_post"."created_at" DESC LIMIT 10;
SELECT "blog_post"."id", "blog_post"."title", "blog_post"."author_id", "auth_user"."id", "auth_user"."username" FROM "blog_post" INNER JOIN "auth_user" ON ("blog_post"."author_id" = "auth_user"."id") WHERE "blog_post"."status" = 'published' ORDER BY "blog_post"."created_at" DESC;
SELECT "blog_post"."id", "blog_post"."title", "blog_post"."category_id", T3."id", T3."name" FROM "blog_post" LEFT OUTER JOIN "blog_category" T3 ON ("blog_post"."category_id" = T3."id") LIMIT 21;
SELECT "blog_comment"."id", "blog_comment"."post_id", "blog_comment"."body" FROM "blog_comment" WHERE "blog_comment"."post_id" IN (1, 2, 3, 4, 5);
SELECT ("blog_post_tags"."post_id") AS "_prefetch_related_val_post_id", "blog_tag"."id", "blog_tag"."name" FROM "blog_tag" INNER JOIN "blog_post_tags" ON ("blog_tag"."id" = "blog_post_tags"."tag_id") WHERE "blog_post_tags"."post_id" IN (1, 2, 3);
SELECT "blog_post"."id", "blog_post"."title" FROM "blog_post" WHERE UPPER("blog_post"."title"::text) LIKE UPPER('%django%');
SELECT "blog_post"."id", "blog_post"."title" FROM "blog_post" WHERE "blog_post"."title"::text LIKE '%Django%';
SELECT "blog_post"."id", "blog_post"."title" FROM "blog_post" WHERE UPPER("blog_post"."title"::text) LIKE UPPER('hello%');
SELECT "blog_post"."id", "blog_post"."title" FROM "blog_post" WHERE "blog_post"."title"::text LIKE '%world';
SELECT "blog_post"."id", "blog_post"."title" FROM "blog_post" WHERE "blog_post"."title"::text ~ '^[A-Z]';
SELECT "blog_post"."id", "blog_post"."title" FROM "blog_post" WHERE "blog_post"."title"::text ~* '^the';
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."created_at" BETWEEN '2024-01-01T00:00:00+00:00'::timestamptz AND '2024-12-31T23:59:59.999999+00:00'::timestamptz;
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."created_at" >= '2024-05-01T00:00:00+00:00'::timestamptz AND "blog_post"."created_at" < '2024-05-02T00:00:00+00:00'::timestamptz;
SELECT "blog_post"."id" FROM "blog_post" WHERE EXTRACT(MONTH FROM "blog_post"."created_at" AT TIME ZONE 'UTC') = 5;
SELECT "blog_post"."id" FROM "blog_post" WHERE EXTRACT(ISODOW FROM "blog_post"."created_at" AT TIME ZONE 'UTC') = 1;
SELECT DATE_TRUNC('month', "blog_post"."created_at" AT TIME ZONE 'UTC') AS "month", COUNT("blog_post"."id") AS "c" FROM "blog_post" GROUP BY 1 ORDER BY 1 ASC;
SELECT DISTINCT DATE_TRUNC('year', "blog_post"."created_at" AT TIME ZONE 'UTC') AS "datefield" FROM "blog_post" WHERE "blog_post"."created_at" IS NOT NULL ORDER BY "datefield" ASC;
SELECT ("blog_post"."created_at" AT TIME ZONE 'UTC')::date AS "day", COUNT(*) AS "n" FROM "blog_post" GROUP BY 1;
SELECT "blog_author"."id", "blog_author"."name", COUNT("blog_post"."id") AS "num_posts" FROM "blog_author" LEFT OUTER JOIN "blog_post" ON ("blog_author"."id" = "blog_post"."author_id") GROUP BY "blog_author"."id" ORDER BY "num_posts" DESC;
SELECT "blog_author"."id", "blog_author"."name", COUNT("blog_post"."id") FILTER (WHERE "blog_post"."status" = 'published') AS "published_count" FROM "blog_author" LEFT OUTER JOIN "blog_post" ON ("blog_author"."id" = "blog_post"."author_id") GROUP BY "blog_author"."id", "blog_author"."name";
SELECT "blog_author"."id", "blog_author"."name", COUNT("blog_post"."id") AS "num_posts" FROM "blog_author" LEFT OUTER JOIN "blog_post" ON ("blog_author"."id" = "blog_post"."author_id") GROUP BY "blog_author"."id" HAVING COUNT("blog_post"."id") > 5;
SELECT SUM("shop_order"."total") AS "total__sum" FROM "shop_order";
SELECT AVG("shop_order"."total") AS "total__avg", MAX("shop_order"."total") AS "total__max", MIN("shop_order"."total") AS "total__min" FROM "shop_order" WHERE "shop_order"."status" = 'paid';
SELECT COALESCE(SUM("shop_orderline"."quantity"), 0) AS "qty" FROM "shop_orderline" WHERE "shop_orderline"."order_id" = 7;
SELECT "blog_post"."id", "blog_post"."title", (SELECT U0."created_at" FROM "blog_comment" U0 WHERE U0."post_id" = ("blog_post"."id") ORDER BY U0."created_at" DESC LIMIT 1) AS "newest_comment" FROM "blog_post";
SELECT "blog_post"."id", "blog_post"."title", EXISTS(SELECT 1 AS "a" FROM "blog_comment" U0 WHERE U0."post_id" = ("blog_post"."id") LIMIT 1) AS "has_comments" FROM "blog_post";
SELECT "blog_post"."id" FROM "blog_post" WHERE EXISTS(SELECT 1 AS "a" FROM "blog_comment" U0 WHERE (U0."approved" AND U0."post_id" = ("blog_post"."id")) LIMIT 1);
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."author_id" IN (SELECT U0."id" FROM "auth_user" U0 WHERE U0."is_staff");
SELECT "blog_post"."id" FROM "blog_post" WHERE NOT ("blog_post"."status" = 'draft');
SELECT "blog_post"."id" FROM "blog_post" WHERE NOT ("blog_post"."category_id" IS NOT NULL AND "blog_post"."category_id" = 3);
SELECT "blog_post"."id" FROM "blog_post" WHERE ("blog_post"."status" = 'published' OR "blog_post"."author_id" = 1);
SELECT "blog_post"."id" FROM "blog_post" WHERE ("blog_post"."status" = 'published' AND ("blog_post"."views" > 100 OR "blog_post"."featured"));
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."id" IN (1, 2, 3) ORDER BY "blog_post"."id" ASC;
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."category_id" IS NULL;
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."views" > ("blog_post"."likes" * 10);
SELECT DISTINCT ON ("blog_post"."author_id") "blog_post"."id", "blog_post"."author_id", "blog_post"."created_at" FROM "blog_post" ORDER BY "blog_post"."author_id" ASC, "blog_post"."created_at" DESC;
SELECT "blog_post"."id", ROW_NUMBER() OVER (PARTITION BY "blog_post"."author_id" ORDER BY "blog_post"."created_at" DESC) AS "rn" FROM "blog_post";
SELECT "blog_post"."id", RANK() OVER (ORDER BY "blog_post"."views" DESC) AS "rank" FROM "blog_post";
SELECT "blog_post"."id", "blog_post"."data" FROM "blog_post" WHERE ("blog_post"."data" -> 'owner') = '"alice"'::jsonb;
SELECT "blog_post"."id" FROM "blog_post" WHERE ("blog_post"."data" #> '{owner,name}') = '"Bob"'::jsonb;
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."data" @> '{"breed": "collie"}'::jsonb;
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."data" ? 'owner';
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."data" ?| ARRAY['owner', 'breed'];
SELECT "blog_post"."id" FROM "blog_post" WHERE ("blog_post"."data" -> 'owner') IS NULL;
SELECT "blog_post"."id" FROM "blog_post" WHERE UPPER(("blog_post"."data" ->> 'name')::text) LIKE UPPER('%rex%');
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."tags" @> ARRAY['django']::varchar(50)[];
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."tags" && ARRAY['python', 'postgres']::varchar(50)[];
SELECT "blog_post"."id" FROM "blog_post" WHERE CARDINALITY("blog_post"."tags") = 2;
SELECT "blog_post"."id" FROM "blog_post" WHERE ("blog_post"."tags")[1] = 'django';
SELECT "blog_post"."id", ts_rank(to_tsvector(COALESCE("blog_post"."body", '')), plainto_tsquery('django')) AS "rank" FROM "blog_post" WHERE to_tsvector(COALESCE("blog_post"."body", '')) @@ (plainto_tsquery('django')) ORDER BY "rank" DESC;
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."search_vector" @@ (websearch_to_tsquery('english'::regconfig, 'django orm'));
SELECT "blog_post"."id", SIMILARITY("blog_post"."title", 'djnago') AS "similarity" FROM "blog_post" WHERE SIMILARITY("blog_post"."title", 'djnago') > 0.3 ORDER BY "similarity" DESC;
SELECT "blog_post"."id", ("blog_post"."views")::varchar AS "views_str", CONCAT("blog_post"."title", CONCAT(' - ', "blog_post"."slug")) AS "label" FROM "blog_post";
SELECT "blog_post"."id", CASE WHEN "blog_post"."views" > 1000 THEN 'hot' WHEN "blog_post"."views" > 100 THEN 'warm' ELSE 'cold' END AS "temperature" FROM "blog_post";
SELECT "blog_post"."id", GREATEST("blog_post"."updated_at", "blog_post"."created_at") AS "last_activity" FROM "blog_post";
SELECT "blog_post"."id", LOWER("blog_post"."title") AS "lower_title", LENGTH("blog_post"."body") AS "body_len" FROM "blog_post";
SELECT "blog_post"."id", "blog_post"."title" FROM "blog_post" ORDER BY "blog_post"."published_at" DESC NULLS LAST, "blog_post"."id" ASC;
SELECT "blog_post"."id", "blog_post"."title" FROM "blog_post" ORDER BY RANDOM() ASC LIMIT 5;
SELECT "blog_post"."id", "blog_post"."title" FROM "blog_post" WHERE "blog_post"."id" = 42 LIMIT 21 FOR UPDATE;
SELECT "blog_post"."id", "blog_post"."title" FROM "blog_post" WHERE "blog_post"."status" = 'queued' LIMIT 10 FOR UPDATE SKIP LOCKED;
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."author_id" = 1 FOR NO KEY UPDATE OF "blog_post";
SELECT "blog_post"."title" FROM "blog_post" UNION SELECT "blog_page"."title" FROM "blog_page" ORDER BY 1 ASC;
SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."author_id" = 1 INTERSECT SELECT "blog_post"."id" FROM "blog_post" WHERE "blog_post"."views" > 10;
INSERT INTO "blog_post" ("title", "slug", "body", "status", "views", "data", "tags", "created_at", "author_id") VALUES ('Hello', 'hello', 'Body', 'draft', 0, '{}'::jsonb, ARRAY['a', 'b']::varchar(50)[], '2024-05-01T10:00:00+00:00'::timestamptz, 1) RETURNING "blog_post"."id";
INSERT INTO "blog_tag" ("name") VALUES ('python'), ('django'), ('postgres') RETURNING "blog_tag"."id";
INSERT INTO "blog_tag" ("name") VALUES ('python'), ('django') ON CONFLICT DO NOTHING;
INSERT INTO "blog_tag" ("name", "uses") VALUES ('python', 1), ('django', 1) ON CONFLICT("name") DO UPDATE SET "uses" = EXCLUDED."uses" RETURNING "blog_tag"."id";
INSERT INTO "blog_post_tags" ("post_id", "tag_id") VALUES (1, 2), (1, 3) ON CONFLICT DO NOTHING;
UPDATE "blog_post" SET "views" = ("blog_post"."views" + 1) WHERE "blog_post"."id" = 3;
UPDATE "blog_post" SET "status" = 'archived' WHERE ("blog_post"."status" = 'published' AND "blog_post"."created_at" < '2023-01-01T00:00:00+00:00'::timestamptz);
UPDATE "blog_post" SET "title" = CASE WHEN ("blog_post"."id" = 1) THEN 'First' WHEN ("blog_post"."id" = 2) THEN 'Second' ELSE NULL END WHERE "blog_post"."id" IN (1, 2);
UPDATE "blog_post" SET "views" = CASE WHEN ("blog_post"."id" = 1) THEN 10 WHEN ("blog_post"."id" = 2) THEN 20 ELSE NULL END::integer WHERE "blog_post"."id" IN (1, 2);
UPDATE "blog_post" SET "author_id" = NULL WHERE "blog_post"."author_id" IN (5);
DELETE FROM "blog_post_tags" WHERE "blog_post_tags"."post_id" IN (1);
DELETE FROM "blog_comment" WHERE "blog_comment"."post_id" IN (1, 2);
DELETE FROM "blog_post" WHERE "blog_post"."id" IN (1, 2);
DELETE FROM "blog_post" WHERE "blog_post"."status" = $1;
-- Savepoints and transaction control as emitted by django.db.transaction.atomic
SAVEPOINT "s140245432_x1";
RELEASE SAVEPOINT "s140245432_x1";
ROLLBACK TO SAVEPOINT "s140245432_x1";
SAVEPOINT "s140245432_x2";
-- Schema introspection (inspectdb / migrate)
SELECT
    c.relname,
    CASE
        WHEN c.relispartition THEN 'p'
        WHEN c.relkind IN ('m', 'v') THEN 'v'
        ELSE 't'
    END,
    obj_description(c.oid, 'pg_class')
FROM pg_catalog.pg_class c
LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('f', 'm', 'p', 'r', 'v')
    AND n.nspname NOT IN ('pg_catalog', 'pg_toast')
    AND pg_catalog.pg_table_is_visible(c.oid);
SELECT
    a.attname AS column_name,
    NOT (a.attnotnull OR (t.typtype = 'd' AND t.typnotnull)) AS is_nullable,
    pg_get_expr(ad.adbin, ad.adrelid) AS column_default,
    CASE WHEN collname = 'default' THEN NULL ELSE collname END AS collation,
    a.attidentity != '' AS is_autofield,
    col_description(a.attrelid, a.attnum) AS column_comment
FROM pg_attribute a
LEFT JOIN pg_attrdef ad ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
LEFT JOIN pg_collation co ON a.attcollation = co.oid
JOIN pg_type t ON a.atttypid = t.oid
JOIN pg_class c ON a.attrelid = c.oid
JOIN pg_namespace n ON c.relnamespace = n.oid
WHERE c.relkind IN ('f', 'm', 'p', 'r', 'v')
    AND c.relname = 'blog_post'
    AND n.nspname NOT IN ('pg_catalog', 'pg_toast')
    AND pg_catalog.pg_table_is_visible(c.oid);
SELECT s.relname AS sequence_name, a.attname AS colname
FROM
    pg_class s
    JOIN pg_depend d ON d.objid = s.oid
        AND d.classid = 'pg_catalog.pg_class'::regclass
        AND d.refclassid = 'pg_catalog.pg_class'::regclass
    JOIN pg_attribute a ON d.refobjid = a.attrelid
        AND d.refobjsubid = a.attnum
    JOIN pg_class tbl ON tbl.oid = d.refobjid
        AND tbl.relname = 'blog_post'
        AND pg_catalog.pg_table_is_visible(tbl.oid)
WHERE
    s.relkind = 'S';
SELECT a1.attname, c2.relname, a2.attname
FROM pg_constraint con
LEFT JOIN pg_class c1 ON con.conrelid = c1.oid
LEFT JOIN pg_class c2 ON con.confrelid = c2.oid
LEFT JOIN
    pg_attribute a1 ON c1.oid = a1.attrelid AND a1.attnum = con.conkey[1]
LEFT JOIN
    pg_attribute a2 ON c2.oid = a2.attrelid AND a2.attnum = con.confkey[1]
WHERE
    c1.relname = 'blog_post' AND
    con.contype = 'f' AND
    c1.relnamespace = c2.relnamespace AND
    pg_catalog.pg_table_is_visible(c1.oid);
SELECT
    c.conname,
    array(
        SELECT attname
        FROM unnest(c.conkey) WITH ORDINALITY cols(colid, arridx)
        JOIN pg_attribute AS ca ON cols.colid = ca.attnum
        WHERE ca.attrelid = c.conrelid
        ORDER BY cols.arridx
    ),
    c.contype,
    (SELECT fkc.relname || '.' || fka.attname
    FROM pg_attribute AS fka
    JOIN pg_class AS fkc ON fka.attrelid = fkc.oid
    WHERE fka.attrelid = c.confrelid AND fka.attnum = c.confkey[1]),
    cl.reloptions
FROM pg_constraint AS c
JOIN pg_class AS cl ON c.conrelid = cl.oid
WHERE cl.relname = 'blog_post' AND pg_catalog.pg_table_is_visible(cl.oid);
SELECT
    indexname,
    array_agg(attname ORDER BY arridx),
    indisunique,
    indisprimary,
    array_agg(ordering ORDER BY arridx),
    amname,
    exprdef,
    s2.attoptions
FROM (
    SELECT
        c2.relname as indexname, idx.*, attr.attname, am.amname,
        CASE
            WHEN idx.indexprs IS NOT NULL THEN
                pg_get_indexdef(idx.indexrelid)
        END AS exprdef,
        CASE am.amname
            WHEN 'btree' THEN
                CASE (option & 1)
                    WHEN 1 THEN 'DESC' ELSE 'ASC'
                END
        END as ordering,
        c2.reloptions as attoptions
    FROM (
        SELECT *
        FROM
            pg_index i,
            unnest(i.indkey, i.indoption)
                WITH ORDINALITY koi(key, option, arridx)
    ) idx
    LEFT JOIN pg_class c ON idx.indrelid = c.oid
    LEFT JOIN pg_class c2 ON idx.indexrelid = c2.oid
    LEFT JOIN pg_am am ON c2.relam = am.oid
    LEFT JOIN
        pg_attribute attr ON attr.attrelid = c.oid AND attr.attnum = idx.key
    WHERE c.relname = 'blog_post' AND pg_catalog.pg_table_is_visible(c.oid)
) s2
GROUP BY indexname, indisunique, indisprimary, amname, exprdef, attoptions;
SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'hstore';
SELECT typarray FROM pg_type WHERE typname = 'citext';
SELECT t.oid, typarray FROM pg_type t JOIN pg_namespace ns ON typnamespace = ns.oid WHERE typname = 'hstore';
