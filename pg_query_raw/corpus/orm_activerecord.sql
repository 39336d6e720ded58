-- Queries shaped like Ruby on Rails / ActiveRecord (PostgreSQL adapter)
SET client_min_messages TO 'warning';
SET standard_conforming_strings = on;
SET intervalstyle = iso_8601;
SET SESSION timezone TO 'UTC';
SHOW max_identifier_length;
SHOW search_path;
SELECT t.oid, t.typname
FROM pg_type as t
WHERE t.typname IN ('int2', 'int4', 'int8', 'oid', 'float4', 'float8', 'numeric', 'bool', 'timestamp', 'timestamptz');
SELECT t.oid, t.typname, t.typelem, t.typdelim, t.typinput, r.rngsubtype, t.typtype, t.typbasetype
FROM pg_type as t
LEFT JOIN pg_range as r ON oid = rngtypid
WHERE
  t.typname IN ('int2', 'int4', 'int8', 'oid', 'float4', 'float8', 'text', 'varchar', 'char', 'name', 'bpchar', 'bool', 'bit', 'varbit', 'date', 'money', 'bytea', 'point', 'hstore', 'json', 'jsonb', 'cidr', 'inet', 'uuid', 'xml', 'tsvector', 'macaddr', 'citext', 'ltree', 'line', 'lseg', 'box', 'path', 'polygon', 'circle', 'time', 'timestamp', 'timestamptz', 'numeric', 'interval');
SELECT t.oid, t.typname, t.typelem, t.typdelim, t.typinput, r.rngsubtype, t.typtype, t.typbasetype
FROM pg_type as t
LEFT JOIN pg_range as r ON oid = rngtypid
WHERE
  t.typtype IN ('r', 'e', 'd')
  OR t.typinput = 'array_in(cstring,oid,integer)'::regprocedure
  OR t.typelem != 0;
SELECT "schema_migrations"."version" FROM "schema_migrations" ORDER BY "schema_migrations"."version" ASC;
SELECT "ar_internal_metadata"."value" FROM "ar_internal_metadata" WHERE "ar_internal_metadata"."key" = $1 LIMIT $2;
SELECT "ar_internal_metadata".* FROM "ar_internal_metadata" WHERE "ar_internal_metadata"."key" = $1 LIMIT $2;
INSERT INTO "ar_internal_metadata" ("key", "value", "created_at", "updated_at") VALUES ($1, $2, $3, $4) RETURNING "key";
INSERT INTO "schema_migrations" ("version") VALUES ($1) RETURNING "version";
SELECT pg_try_advisory_lock(1932092929);
SELECT pg_advisory_unlock(1932092929);
CREATE TABLE "schema_migrations" ("version" character varying NOT NULL PRIMARY KEY);
CREATE TABLE "ar_internal_metadata" ("key" character varying NOT NULL PRIMARY KEY, "value" character varying, "created_at" timestamp(6) NOT NULL, "updated_at" timestamp(6) NOT NULL);
CREATE TABLE "users" ("id" bigserial primary key, "email" character varying DEFAULT '' NOT NULL, "encrypted_password" character varying DEFAULT '' NOT NULL, "reset_password_token" character varying, "reset_password_sent_at" timestamp(6), "remember_created_at" timestamp(6), "created_at" timestamp(6) NOT NULL, "updated_at" timestamp(6) NOT NULL);
CREATE UNIQUE INDEX "index_users_on_email" ON "users" ("email");
CREATE UNIQUE INDEX "index_users_on_reset_password_token" ON "users" ("reset_password_token");
CREATE TABLE "posts" ("id" bigserial primary key, "title" character varying, "body" text, "user_id" bigint NOT NULL, "published" boolean DEFAULT FALSE, "comments_count" integer DEFAULT 0 NOT NULL, "created_at" timestamp(6) NOT NULL, "updated_at" timestamp(6) NOT NULL, CONSTRAINT "fk_rails_5b5ddfd518"
FOREIGN KEY ("user_id")
  REFERENCES "users" ("id")
);
CREATE INDEX "index_posts_on_user_id" ON "posts" ("user_id");
CREATE INDEX CONCURRENTLY "index_posts_on_created_at" ON "posts" ("created_at");
ALTER TABLE "comments" ADD CONSTRAINT "fk_rails_2fd19c0db7"
FOREIGN KEY ("post_id")
  REFERENCES "posts" ("id")
