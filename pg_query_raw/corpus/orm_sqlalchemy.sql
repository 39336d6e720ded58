-- Queries shaped like SQLAlchemy (psycopg / asyncpg dialects), Alembic, and psql meta-commands
select pg_catalog.version();
select current_schema();
show standard_conforming_strings;
show transaction isolation level;
SELECT CAST('test plain returns' AS VARCHAR(60)) AS anon_1;
SELECT CAST('test unicode returns' AS VARCHAR(60)) AS anon_1;
SELECT pg_catalog.pg_class.relname 
FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace 
WHERE pg_catalog.pg_class.relname = $1::VARCHAR AND pg_catalog.pg_class.relkind = ANY (ARRAY[$2::VARCHAR, $3::VARCHAR, $4::VARCHAR, $5::VARCHAR, $6::VARCHAR]) AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != $7::VARCHAR;
SELECT pg_catalog.pg_class.relname 
FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace 
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY[$1::VARCHAR, $2::VARCHAR]) AND pg_catalog.pg_class.relpersistence != $3::CHAR AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != $4::VARCHAR;
SELECT pg_catalog.pg_attribute.attname AS name, pg_catalog.format_type(pg_catalog.pg_attribute.atttypid, pg_catalog.pg_attribute.atttypmod) AS format_type, (SELECT pg_catalog.pg_get_expr(pg_catalog.pg_attrdef.adbin, pg_catalog.pg_attrdef.adrelid) AS pg_get_expr_1 
FROM pg_catalog.pg_attrdef 
WHERE pg_catalog.pg_attrdef.adrelid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_attrdef.adnum = pg_catalog.pg_attribute.attnum AND pg_catalog.pg_attribute.atthasdef) AS "default", pg_catalog.pg_attribute.attnotnull AS not_null, pg_catalog.pg_class.relname AS table_name, pg_catalog.pg_description.description AS comment, pg_catalog.pg_attribute.attgenerated AS generated, (SELECT json_build_object('always', pg_catalog.pg_attribute.attidentity = 'a', 'start', pg_catalog.pg_sequence.seqstart, 'increment', pg_catalog.pg_sequence.seqincrement, 'minvalue', pg_catalog.pg_sequence.seqmin, 'maxvalue', pg_catalog.pg_sequence.seqmax, 'cache', pg_catalog.pg_sequence.seqcache, 'cycle', pg_catalog.pg_sequence.seqcycle) AS json_build_object_1 
FROM pg_catalog.pg_sequence 
WHERE pg_catalog.pg_attribute.attidentity != '' AND pg_catalog.pg_sequence.seqrelid = CAST(CAST(pg_catalog.pg_get_serial_sequence(CAST(CAST(pg_catalog.pg_attribute.attrelid AS REGCLASS) AS TEXT), pg_catalog.pg_attribute.attname) AS REGCLASS) AS OID)) AS identity_options 
FROM pg_catalog.pg_class LEFT OUTER JOIN pg_catalog.pg_attribute ON pg_catalog.pg_class.oid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_attribute.attnum > 0 AND NOT pg_catalog.pg_attribute.attisdropped LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_description.objsubid = pg_catalog.pg_attribute.attnum JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace 
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY[$1::VARCHAR, $2::VARCHAR, $3::VARCHAR, $4::VARCHAR, $5::VARCHAR]) AND pg_catalog.pg_table_is_visible(pg_catalog.pg_class.oid) AND pg_catalog.pg_namespace.nspname != $6::VARCHAR AND pg_catalog.pg_class.relname IN ($7::VARCHAR) ORDER BY pg_catalog.pg_class.relname, pg_catalog.pg_attribute.attnum;
SELECT pg_catalog.pg_type.typname AS name, pg_catalog.pg_type_is_visible(pg_catalog.pg_type.oid) AS visible, pg_catalog.pg_namespace.nspname AS schema, lbl_agg.labels AS labels 
FROM pg_catalog.pg_type JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_type.typnamespace LEFT OUTER JOIN (SELECT pg_catalog.pg_enum.enumtypid AS enumtypid, array_agg(CAST(pg_catalog.pg_enum.enumlabel AS TEXT) ORDER BY pg_catalog.pg_enum.enumsortorder) AS labels 
FROM pg_catalog.pg_enum GROUP BY pg_catalog.pg_enum.enumtypid) AS lbl_agg ON pg_catalog.pg_type.oid = lbl_agg.enumtypid 
WHERE pg_catalog.pg_type.typtype = $1::VARCHAR ORDER BY pg_catalog.pg_namespace.nspname, pg_catalog.pg_type.typname;
SELECT attr.conrelid, array_agg(CAST(attr.attname AS TEXT) ORDER BY attr.ord) AS cols, attr.conname, min(attr.description) AS description, NULL AS extra 
FROM (SELECT con.conrelid AS conrelid, con.conname AS conname, con.conindid AS conindid, con.description AS description, con.ord AS ord, pg_catalog.pg_attribute.attname AS attname 
FROM pg_catalog.pg_attribute JOIN (SELECT pg_catalog.pg_constraint.conrelid AS conrelid, pg_catalog.pg_constraint.conname AS conname, pg_catalog.pg_constraint.conindid AS conindid, unnest(pg_catalog.pg_constraint.conkey) AS attnum, generate_subscripts(pg_catalog.pg_constraint.conkey, $1::INTEGER) AS ord, pg_catalog.pg_description.description AS description 
FROM pg_catalog.pg_constraint LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_constraint.oid 
WHERE pg_catalog.pg_constraint.contype = $2::VARCHAR AND pg_catalog.pg_constraint.conrelid IN ($3::OID)) AS con ON pg_catalog.pg_attribute.attnum = con.attnum AND pg_catalog.pg_attribute.attrelid = con.conrelid) AS attr GROUP BY attr.conrelid, attr.conname ORDER BY attr.conrelid, attr.conname;
SELECT pg_catalog.pg_index.indrelid, cls_idx.relname AS relname_index, pg_catalog.pg_index.indisunique, pg_catalog.pg_constraint.conrelid IS NOT NULL AS has_constraint, pg_catalog.pg_index.indoption, cls_idx.reloptions, pg_catalog.pg_am.amname, CASE WHEN (pg_catalog.pg_index.indpred IS NOT NULL) THEN pg_catalog.pg_get_expr(pg_catalog.pg_index.indpred, pg_catalog.pg_index.indrelid) END AS filter_definition, pg_catalog.pg_index.indnkeyatts, pg_catalog.pg_index.indnullsnotdistinct 
FROM pg_catalog.pg_index JOIN pg_catalog.pg_class AS cls_idx ON pg_catalog.pg_index.indexrelid = cls_idx.oid JOIN pg_catalog.pg_am ON cls_idx.relam = pg_catalog.pg_am.oid LEFT OUTER JOIN pg_catalog.pg_constraint ON pg_catalog.pg_index.indrelid = pg_catalog.pg_constraint.conrelid AND pg_catalog.pg_index.indexrelid = pg_catalog.pg_constraint.conindid AND pg_catalog.pg_constraint.contype = ANY (ARRAY[$1::VARCHAR, $2::VARCHAR, $3::VARCHAR]) 
WHERE pg_catalog.pg_index.indrelid IN ($4::OID) AND NOT pg_catalog.pg_index.indisprimary ORDER BY pg_catalog.pg_index.indrelid, cls_idx.relname;
-- Core / ORM statements
SELECT users.id, users.name, users.fullname 
FROM users 
WHERE users.name = $1::VARCHAR;
SELECT users.id, users.name, users.fullname 
FROM users 
WHERE users.id = $1::INTEGER;
SELECT users.id AS users_id, users.name AS users_name, users.fullname AS users_fullname 
FROM users 
WHERE users.id = $1;
SELECT users.id AS users_id, users.name AS users_name, users.fullname AS users_fullname 
FROM users 
WHERE users.name = $1 
 LIMIT $2;
