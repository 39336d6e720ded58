-- Queries shaped like Prisma Client / Prisma Migrate (postgresql provider)
SELECT "public"."User"."id", "public"."User"."email", "public"."User"."name" FROM "public"."User" WHERE 1=1 OFFSET $1;
SELECT "public"."User"."id", "public"."User"."email", "public"."User"."name" FROM "public"."User" WHERE "public"."User"."id" = $1 LIMIT $2 OFFSET $3;
SELECT "public"."User"."id", "public"."User"."email", "public"."User"."name" FROM "public"."User" WHERE ("public"."User"."email" = $1 AND 1=1) LIMIT $2 OFFSET $3;
SELECT "public"."User"."id", "public"."User"."email", "public"."User"."name", "public"."User"."role"::text, "public"."User"."createdAt", "public"."User"."updatedAt" FROM "public"."User" WHERE "public"."User"."id" = $1 LIMIT $2 OFFSET $3;
SELECT "public"."User"."id", "public"."User"."email", "public"."User"."profile"::jsonb, "public"."User"."tags"::text[] FROM "public"."User" WHERE 1=1 ORDER BY "public"."User"."id" ASC LIMIT $1 OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE "public"."User"."id" IN ($1,$2,$3) OFFSET $4;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE "public"."User"."id" IN ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10) OFFSET $11;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE "public"."User"."id" NOT IN ($1,$2) OFFSET $3;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."email"::text LIKE $1 AND 1=1) OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE "public"."User"."email"::text ILIKE $1 OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."name"::text LIKE $1 OR "public"."User"."email"::text LIKE $2) OFFSET $3;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."name" IS NULL AND "public"."User"."deletedAt" IS NOT NULL) OFFSET $1;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."createdAt" >= $1 AND "public"."User"."createdAt" < $2) ORDER BY "public"."User"."createdAt" DESC LIMIT $3 OFFSET $4;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE NOT "public"."User"."email"::text LIKE $1 OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE (NOT ("public"."User"."role" = CAST($1::text AS "public"."Role"))) OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE "public"."User"."role" = CAST($1::text AS "public"."Role") OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE "public"."User"."role" IN (CAST($1::text AS "public"."Role"),CAST($2::text AS "public"."Role")) OFFSET $3;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE "public"."User"."tags" @> $1 OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE "public"."User"."tags" && $1 OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE $1 = ANY("public"."User"."tags") OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."profile"#>ARRAY[$1]::text[])::jsonb::jsonb = $2 OFFSET $3;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."profile"#>ARRAY[$1, $2]::text[])::jsonb @> $3::jsonb OFFSET $4;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."profile"#>>ARRAY[$1]::text[])::text LIKE $2 OFFSET $3;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE "public"."User"."profile"::jsonb = $1::jsonb OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."id") IN (SELECT "t1"."authorId" FROM "public"."Post" AS "t1" WHERE ("t1"."published" = $1 AND "t1"."authorId" IS NOT NULL)) OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."id") NOT IN (SELECT "t1"."authorId" FROM "public"."Post" AS "t1" WHERE ("t1"."published" = $1 AND "t1"."authorId" IS NOT NULL)) OFFSET $2;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."id") NOT IN (SELECT "t1"."authorId" FROM "public"."Post" AS "t1" WHERE ((NOT "t1"."published" = $1) AND "t1"."authorId" IS NOT NULL)) OFFSET $2;
SELECT "public"."Post"."id", "public"."Post"."title", "public"."Post"."authorId" FROM "public"."Post" WHERE "public"."Post"."authorId" IN ($1,$2,$3) OFFSET $4;
SELECT "public"."Post"."id", "public"."Post"."title", "public"."Post"."content", "public"."Post"."published", "public"."Post"."authorId", "public"."Post"."createdAt" FROM "public"."Post" WHERE ("public"."Post"."published" = $1 AND "public"."Post"."authorId" = $2) ORDER BY "public"."Post"."createdAt" DESC LIMIT $3 OFFSET $4;
SELECT "public"."Post"."id", "public"."Post"."title" FROM "public"."Post" LEFT JOIN "public"."User" AS "orderby_1" ON ("orderby_1"."id" = "public"."Post"."authorId") WHERE 1=1 ORDER BY "orderby_1"."name" ASC OFFSET $1;
SELECT "public"."Post"."id", "public"."Post"."title" FROM "public"."Post" LEFT JOIN (SELECT "public"."Comment"."postId", COUNT(*) AS "orderby_aggregator" FROM "public"."Comment" WHERE 1=1 GROUP BY "public"."Comment"."postId") AS "orderby_1" ON ("public"."Post"."id" = "orderby_1"."postId") WHERE 1=1 ORDER BY COALESCE("orderby_1"."orderby_aggregator", $1) DESC OFFSET $2;
SELECT "public"."Post"."id", "public"."Post"."title" FROM "public"."Post", (SELECT "public"."Post"."id" AS "Post_id_0" FROM "public"."Post" WHERE ("public"."Post"."id") = ($1)) AS "order_cmp" WHERE "public"."Post"."id" >= "order_cmp"."Post_id_0" ORDER BY "public"."Post"."id" ASC LIMIT $2 OFFSET $3;
SELECT "public"."Post"."id", "public"."Post"."title" FROM "public"."Post" WHERE "public"."Post"."id" >= (SELECT "public"."Post"."id" FROM "public"."Post" WHERE ("public"."Post"."id") = ($1)) ORDER BY "public"."Post"."id" ASC LIMIT $2 OFFSET $3;
SELECT "public"."_CategoryToPost"."B", "public"."_CategoryToPost"."A" FROM "public"."_CategoryToPost" WHERE "public"."_CategoryToPost"."B" IN ($1,$2);
SELECT "public"."Category"."id", "public"."Category"."name" FROM "public"."Category" WHERE "public"."Category"."id" IN ($1,$2,$3) OFFSET $4;
INSERT INTO "public"."_CategoryToPost" ("A","B") VALUES ($1,$2) ON CONFLICT DO NOTHING;
DELETE FROM "public"."_CategoryToPost" WHERE ("public"."_CategoryToPost"."B" = $1 AND "public"."_CategoryToPost"."A" IN ($2));
SELECT "t1"."id", "t1"."email", "t1"."name", "User_posts"."__prisma_data__" AS "posts" FROM "public"."User" AS "t1" LEFT JOIN LATERAL (SELECT COALESCE(JSONB_AGG("__prisma_data__"), '[]') AS "__prisma_data__" FROM (SELECT "t4"."__prisma_data__" FROM (SELECT JSONB_BUILD_OBJECT('id', "t3"."id", 'title', "t3"."title", 'published', "t3"."published") AS "__prisma_data__" FROM (SELECT "t2".* FROM "public"."Post" AS "t2" WHERE "t1"."id" = "t2"."authorId" /* root select */) AS "t3" /* inner select */) AS "t4" /* middle select */) AS "t5" /* outer select */) AS "User_posts" ON true WHERE "t1"."id" = $1 LIMIT $2;
SELECT "t1"."id", "t1"."title", "Post_author"."__prisma_data__" AS "author" FROM "public"."Post" AS "t1" LEFT JOIN LATERAL (SELECT JSONB_BUILD_OBJECT('id', "t2"."id", 'email', "t2"."email") AS "__prisma_data__" FROM "public"."User" AS "t2" WHERE "t1"."authorId" = "t2"."id" LIMIT $1) AS "Post_author" ON true WHERE "t1"."published" = $2 ORDER BY "t1"."createdAt" DESC LIMIT $3;
SELECT "t1"."id", "t1"."email", COALESCE("aggr_selection_0_Post"."_aggr_count_posts", 0) AS "_aggr_count_posts" FROM "public"."User" AS "t1" LEFT JOIN (SELECT "public"."Post"."authorId", COUNT(*) AS "_aggr_count_posts" FROM "public"."Post" WHERE 1=1 GROUP BY "public"."Post"."authorId") AS "aggr_selection_0_Post" ON ("t1"."id" = "aggr_selection_0_Post"."authorId") WHERE 1=1 OFFSET $1;
SELECT COUNT(*) AS "_count._all" FROM (SELECT "public"."User"."id" FROM "public"."User" WHERE 1=1 OFFSET $1) AS "sub";
SELECT COUNT(*) AS "_count._all" FROM (SELECT "public"."Post"."id" FROM "public"."Post" WHERE "public"."Post"."published" = $1 OFFSET $2) AS "sub";
SELECT COUNT("sub"."title") AS "_count.title", COUNT(*) AS "_count._all" FROM (SELECT "public"."Post"."title" FROM "public"."Post" WHERE 1=1 OFFSET $1) AS "sub";
SELECT AVG("views") AS "_avg.views", SUM("views") AS "_sum.views", MIN("views") AS "_min.views", MAX("views") AS "_max.views" FROM (SELECT "public"."Post"."views" FROM "public"."Post" WHERE 1=1 OFFSET $1) AS "sub";
SELECT "public"."Post"."authorId", COUNT("public"."Post"."id") AS "_count.id", SUM("public"."Post"."views") AS "_sum.views" FROM "public"."Post" WHERE 1=1 GROUP BY "public"."Post"."authorId" OFFSET $1;
SELECT "public"."Post"."authorId", COUNT("public"."Post"."id") AS "_count.id" FROM "public"."Post" WHERE 1=1 GROUP BY "public"."Post"."authorId" HAVING COUNT("public"."Post"."id") > $1 ORDER BY "public"."Post"."authorId" ASC OFFSET $2;
INSERT INTO "public"."User" ("email","name") VALUES ($1,$2) RETURNING "public"."User"."id", "public"."User"."email", "public"."User"."name";
INSERT INTO "public"."User" ("email","name","role","profile","createdAt","updatedAt") VALUES ($1,$2,CAST($3::text AS "public"."Role"),$4,$5,$6) RETURNING "public"."User"."id", "public"."User"."email", "public"."User"."role"::text, "public"."User"."profile";
INSERT INTO "public"."Post" ("title","content","published","authorId") VALUES ($1,$2,$3,$4) RETURNING "public"."Post"."id";
INSERT INTO "public"."Post" ("title","authorId") VALUES ($1,$2), ($3,$4), ($5,$6);
INSERT INTO "public"."Post" ("title","authorId") VALUES ($1,$2), ($3,$4) ON CONFLICT DO NOTHING;
INSERT INTO "public"."Post" ("title","authorId") VALUES ($1,$2), ($3,$4) RETURNING "public"."Post"."id", "public"."Post"."title", "public"."Post"."authorId";
INSERT INTO "public"."User" ("email","name") VALUES ($1,$2) ON CONFLICT ("email") DO UPDATE SET "name" = $3 WHERE ("public"."User"."email" = $4 AND 1=1) RETURNING "public"."User"."id", "public"."User"."email", "public"."User"."name";
INSERT INTO "public"."User" ("email") VALUES ($1) ON CONFLICT ("email") DO NOTHING RETURNING "public"."User"."id", "public"."User"."email";
INSERT INTO "public"."Profile" ("bio","userId") VALUES ($1,$2) RETURNING "public"."Profile"."id";
UPDATE "public"."User" SET "name" = $1 WHERE ("public"."User"."id" = $2 AND 1=1) RETURNING "public"."User"."id", "public"."User"."email", "public"."User"."name";
UPDATE "public"."User" SET "name" = $1, "updatedAt" = $2 WHERE ("public"."User"."id" = $3 AND 1=1);
UPDATE "public"."User" SET "role" = CAST($1::text AS "public"."Role") WHERE ("public"."User"."id" IN ($2,$3) AND 1=1);
UPDATE "public"."User" SET "profile" = $1 WHERE ("public"."User"."id" = $2 AND 1=1) RETURNING "public"."User"."id", "public"."User"."profile"::jsonb;
UPDATE "public"."Post" SET "views" = ("views" + $1) WHERE ("public"."Post"."id" = $2 AND 1=1) RETURNING "public"."Post"."id", "public"."Post"."views";
UPDATE "public"."Post" SET "views" = ("views" * $1), "likes" = ("likes" - $2) WHERE "public"."Post"."authorId" = $3;
UPDATE "public"."Post" SET "published" = $1 WHERE ("public"."Post"."authorId" = $2 AND "public"."Post"."createdAt" < $3);
UPDATE "public"."Post" SET "tags" = array_append("tags", $1) WHERE ("public"."Post"."id" = $2 AND 1=1) RETURNING "public"."Post"."id";
UPDATE "public"."Post" SET "tags" = ("tags" || $1) WHERE ("public"."Post"."id" = $2 AND 1=1);
UPDATE "public"."Post" SET "authorId" = $1 WHERE ("public"."Post"."id" = $2 AND 1=1);
DELETE FROM "public"."User" WHERE ("public"."User"."id" = $1 AND 1=1) RETURNING "public"."User"."id", "public"."User"."email", "public"."User"."name";
DELETE FROM "public"."User" WHERE ("public"."User"."id" = $1 AND 1=1);
DELETE FROM "public"."Post" WHERE "public"."Post"."authorId" IN ($1,$2);
DELETE FROM "public"."Post" WHERE ("public"."Post"."published" = $1 AND "public"."Post"."createdAt" < $2);
DELETE FROM "public"."Session" WHERE "public"."Session"."expires" < $1;
SELECT "public"."Post"."id" FROM "public"."Post" WHERE ("public"."Post"."authorId" = $1 AND 1=1) OFFSET $2;
SELECT "public"."User"."id" FROM "public"."User" WHERE ("public"."User"."id" = $1 AND 1=1) OFFSET $2 FOR UPDATE;
SELECT "public"."Account"."id", "public"."Account"."userId", "public"."Account"."provider", "public"."Account"."providerAccountId" FROM "public"."Account" WHERE ("public"."Account"."provider" = $1 AND "public"."Account"."providerAccountId" = $2) LIMIT $3 OFFSET $4;
SELECT "public"."Session"."id", "public"."Session"."sessionToken", "public"."Session"."userId", "public"."Session"."expires" FROM "public"."Session" WHERE "public"."Session"."sessionToken" = $1 LIMIT $2 OFFSET $3;
SELECT "public"."VerificationToken"."identifier", "public"."VerificationToken"."token", "public"."VerificationToken"."expires" FROM "public"."VerificationToken" WHERE ("public"."VerificationToken"."identifier" = $1 AND "public"."VerificationToken"."token" = $2) LIMIT $3 OFFSET $4;
SELECT "public"."Order"."id", "public"."Order"."total"::text, "public"."Order"."status"::text, "public"."Order"."metadata"::jsonb, "public"."Order"."placedAt" FROM "public"."Order" WHERE ("public"."Order"."customerId" = $1 AND "public"."Order"."status" IN (CAST($2::text AS "public"."OrderStatus"),CAST($3::text AS "public"."OrderStatus"))) ORDER BY "public"."Order"."placedAt" DESC LIMIT $4 OFFSET $5;
SELECT "public"."Order"."id" FROM "public"."Order" WHERE "public"."Order"."total" > $1::numeric OFFSET $2;
SELECT "public"."Event"."id", "public"."Event"."at" FROM "public"."Event" WHERE "public"."Event"."at" > $1::timestamp(3) OFFSET $2;
SELECT "public"."Event"."id" FROM "public"."Event" WHERE "public"."Event"."uuid" = $1::uuid LIMIT $2 OFFSET $3;
SELECT "public"."Event"."id" FROM "public"."Event" WHERE "public"."Event"."payload" IS NOT NULL AND "public"."Event"."payload"::jsonb <> 'null'::jsonb OFFSET $1;
SELECT "public"."Event"."id" FROM "public"."Event" WHERE to_tsvector(concat_ws(' ', "public"."Event"."title", "public"."Event"."body")) @@ to_tsquery($1) OFFSET $2;
SELECT "tenant_a"."Invoice"."id", "tenant_a"."Invoice"."number" FROM "tenant_a"."Invoice" WHERE "tenant_a"."Invoice"."id" = $1 LIMIT $2 OFFSET $3;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE 1=0 OFFSET $1;
SELECT "public"."User"."id" FROM "public"."User" WHERE ("public"."User"."email" = $1 OR ("public"."User"."name" = $2 AND "public"."User"."role" = CAST($3::text AS "public"."Role"))) OFFSET $4;
SELECT DISTINCT ON ("public"."Post"."authorId") "public"."Post"."id", "public"."Post"."authorId" FROM "public"."Post" WHERE 1=1 ORDER BY "public"."Post"."authorId" ASC OFFSET $1;
SELECT "public"."Post"."id" FROM "public"."Post" WHERE "public"."Post"."title"::text ILIKE $1 ESCAPE '\' OFFSET $2;
-- Interactive transactions
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;
-- Prisma Migrate
SELECT pg_advisory_lock(72707369);
SELECT pg_advisory_unlock(72707369);
CREATE TABLE _prisma_migrations (
    id                      VARCHAR(36) PRIMARY KEY NOT NULL,
    checksum                VARCHAR(64) NOT NULL,
    finished_at             TIMESTAMPTZ,
    migration_name          VARCHAR(255) NOT NULL,
    logs                    TEXT,
    rolled_back_at          TIMESTAMPTZ,
    started_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    applied_steps_count     INTEGER NOT NULL DEFAULT 0
);
SELECT id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count FROM "_prisma_migrations" ORDER BY "started_at" ASC;
INSERT INTO "_prisma_migrations" ("id", "checksum", "migration_name", "logs", "started_at", "applied_steps_count") VALUES ($1, $2, $3, NULL, now(), 0);
UPDATE "_prisma_migrations" SET "finished_at" = now(), "applied_steps_count" = "applied_steps_count" + 1 WHERE "id" = $1;
CREATE TYPE "Role" AS ENUM ('USER', 'ADMIN', 'MODERATOR');
CREATE TABLE "User" (
    "id" SERIAL NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT,
    "role" "Role" NOT NULL DEFAULT 'USER',
    "profile" JSONB,
    "tags" TEXT[],
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "User_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "Post" (
    "id" TEXT NOT NULL,
    "title" VARCHAR(255) NOT NULL,
    "content" TEXT,
    "published" BOOLEAN NOT NULL DEFAULT false,
    "views" INTEGER NOT NULL DEFAULT 0,
    "price" DECIMAL(65,30),
    "authorId" INTEGER NOT NULL,

    CONSTRAINT "Post_pkey" PRIMARY KEY ("id")
);
CREATE TABLE "_CategoryToPost" (
    "A" INTEGER NOT NULL,
    "B" TEXT NOT NULL,

    CONSTRAINT "_CategoryToPost_AB_pkey" PRIMARY KEY ("A","B")
);
CREATE UNIQUE INDEX "User_email_key" ON "User"("email");
CREATE INDEX "Post_authorId_idx" ON "Post"("authorId");
CREATE INDEX "_CategoryToPost_B_index" ON "_CategoryToPost"("B");
CREATE INDEX "Post_title_content_idx" ON "Post" USING GIN ("title" gin_trgm_ops, "content" gin_trgm_ops);
ALTER TABLE "Post" ADD CONSTRAINT "Post_authorId_fkey" FOREIGN KEY ("authorId") REFERENCES "User"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "_CategoryToPost" ADD CONSTRAINT "_CategoryToPost_A_fkey" FOREIGN KEY ("A") REFERENCES "Category"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "User" ADD COLUMN     "bio" TEXT;
ALTER TABLE "User" ALTER COLUMN "name" SET NOT NULL;
ALTER TABLE "Post" DROP CONSTRAINT "Post_authorId_fkey";
ALTER TYPE "Role" ADD VALUE 'GUEST';
DROP INDEX "User_email_key";
CREATE EXTENSION IF NOT EXISTS "pg_trgm";
-- Prisma introspection (db pull)
SELECT EXISTS(SELECT 1 FROM pg_namespace WHERE nspname = $1);
SELECT current_setting('server_version_num')::integer as server_version_num;
SELECT namespace.nspname AS namespace FROM pg_namespace AS namespace WHERE namespace.nspname = ANY ( $1 ) ORDER BY namespace_name;
SELECT tbl.relname AS table_name, namespace.nspname as namespace, (tbl.relhassubclass and tbl.relkind = 'p') as is_partition, (tbl.relhassubclass and tbl.relkind = 'r') as has_subclass, tbl.relrowsecurity as has_row_level_security, reloptions, obj_description(tbl.oid, 'pg_class') as description FROM pg_class AS tbl INNER JOIN pg_namespace AS namespace ON namespace.oid = tbl.relnamespace WHERE ( tbl.relkind = 'r' AND tbl.relispartition = 'f' ) OR tbl.relkind = 'p' AND namespace.nspname = ANY ( $1 ) ORDER BY namespace, table_name;
SELECT t.typname as name, e.enumlabel as value, n.nspname as namespace, obj_description(t.oid, 'pg_type') as description FROM pg_type t JOIN pg_enum e ON t.oid = e.enumtypid JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname = ANY ( $1 ) ORDER BY e.enumsortorder;
SELECT oid.namespace, info.table_name, info.column_name, format_type(att.atttypid, att.atttypmod) as formatted_type, info.numeric_precision, info.numeric_scale, info.numeric_precision_radix, info.datetime_precision, info.data_type, info.udt_schema as type_schema_name, info.udt_name as full_data_type, pg_get_expr(attdef.adbin, attdef.adrelid) AS column_default, info.is_nullable, info.is_identity, info.character_maximum_length, col_description(att.attrelid, ordinal_position) AS description FROM information_schema.columns info JOIN pg_attribute att ON att.attname = info.column_name JOIN (SELECT pg_class.oid, relname, pg_namespace.nspname as namespace FROM pg_class JOIN pg_namespace on pg_namespace.oid = pg_class.relnamespace AND pg_namespace.nspname = ANY ( $1 ) WHERE reltype > 0) as oid on oid.oid = att.attrelid AND relname = info.table_name AND namespace = info.table_schema LEFT OUTER JOIN pg_attrdef attdef ON attdef.adrelid = att.attrelid AND attdef.adnum = att.attnum AND table_schema = namespace WHERE table_schema = ANY ( $1 ) ORDER BY namespace, table_name, ordinal_position;
SELECT con.oid AS "con_id", att2.attname AS "child_column", cl.relname AS "parent_table", att.attname AS "parent_column", con.confdeltype, con.confupdtype, rel_ns.nspname AS "referenced_schema_name", conname AS constraint_name, child, parent, table_name, namespace, condeferrable, condeferred FROM (SELECT ns.nspname AS "namespace", unnest(con1.conkey) AS "parent", unnest(con1.confkey) AS "child", cl.relname AS table_name, ns.nspname AS schema_name, generate_subscripts(con1.conkey, 1) AS colidx, con1.oid, con1.confrelid, con1.conrelid, con1.conname, con1.confdeltype, con1.confupdtype, con1.condeferrable AS condeferrable, con1.condeferred AS condeferred FROM pg_class cl JOIN pg_constraint con1 ON con1.conrelid = cl.oid JOIN pg_namespace ns ON cl.relnamespace = ns.oid WHERE ns.nspname = ANY ( $1 ) AND con1.contype = 'f' ORDER BY colidx) con JOIN pg_attribute att ON att.attrelid = con.confrelid AND att.attnum = con.child JOIN pg_class cl ON cl.oid = con.confrelid JOIN pg_attribute att2 ON att2.attrelid = con.conrelid AND att2.attnum = con.parent JOIN pg_class rel_cl ON con.confrelid = rel_cl.oid JOIN pg_namespace rel_ns ON rel_cl.relnamespace = rel_ns.oid ORDER BY namespace, table_name, constraint_name, con_id, con.colidx;
SELECT sequence_name, sequence_schema AS namespace, start_value::INT8, minimum_value::INT8 AS min_value, maximum_value::INT8 AS max_value, increment::INT8 AS increment_by, (CASE cycle_option WHEN 'yes' THEN TRUE ELSE FALSE END) AS cycle, 0::INT8 AS cache_size FROM information_schema.sequences WHERE sequence_schema = ANY ( $1 ) ORDER BY sequence_name;
SELECT n.nspname AS namespace, c.relname AS view_name, pg_get_viewdef(c.oid) AS view_sql, obj_description(c.oid) AS description FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'v' AND n.nspname = ANY ( $1 );
SELECT extname AS name, extversion AS version, nspname AS schema, extrelocatable AS relocatable FROM pg_extension ext INNER JOIN pg_namespace ns ON ext.extnamespace = ns.oid ORDER BY extname ASC;
-- More Prisma Client shapes
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE ("public"."User"."id" > $1 AND "public"."User"."id" <= $2) ORDER BY "public"."User"."id" ASC LIMIT $3 OFFSET $4;
SELECT "public"."User"."id", "public"."User"."email" FROM "public"."User" WHERE "public"."User"."email"::text ILIKE $1 ORDER BY "public"."User"."email" DESC NULLS LAST OFFSET $2;
SELECT "public"."Comment"."id", "public"."Comment"."postId", "public"."Comment"."text" FROM "public"."Comment" WHERE "public"."Comment"."postId" IN ($1,$2,$3,$4) ORDER BY "public"."Comment"."createdAt" ASC OFFSET $5;
UPDATE "public"."User" SET "loginCount" = ("loginCount" + $1), "lastLoginAt" = $2 WHERE ("public"."User"."id" = $3 AND 1=1) RETURNING "public"."User"."id", "public"."User"."loginCount";
SELECT "public"."Product"."id", "public"."Product"."price"::text, "public"."Product"."attributes"::jsonb FROM "public"."Product" WHERE ("public"."Product"."price" >= $1 AND "public"."Product"."price" <= $2 AND "public"."Product"."categoryId" IN ($3,$4)) ORDER BY "public"."Product"."price" ASC LIMIT $5 OFFSET $6;