;
ALTER TABLE "users" ADD "admin" boolean DEFAULT FALSE NOT NULL;
ALTER TABLE "users" ALTER COLUMN "name" TYPE character varying(100);
ALTER TABLE "users" RENAME COLUMN "name" TO "full_name";
ALTER TABLE "users" DROP COLUMN "legacy_id";
ALTER INDEX "index_users_on_name" RENAME TO "index_users_on_full_name";
DROP TABLE "old_things";
SELECT c.relname FROM pg_class c LEFT JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ANY (current_schemas(false)) AND c.relname = 'users' AND c.relkind IN ('r','p');
SELECT c.relname FROM pg_class c LEFT JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ANY (current_schemas(false)) AND c.relkind IN ('r','v','m','p','f');
SELECT a.attname, format_type(a.atttypid, a.atttypmod),
       pg_get_expr(d.adbin, d.adrelid), a.attnotnull, a.atttypid, a.atttypmod,
       c.collname, col_description(a.attrelid, a.attnum) AS comment,
       attidentity AS identity,
       attgenerated as attgenerated
  FROM pg_attribute a
  LEFT JOIN pg_attrdef d ON a.attrelid = d.adrelid AND a.attnum = d.adnum
  LEFT JOIN pg_type t ON a.atttypid = t.oid
  LEFT JOIN pg_collation c ON a.attcollation = c.oid AND a.attcollation <> t.typcollation
 WHERE a.attrelid = '"users"'::regclass
   AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum;
SELECT a.attname
  FROM (
         SELECT indrelid, indkey, generate_subscripts(indkey, 1) idx
           FROM pg_index
          WHERE indrelid = '"users"'::regclass
            AND indisprimary
       ) i
  JOIN pg_attribute a
    ON a.attrelid = i.indrelid
   AND a.attnum = i.indkey[i.idx]
 ORDER BY i.idx;
SELECT attr.attname, nsp.nspname, seq.relname
FROM pg_class      seq,
     pg_attribute  attr,
     pg_depend     dep,
     pg_constraint cons,
     pg_namespace  nsp
WHERE seq.oid           = dep.objid
  AND seq.relkind       = 'S'
  AND attr.attrelid     = dep.refobjid
  AND attr.attnum       = dep.refobjsubid
  AND attr.attrelid     = cons.conrelid
  AND attr.attnum       = cons.conkey[1]
  AND seq.relnamespace  = nsp.oid
  AND cons.contype      = 'p'
  AND dep.classid       = 'pg_class'::regclass
  AND dep.refobjid      = '"users"'::regclass;
SELECT distinct i.relname, d.indisunique, d.indkey, pg_get_indexdef(d.indexrelid), t.oid,
                pg_catalog.obj_description(i.oid, 'pg_class') AS comment, d.indisvalid
FROM pg_class t
INNER JOIN pg_index d ON t.oid = d.indrelid
INNER JOIN pg_class i ON d.indexrelid = i.oid
LEFT JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE i.relkind IN ('i', 'I')
  AND d.indisprimary = 'f'
  AND t.relname = 'users'
  AND n.nspname = ANY (current_schemas(false))
ORDER BY i.relname;
SELECT t2.oid::regclass::text AS to_table, a1.attname AS column, a2.attname AS primary_key, c.conname AS name, c.confupdtype AS on_update, c.confdeltype AS on_delete, c.convalidated AS valid, c.condeferrable AS deferrable, c.condeferred AS deferred, c.conkey, c.confkey, c.conrelid, c.confrelid
FROM pg_constraint c
JOIN pg_class t1 ON c.conrelid = t1.oid
JOIN pg_class t2 ON c.confrelid = t2.oid
JOIN pg_attribute a1 ON a1.attnum = c.conkey[1] AND a1.attrelid = t1.oid
JOIN pg_attribute a2 ON a2.attnum = c.confkey[1] AND a2.attrelid = t2.oid
JOIN pg_namespace t3 ON c.connamespace = t3.oid
WHERE c.contype = 'f'
  AND t1.relname = 'posts'
  AND t3.nspname = ANY (current_schemas(false))