SELECT users.id AS users_id, users.name AS users_name 
FROM users ORDER BY users.id 
 LIMIT $1 OFFSET $2;
SELECT users.id, users.name, users.fullname 
FROM users 
WHERE users.name IN ($1::VARCHAR, $2::VARCHAR, $3::VARCHAR);
SELECT users.id, users.name 
FROM users 
WHERE users.name NOT IN ($1::VARCHAR, $2::VARCHAR);
SELECT users.id, users.name 
FROM users 
WHERE (users.name LIKE '%' || $1::VARCHAR || '%');
SELECT users.id, users.name 
FROM users 
WHERE (users.name LIKE $1::VARCHAR || '%');
SELECT users.id, users.name 
FROM users 
WHERE users.name ILIKE $1::VARCHAR;
SELECT users.id, users.name 
FROM users 
WHERE lower(users.name) LIKE lower($1::VARCHAR);
SELECT users.id, users.name 
FROM users 
WHERE users.name IS NULL OR users.fullname IS NOT NULL;
SELECT users.id, users.name 
FROM users 
WHERE users.id BETWEEN $1::INTEGER AND $2::INTEGER;
SELECT users.id, users.name 
FROM users 
WHERE users.name = $1::VARCHAR AND users.fullname = $2::VARCHAR OR users.id > $3::INTEGER;
SELECT users.id, users.name 
FROM users 
WHERE NOT (users.name = $1::VARCHAR OR users.id = $2::INTEGER);
SELECT users.id, users.name 
FROM users 
WHERE users.created_at > $1::TIMESTAMP WITHOUT TIME ZONE;
SELECT users.id, users.name 
FROM users 
WHERE users.created_at > $1::TIMESTAMP WITH TIME ZONE ORDER BY users.created_at DESC;
SELECT users.id 
FROM users 
WHERE users.uid = $1::UUID;
SELECT users.id, users.name 
FROM users 
WHERE users.id = $1::INTEGER FOR UPDATE;
SELECT users.id, users.name 
FROM users 
WHERE users.id = $1::INTEGER FOR UPDATE OF users SKIP LOCKED;
SELECT users.id, users.name 
FROM users 
WHERE users.id = $1::INTEGER FOR NO KEY UPDATE NOWAIT;
SELECT users.id, users.name 
FROM users 
WHERE users.id = $1::INTEGER FOR SHARE;
SELECT users.name, addresses.email_address 
FROM users JOIN addresses ON users.id = addresses.user_id;
SELECT users.name, addresses.email_address 
FROM users LEFT OUTER JOIN addresses ON users.id = addresses.user_id 
WHERE addresses.email_address = $1::VARCHAR;
SELECT users.name, addresses.email_address 
FROM users FULL OUTER JOIN addresses ON users.id = addresses.user_id;
SELECT users_1.name, users_2.name AS name_1 
FROM users AS users_1 JOIN users AS users_2 ON users_1.id = users_2.manager_id;
SELECT users.id AS users_id, users.name AS users_name, addresses_1.id AS addresses_1_id, addresses_1.email_address AS addresses_1_email_address, addresses_1.user_id AS addresses_1_user_id 
FROM users LEFT OUTER JOIN addresses AS addresses_1 ON users.id = addresses_1.user_id ORDER BY addresses_1.id;
SELECT anon_1.users_id AS anon_1_users_id, anon_1.users_name AS anon_1_users_name, addresses_1.id AS addresses_1_id, addresses_1.email_address AS addresses_1_email_address 
FROM (SELECT users.id AS users_id, users.name AS users_name 
FROM users 
 LIMIT $1) AS anon_1 LEFT OUTER JOIN addresses AS addresses_1 ON anon_1.users_id = addresses_1.user_id;
SELECT addresses.user_id AS addresses_user_id, addresses.id AS addresses_id, addresses.email_address AS addresses_email_address 
FROM addresses 
WHERE addresses.user_id IN ($1::INTEGER, $2::INTEGER, $3::INTEGER);
SELECT users.id AS users_id, users.name AS users_name 
FROM users 
WHERE users.id IN ($1::INTEGER);
SELECT count(*) AS count_1 
FROM (SELECT users.id AS users_id, users.name AS users_name 
FROM users 
WHERE users.name = $1) AS anon_1;
SELECT count(users.id) AS count_1 
FROM users;
SELECT count(*) AS count_1 
FROM users;
SELECT users.id, count(addresses.id) AS count_1 
FROM users LEFT OUTER JOIN addresses ON users.id = addresses.user_id GROUP BY users.id;
SELECT users.name, count(addresses.id) AS count 
FROM users JOIN addresses ON users.id = addresses.user_id GROUP BY users.name 
HAVING count(addresses.id) > $1::INTEGER ORDER BY count DESC;
SELECT max(orders.total) AS max_1, min(orders.total) AS min_1, avg(orders.total) AS avg_1, sum(orders.total) AS sum_1 
FROM orders;
SELECT users.name 
FROM users 
WHERE EXISTS (SELECT addresses.id 
FROM addresses 
WHERE addresses.user_id = users.id);
SELECT users.name 
FROM users 
WHERE NOT (EXISTS (SELECT 1 
FROM addresses 
WHERE users.id = addresses.user_id AND addresses.email_address LIKE $1::VARCHAR));
SELECT users.name, (SELECT count(addresses.id) AS count_1 
FROM addresses 
WHERE addresses.user_id = users.id) AS address_count 
FROM users;
SELECT users.id, users.name 
FROM users 
WHERE users.id IN (SELECT addresses.user_id 
FROM addresses 
WHERE addresses.email_address LIKE $1::VARCHAR);
SELECT anon_1.id, anon_1.name 
FROM (SELECT users.id AS id, users.name AS name 
FROM users 
WHERE users.id > $1::INTEGER) AS anon_1 
WHERE anon_1.name != $2::VARCHAR;
SELECT anon_1.name, anon_1.row_number 
FROM (SELECT users.name AS name, row_number() OVER (PARTITION BY users.dept_id ORDER BY users.salary DESC) AS row_number 
FROM users) AS anon_1 
WHERE anon_1.row_number <= $1::INTEGER;
WITH anon_1 AS 
(SELECT addresses.user_id AS user_id, count(addresses.id) AS count 
FROM addresses GROUP BY addresses.user_id)
 SELECT users.name, anon_1.count 