ORDER BY c.conname;
SELECT pg_catalog.obj_description(c.oid, 'pg_class') FROM pg_catalog.pg_class c LEFT JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = 'users' AND c.relkind IN ('r','p') AND n.nspname = ANY (current_schemas(false));
SELECT setval('"users_id_seq"', (SELECT MAX("id") FROM "users"));
SELECT pg_get_serial_sequence('"users"', 'id');
SELECT current_database();
SELECT extname FROM pg_extension;
SELECT conname, pg_get_constraintdef(c.oid, true) AS constraintdef, c.convalidated AS valid FROM pg_constraint c JOIN pg_class t ON c.conrelid = t.oid JOIN pg_namespace n ON n.oid = c.connamespace WHERE c.contype = 'c' AND t.relname = 'users' AND n.nspname = ANY (current_schemas(false));
SELECT type.typname AS name, string_agg(enum.enumlabel, ',' ORDER BY enum.enumsortorder) AS value, n.nspname AS schema FROM pg_enum AS enum JOIN pg_type AS type ON (type.oid = enum.enumtypid) JOIN pg_namespace n ON type.typnamespace = n.oid WHERE n.nspname = ANY (current_schemas(false)) GROUP BY type.OID, n.nspname, type.typname;

-- Finders
SELECT "users".* FROM "users" WHERE "users"."id" = $1 LIMIT $2;
SELECT "users".* FROM "users" WHERE "users"."id" = 1 LIMIT 1;
SELECT "users".* FROM "users" WHERE "users"."email" = $1 LIMIT $2;
SELECT "users".* FROM "users" WHERE LOWER("users"."email") = LOWER($1) LIMIT $2;
SELECT "users".* FROM "users" ORDER BY "users"."id" ASC LIMIT $1;
SELECT "users".* FROM "users" ORDER BY "users"."id" DESC LIMIT $1;
SELECT "users".* FROM "users" WHERE "users"."id" IN ($1, $2, $3);
SELECT "users".* FROM "users" WHERE "users"."id" = $1 LIMIT $2 FOR UPDATE;
SELECT "users".* FROM "users" WHERE "users"."deleted_at" IS NULL;
SELECT "users".* FROM "users" WHERE "users"."deleted_at" IS NULL AND "users"."admin" = $1 ORDER BY "users"."created_at" DESC;
SELECT "users".* FROM "users" WHERE ("users"."role" = $1 OR "users"."admin" = $2);
SELECT "users".* FROM "users" WHERE "users"."created_at" BETWEEN $1 AND $2;
SELECT "users".* FROM "users" WHERE "users"."created_at" >= $1;
SELECT "users".* FROM "users" WHERE "users"."name" ILIKE $1;
SELECT "users".* FROM "users" WHERE (name LIKE '%smith%');
SELECT "users".* FROM "users" WHERE "users"."id" NOT IN ($1, $2);
SELECT "users".* FROM "users" WHERE "users"."manager_id" IS NOT NULL;
SELECT "users".* FROM "users" WHERE "users"."role" != $1;
SELECT "users".* FROM "users" WHERE "users"."id" > $1 ORDER BY "users"."id" ASC LIMIT $2;
SELECT "users"."id" FROM "users" WHERE "users"."id" > $1 ORDER BY "users"."id" ASC LIMIT $2;
SELECT "users"."id" FROM "users" ORDER BY "users"."id" ASC LIMIT $1;
SELECT 1 AS one FROM "users" WHERE "users"."email" = $1 LIMIT $2;
SELECT 1 AS one FROM "users" WHERE "users"."email" = $1 AND "users"."id" != $2 LIMIT $3;
SELECT 1 AS one FROM "users" WHERE LOWER("users"."email") = LOWER($1) AND "users"."id" != $2 LIMIT $3;
SELECT 1 AS one FROM "users" LIMIT $1;
SELECT COUNT(*) FROM "users";
SELECT COUNT(*) FROM "users" WHERE "users"."admin" = $1;
SELECT COUNT(DISTINCT "users"."id") FROM "users" INNER JOIN "posts" ON "posts"."user_id" = "users"."id";
SELECT COUNT(*) AS "count_all", "orders"."status" AS "orders_status" FROM "orders" GROUP BY "orders"."status";
SELECT SUM("orders"."total") FROM "orders" WHERE "orders"."user_id" = $1;
SELECT MAX("orders"."created_at") FROM "orders";
SELECT AVG("reviews"."rating") FROM "reviews" WHERE "reviews"."product_id" = $1;
SELECT "users"."email" FROM "users";
SELECT "users"."id", "users"."email" FROM "users" WHERE "users"."admin" = $1;
SELECT DISTINCT "users"."role" FROM "users";
SELECT "users".* FROM "users" WHERE "users"."id" = $1 LIMIT $2 /*application:Blog,controller:users,action:show*/;
SELECT "posts".* FROM "posts" WHERE "posts"."user_id" = $1;
SELECT "posts".* FROM "posts" WHERE "posts"."user_id" = $1 ORDER BY "posts"."created_at" DESC LIMIT $2 OFFSET $3;
SELECT "posts".* FROM "posts" WHERE "posts"."user_id" IN ($1, $2, $3, $4, $5);
SELECT "comments".* FROM "comments" WHERE "comments"."post_id" IN ($1, $2, $3) ORDER BY "comments"."created_at" ASC;
SELECT "tags".* FROM "tags" INNER JOIN "taggings" ON "tags"."id" = "taggings"."tag_id" WHERE "taggings"."taggable_id" = $1 AND "taggings"."taggable_type" = $2;
SELECT "posts".* FROM "posts" INNER JOIN "users" ON "users"."id" = "posts"."user_id" WHERE "users"."admin" = $1;
SELECT "posts".* FROM "posts" LEFT OUTER JOIN "comments" ON "comments"."post_id" = "posts"."id" WHERE "comments"."id" IS NULL;
SELECT DISTINCT "posts".* FROM "posts" INNER JOIN "comments" ON "comments"."post_id" = "posts"."id" WHERE "comments"."approved" = $1;
SELECT "posts"."id" AS t0_r0, "posts"."title" AS t0_r1, "posts"."body" AS t0_r2, "posts"."user_id" AS t0_r3, "posts"."created_at" AS t0_r4, "posts"."updated_at" AS t0_r5, "comments"."id" AS t1_r0, "comments"."body" AS t1_r1, "comments"."post_id" AS t1_r2 FROM "posts" LEFT OUTER JOIN "comments" ON "comments"."post_id" = "posts"."id" WHERE "posts"."user_id" = $1;
SELECT "users".* FROM "users" WHERE "users"."id" IN (SELECT "posts"."user_id" FROM "posts" WHERE "posts"."published" = $1);
SELECT "users".* FROM "users" WHERE EXISTS (SELECT 1 FROM "posts" WHERE "posts"."user_id" = "users"."id");
SELECT "products".* FROM "products" WHERE "products"."price" >= $1 AND "products"."price" < $2 ORDER BY "products"."price" ASC;
SELECT "products".* FROM "products" WHERE "products"."category_id" = $1 AND "products"."active" = $2 ORDER BY "products"."name" ASC LIMIT $3 OFFSET $4;
SELECT "products".* FROM "products" WHERE "products"."tags" @> $1;
SELECT "products".* FROM "products" WHERE (settings->>'color' = 'red');
SELECT "orders".* FROM "orders" WHERE "orders"."status" IN ($1, $2) AND "orders"."created_at" > $3;
SELECT "orders".* FROM "orders" WHERE "orders"."status" = $1 ORDER BY "orders"."id" ASC LIMIT $2 FOR UPDATE SKIP LOCKED;
SELECT "active_storage_attachments".* FROM "active_storage_attachments" WHERE "active_storage_attachments"."record_id" = $1 AND "active_storage_attachments"."record_type" = $2 AND "active_storage_attachments"."name" = $3 LIMIT $4;
SELECT "active_storage_blobs".* FROM "active_storage_blobs" WHERE "active_storage_blobs"."id" = $1 LIMIT $2;
SELECT "action_text_rich_texts".* FROM "action_text_rich_texts" WHERE "action_text_rich_texts"."record_id" = $1 AND "action_text_rich_texts"."record_type" = $2 AND "action_text_rich_texts"."name" = $3 LIMIT $4;
SELECT "versions".* FROM "versions" WHERE "versions"."item_id" = $1 AND "versions"."item_type" = $2 ORDER BY "versions"."created_at" ASC, "versions"."id" ASC;
SELECT "friendly_id_slugs".* FROM "friendly_id_slugs" WHERE "friendly_id_slugs"."sluggable_type" = $1 AND "friendly_id_slugs"."slug" = $2 LIMIT $3;
SELECT "solid_queue_jobs".* FROM "solid_queue_jobs" WHERE "solid_queue_jobs"."finished_at" IS NULL AND "solid_queue_jobs"."scheduled_at" <= $1 ORDER BY "solid_queue_jobs"."priority" ASC, "solid_queue_jobs"."id" ASC LIMIT $2 FOR UPDATE SKIP LOCKED;
SELECT "good_jobs".* FROM "good_jobs" WHERE "good_jobs"."finished_at" IS NULL AND ("good_jobs"."scheduled_at" <= $1 OR "good_jobs"."scheduled_at" IS NULL) ORDER BY priority DESC NULLS LAST, created_at ASC LIMIT $2;
SELECT "users".* FROM "users" WHERE "users"."confirmation_token" = $1 ORDER BY "users"."id" ASC LIMIT $2;
SELECT "users".* FROM "users" WHERE "users"."id" = $1 ORDER BY "users"."id" ASC LIMIT $2;
SELECT "sessions".* FROM "sessions" WHERE "sessions"."session_id" = $1 LIMIT $2;
SELECT "users".* FROM "users" ORDER BY "users"."id" ASC LIMIT $1 OFFSET $2;
SELECT "users".* FROM "users" WHERE "users"."account_id" = $1 AND "users"."id" = $2 LIMIT $3;