FROM users LEFT OUTER JOIN anon_1 ON users.id = anon_1.user_id;
WITH RECURSIVE anon_1(id, parent_id, name) AS 
(SELECT nodes.id AS id, nodes.parent_id AS parent_id, nodes.name AS name 
FROM nodes 
WHERE nodes.id = $1::INTEGER UNION ALL SELECT nodes_1.id AS id, nodes_1.parent_id AS parent_id, nodes_1.name AS name 
FROM nodes AS nodes_1 JOIN anon_1 AS anon_2 ON nodes_1.parent_id = anon_2.id)
 SELECT anon_1.id, anon_1.parent_id, anon_1.name 
FROM anon_1;
SELECT users.id, users.name 
FROM users UNION SELECT managers.id, managers.name 
FROM managers;
SELECT anon_1.id, anon_1.name 
FROM (SELECT users.id AS id, users.name AS name 
FROM users UNION ALL SELECT managers.id AS id, managers.name AS name 
FROM managers) AS anon_1 ORDER BY anon_1.name;
SELECT users.id, users.name, CASE WHEN (users.name = $1::VARCHAR) THEN $2::VARCHAR WHEN (users.name = $3::VARCHAR) THEN $4::VARCHAR ELSE $5::VARCHAR END AS anon_1 
FROM users;
SELECT users.id, coalesce(users.fullname, users.name) AS coalesce_1 
FROM users;
SELECT CAST(users.data ->> $1::TEXT AS INTEGER) AS anon_1 
FROM users;
SELECT users.id 
FROM users 
WHERE users.data @> $1::JSONB;
SELECT users.id 
FROM users 
WHERE (users.data ->> $1::TEXT) = $2::VARCHAR;
SELECT users.id 
FROM users 
WHERE (users.data #>> $1::TEXT[]) = $2::VARCHAR;
SELECT users.id 
FROM users 
WHERE users.tags @> $1::VARCHAR[];
SELECT users.id 
FROM users 
WHERE $1::VARCHAR = ANY (users.tags);
SELECT users.id 
FROM users 
WHERE users.during && tstzrange($1::TIMESTAMP WITH TIME ZONE, $2::TIMESTAMP WITH TIME ZONE, $3::VARCHAR);
SELECT users.id 
FROM users 
WHERE users.search_vector @@ plainto_tsquery($1::REGCONFIG, $2::VARCHAR);
SELECT DISTINCT ON (users.dept_id) users.dept_id, users.name 
FROM users ORDER BY users.dept_id, users.salary DESC;
SELECT users.id, users.name 
FROM users ORDER BY users.name ASC NULLS LAST, users.id DESC;
SELECT users.id 
FROM users 
WHERE users.created_at >= now() - make_interval(0, 0, 0, $1::INTEGER);
SELECT users.id 
FROM users 
WHERE users.created_at >= date_trunc($1::VARCHAR, now());
SELECT EXTRACT(year FROM users.created_at) AS anon_1, count(*) AS count_1 
FROM users GROUP BY EXTRACT(year FROM users.created_at);
SELECT users.id 
FROM users TABLESAMPLE system($1::FLOAT);
SELECT users.id, users.name 
FROM users 
 LIMIT $1::INTEGER OFFSET $2::INTEGER;
SELECT users.id, users.name 
FROM users ORDER BY users.id 
 FETCH FIRST $1 ROWS ONLY;
INSERT INTO users (name, fullname) VALUES ($1::VARCHAR, $2::VARCHAR) RETURNING users.id;
INSERT INTO users (name, fullname) VALUES ($1, $2) RETURNING users.id;
INSERT INTO users (name, fullname) VALUES ($1::VARCHAR, $2::VARCHAR), ($3::VARCHAR, $4::VARCHAR), ($5::VARCHAR, $6::VARCHAR) RETURNING users.id;
INSERT INTO users (name, fullname) SELECT p0::VARCHAR, p1::VARCHAR FROM (VALUES ($1, $2, 0), ($3, $4, 1), ($5, $6, 2)) AS imp_sen(p0, p1, sen_counter) ORDER BY sen_counter RETURNING users.id, users.id AS id__1;
INSERT INTO addresses (user_id, email_address) VALUES ($1::INTEGER, $2::VARCHAR) RETURNING addresses.id;
INSERT INTO users (name) SELECT managers.name 
FROM managers;
INSERT INTO my_table (id, data) VALUES ($1::INTEGER, $2::VARCHAR) ON CONFLICT (id) DO UPDATE SET data = excluded.data;
INSERT INTO my_table (id, data) VALUES ($1::INTEGER, $2::VARCHAR) ON CONFLICT ON CONSTRAINT pk_my_table DO UPDATE SET data = $3::VARCHAR WHERE my_table.status = $4::VARCHAR;
INSERT INTO my_table (id, data) VALUES ($1::INTEGER, $2::VARCHAR) ON CONFLICT (id) DO NOTHING;
INSERT INTO my_table (id, data) VALUES ($1::INTEGER, $2::VARCHAR) ON CONFLICT DO NOTHING RETURNING my_table.id;
UPDATE users SET name=$1::VARCHAR WHERE users.id = $2::INTEGER;
UPDATE users SET name=$1::VARCHAR, fullname=$2::VARCHAR WHERE users.id = $3::INTEGER;
UPDATE users SET fullname=(users.name || $1::VARCHAR) WHERE users.name = $2::VARCHAR;
UPDATE users SET fullname=(SELECT addresses.email_address 
FROM addresses 
WHERE addresses.user_id = users.id 
 LIMIT $1::INTEGER);
UPDATE users SET name=$1::VARCHAR FROM addresses WHERE users.id = addresses.user_id AND addresses.email_address = $2::VARCHAR;
UPDATE users SET name=$1::VARCHAR WHERE users.id = $2::INTEGER RETURNING users.id, users.name;
UPDATE users SET version_id=$1::INTEGER, name=$2::VARCHAR WHERE users.id = $3::INTEGER AND users.version_id = $4::INTEGER;
DELETE FROM users WHERE users.id = $1::INTEGER;
DELETE FROM users WHERE users.name = $1::VARCHAR RETURNING users.id;
DELETE FROM addresses USING users WHERE users.id = addresses.user_id AND users.name = $1::VARCHAR;
DELETE FROM addresses WHERE addresses.id IN ($1::INTEGER, $2::INTEGER);
SAVEPOINT sa_savepoint_1;
RELEASE SAVEPOINT sa_savepoint_1;
ROLLBACK TO SAVEPOINT sa_savepoint_1;
SAVEPOINT sa_savepoint_2;
ROLLBACK TO SAVEPOINT sa_savepoint_2;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED;
SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY;
CREATE TABLE users (
	id SERIAL NOT NULL, 
	name VARCHAR(30) NOT NULL, 
	fullname VARCHAR, 
	created_at TIMESTAMP WITHOUT TIME ZONE DEFAULT now() NOT NULL, 
	data JSONB, 
	PRIMARY KEY (id), 
	UNIQUE (name)
);
CREATE TABLE addresses (
	id SERIAL NOT NULL, 
	email_address VARCHAR NOT NULL, 
	user_id INTEGER NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(user_id) REFERENCES users (id) ON DELETE CASCADE
);
CREATE INDEX ix_addresses_email_address ON addresses (email_address);
CREATE TYPE status_enum AS ENUM ('active', 'inactive');
DROP TYPE status_enum;
-- Alembic
CREATE TABLE alembic_version (
    version_num VARCHAR(32) NOT NULL, 
    CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);
SELECT alembic_version.version_num 
FROM alembic_version;
INSERT INTO alembic_version (version_num) VALUES ('ae1027a6acf') RETURNING alembic_version.version_num;
UPDATE alembic_version SET version_num='27c6a30d7c24' WHERE alembic_version.version_num = 'ae1027a6acf';
DELETE FROM alembic_version WHERE alembic_version.version_num = '27c6a30d7c24';
ALTER TABLE account ADD COLUMN last_transaction_date TIMESTAMP WITHOUT TIME ZONE;
ALTER TABLE account ALTER COLUMN name TYPE VARCHAR(100);
ALTER TABLE account ALTER COLUMN name SET NOT NULL;
ALTER TABLE account DROP COLUMN last_transaction_date;
ALTER TABLE account ADD CONSTRAINT fk_account_owner FOREIGN KEY(owner_id) REFERENCES users (id);
-- psql meta-commands (\dt, \d, \l, \dn, \du, \df, \di, \dx)
SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;
SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.~) '^(users)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 2, 3;
SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = '16384' AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;
SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),
  pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, i.indisreplident, c2.reltablespace
FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
WHERE c.oid = '16384' AND c.oid = i.indrelid AND i.indexrelid = c2.oid
ORDER BY i.indisprimary DESC, c2.relname;
SELECT
  d.datname as "Name",
  pg_catalog.pg_get_userbyid(d.datdba) as "Owner",
  pg_catalog.pg_encoding_to_char(d.encoding) as "Encoding",
  CASE d.datlocprovider WHEN 'b' THEN 'builtin' WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS "Locale Provider",
  d.datcollate as "Collate",
  d.datctype as "Ctype",
  d.datlocale as "Locale",
  d.daticurules as "ICU Rules",
  pg_catalog.array_to_string(d.datacl, E'\n') AS "Access privileges"
FROM pg_catalog.pg_database d
ORDER BY 1;
SELECT n.nspname AS "Name",
  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner"
FROM pg_catalog.pg_namespace n
WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
ORDER BY 1;
SELECT r.rolname, r.rolsuper, r.rolinherit,
  r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,
  r.rolconnlimit, r.rolvaliduntil,
  r.rolreplication, r.rolbypassrls
FROM pg_catalog.pg_roles r
WHERE r.rolname !~ '^pg_'
ORDER BY 1;
SELECT n.nspname as "Schema",
  p.proname as "Name",
  pg_catalog.pg_get_function_result(p.oid) as "Result data type",
  pg_catalog.pg_get_function_arguments(p.oid) as "Argument data types",
 CASE p.prokind
  WHEN 'a' THEN 'agg'
  WHEN 'w' THEN 'window'
  WHEN 'p' THEN 'proc'
  ELSE 'func'
 END as "Type"
FROM pg_catalog.pg_proc p
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE pg_catalog.pg_function_is_visible(p.oid)
      AND n.nspname <> 'pg_catalog'
      AND n.nspname <> 'information_schema'
ORDER BY 1, 2, 4;
SELECT e.extname AS "Name", e.extversion AS "Version", n.nspname AS "Schema", c.description AS "Description"
FROM pg_catalog.pg_extension e LEFT JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace LEFT JOIN pg_catalog.pg_description c ON c.objoid = e.oid AND c.classoid = 'pg_catalog.pg_extension'::pg_catalog.regclass
ORDER BY 1;
SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'users' ORDER BY ordinal_position;
SELECT table_schema, table_name, table_type FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY table_schema, table_name;
SELECT tc.constraint_name, kcu.column_name, ccu.table_name AS foreign_table_name, ccu.column_name AS foreign_column_name FROM information_schema.table_constraints AS tc JOIN information_schema.key_column_usage AS kcu ON tc.constraint_name = kcu.constraint_name AND tc.table_schema = kcu.table_schema JOIN information_schema.constraint_column_usage AS ccu ON ccu.constraint_name = tc.constraint_name WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_name = 'addresses';