-- Writes
INSERT INTO "users" ("email", "encrypted_password", "created_at", "updated_at") VALUES ($1, $2, $3, $4) RETURNING "id";
INSERT INTO "posts" ("title", "body", "user_id", "created_at", "updated_at") VALUES ($1, $2, $3, $4, $5) RETURNING "id";
INSERT INTO "comments" ("body", "post_id", "created_at", "updated_at") VALUES ($1, $2, $3, $4) RETURNING "id";
INSERT INTO "taggings" ("tag_id", "taggable_type", "taggable_id", "created_at") VALUES ($1, $2, $3, $4) RETURNING "id";
INSERT INTO "users" ("email","name","created_at","updated_at") VALUES ('a@example.com', 'A', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP), ('b@example.com', 'B', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP) ON CONFLICT  DO NOTHING RETURNING "id";
INSERT INTO "users" ("email","name","created_at","updated_at") VALUES ('a@example.com', 'A', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP) ON CONFLICT ("email") DO UPDATE SET updated_at=(CASE WHEN ("users"."name" IS NOT DISTINCT FROM excluded."name") THEN "users".updated_at ELSE CURRENT_TIMESTAMP END),"name"=excluded."name" RETURNING "id";
INSERT INTO "products" ("sku","price","created_at","updated_at") VALUES ('SKU-1', 9.99, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP) ON CONFLICT ("sku") DO UPDATE SET "price"=excluded."price" RETURNING "id";
INSERT INTO "events" ("name","payload","created_at","updated_at") VALUES ('signup', '{"plan":"pro"}', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP);
UPDATE "users" SET "name" = $1, "updated_at" = $2 WHERE "users"."id" = $3;
UPDATE "users" SET "updated_at" = $1 WHERE "users"."id" = $2;
UPDATE "users" SET "sign_in_count" = $1, "current_sign_in_at" = $2, "last_sign_in_at" = $3, "current_sign_in_ip" = $4, "last_sign_in_ip" = $5, "updated_at" = $6 WHERE "users"."id" = $7;
UPDATE "posts" SET "comments_count" = COALESCE("comments_count", 0) + $1 WHERE "posts"."id" = $2;
UPDATE "posts" SET "comments_count" = COALESCE("comments_count", 0) - $1 WHERE "posts"."id" = $2;
UPDATE "posts" SET "views" = COALESCE("views", 0) + 1, "updated_at" = '2024-05-01 12:00:00.123456' WHERE "posts"."id" = 42;
UPDATE "posts" SET "published" = $1 WHERE "posts"."user_id" = $2;
UPDATE "posts" SET "title" = $1, "lock_version" = $2, "updated_at" = $3 WHERE "posts"."id" = $4 AND "posts"."lock_version" = $5;
UPDATE "users" SET "deleted_at" = $1 WHERE "users"."id" IN (SELECT "users"."id" FROM "users" WHERE "users"."last_sign_in_at" < $2);
DELETE FROM "users" WHERE "users"."id" = $1;
DELETE FROM "comments" WHERE "comments"."post_id" = $1;
DELETE FROM "taggings" WHERE "taggings"."taggable_id" = $1 AND "taggings"."taggable_type" = $2;
DELETE FROM "sessions" WHERE "sessions"."updated_at" < $1;
DELETE FROM "schema_migrations" WHERE "schema_migrations"."version" = $1;

-- Transactions as issued by ActiveRecord
BEGIN ISOLATION LEVEL READ COMMITTED;
SAVEPOINT active_record_1;
RELEASE SAVEPOINT active_record_1;
ROLLBACK TO SAVEPOINT active_record_1;
SAVEPOINT active_record_2;
RELEASE SAVEPOINT active_record_2;
