-- Quoted identifiers
SELECT "we""ird" FROM "ta""ble";
SELECT "column with spaces", "UPPER", "MiXeD", "123starts_with_digit" FROM "my table";
SELECT "a.b", "a;b", "a--b", "a/*b*/c", "a'b" FROM t;
SELECT "🚀", "日本", "naïve" FROM "émoji table";
SELECT U&"d\0061t" FROM t;
SELECT U&"\0441\043B\043E\043D" AS U&"\0441\043B" FROM t;
CREATE TABLE "Order Items" ("Order ID" int, "Line #" int, "Price ($)" numeric, """quoted""" text);
INSERT INTO "Order Items" ("Order ID", "Line #", "Price ($)", """quoted""") VALUES (1, 1, 9.99, 'x');
SELECT "Order Items"."Order ID" FROM "Order Items" WHERE "Order Items"."Line #" > 0;
SELECT "aVeryLongIdentifierThatExceedsTheSixtyThreeCharacterLimitOfPostgresIdentifiers" FROM t;
SELECT averylongunquotedidentifierthatexceedsthesixtythreecharacterlimitofpostgres FROM t;
SELECT café, größe FROM menü WHERE prix > 1;
-- Keywords as identifiers
SELECT "select", "from", "where", "group", "order", "limit", "table", "user" FROM "table";
SELECT t.order, t.group, t.select, t.from FROM t;
SELECT 1 AS order, 2 AS from, 3 AS select, 4 AS where;
SELECT name, type, value, key, data, action, comment, position, year, month, day, hour, version, language, owner, password, role, schema, sequence, text, time FROM events;
SELECT id, level, location, name, object, options, path, rule, source, status, storage, strict FROM configs;
SELECT ts.timestamp, ts.date, ts.interval FROM ts_table ts;
INSERT INTO settings (key, value, type, comment) VALUES ('a', 'b', 'c', 'd');
UPDATE settings SET value = 'x', type = 'y' WHERE key = 'a';
CREATE TABLE keywords_tbl (name text, type text, value text, key text, data jsonb, version int, action text, "default" text, "check" bool, "user" text);
SELECT "left"('abc', 1), left('abc', 1), "right"('abc', 1), pg_catalog."left"('abc', 2);
SELECT * FROM t AS "select" WHERE "select".id = 1;
SELECT * FROM "from" AS "where" JOIN "join" ON "where".id = "join".id;
SELECT count(*) AS count, sum(x) AS sum, max(y) AS max FROM t;
SELECT current_user, "current_user" FROM t;
SELECT abort, absolute, access, admin, after, aggregate, also, always, assertion FROM kw;
-- Comments inside statements
SELECT /* pgdog_shard: 1 */ 1;
SELECT /* pgdog_shard: 2 */ * FROM users WHERE id = 1001;
INSERT /* pgdog_sharding_key: 42 */ INTO orders (user_id, total_cents) VALUES (42, 1000);
UPDATE /* pgdog_shard: 0 */ users SET name = 'x' WHERE id = 7;
/* pgdog_shard: 3 */ SELECT * FROM accounts WHERE tenant_id = 3;
-- pgdog_sharding_key: 99
SELECT * FROM accounts WHERE tenant_id = 99;
SELECT 1 /* trailing comment */;
SELECT /* /* nested */ */ 2;
SELECT /* outer /* inner /* innermost */ inner */ outer */ 3;
SELECT /* ; semicolon in comment ; */ 4;
SELECT 5 -- line comment; with semicolon
;
SELECT 6 /* it's an apostrophe */, 7 -- and "a quote"
;
SELECT
    a, -- first column
    b  /* second column */
FROM t -- the table
WHERE a = 1; -- trailing after semicolon
SELECT 1/**/+/**/2;
SELECT a/*comment*/FROM/**/t;
SELECT 'not /* a comment */' AS s, "not -- a comment" FROM t;
SELECT * FROM users WHERE id = $1 /*application='app',controller='users',action='show'*/;
SELECT * FROM users WHERE id = $1 /* traceparent='00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' */;
-- Operators
SELECT 1 OPERATOR(pg_catalog.+) 2;
SELECT a OPERATOR(pg_catalog.=) b FROM t;
SELECT OPERATOR(pg_catalog.-) 5;
SELECT * FROM t WHERE name OPERATOR(pg_catalog.~~*) '%x%';
SELECT * FROM t WHERE a OPERATOR(public.===) b;
SELECT point(0, 0) <-> point(3, 4), box '((0,0),(1,1))' @> point '(0.5,0.5)';
SELECT a ## b, a <<| b, a |>> b, a &< b, a &> b, a -|- b FROM geo;
SELECT a ~>=~ b, a ~<~ b, a ~=~ b FROM t;
SELECT x @@@ y, x <=> y, x !== y, x <#> y FROM vecs;
SELECT embedding <-> $1 AS distance FROM items ORDER BY embedding <-> $1 LIMIT 5;
SELECT embedding <=> '[1,2,3]' FROM items ORDER BY 1 LIMIT 10;
SELECT 2 ^ 3 ^ 2, -2 ^ 2, (-2) ^ 2, 2 * 3 + 4 * 5, (2 + 3) * 4;
SELECT 1 < 2 AND 2 > 1 OR NOT 3 = 3, 5 >= 5 AND 5 <= 5 AND 5 <> 6 AND 5 != 7;
SELECT - - - 1, - + - 1, @ -5, |/ 25.0, ||/ 8.0;
SELECT 'abc' ~ 'b' = true, 'x' || 'y' = 'xy';
SELECT a->>'k' || '-' || b->>'k' FROM j;
SELECT 1::int4 OPERATOR(pg_catalog.*) 2::int4 OPERATOR(pg_catalog.+) 3;
SELECT a+b-c*d/e%f FROM t;
SELECT a<>b, a<=b, a>=b, a!=b FROM t;
SELECT * FROM t WHERE a = - 1 AND b =-1 AND c =- 1;
-- ROW constructors and star expansions
SELECT ROW(1, 'a', NULL, ROW(2, 'b'));
SELECT ROW();
SELECT (1, 2, 3), ((1, 2), (3, 4));
SELECT * FROM t WHERE ROW(a, b, c) > ROW(1, 2, 3);
SELECT * FROM t WHERE (a, b) OVERLAPS (c, d);
SELECT t.*, s.* FROM t, s;
SELECT (t).*, (t.comp).*, (t.comp).field FROM t;
SELECT (x).a, (x).b.c, (f(y)).z, (arr[1]).name, arr[1][2] FROM t;
SELECT (ROW(1, 2)::pair).*, (get_pair()).first;
SELECT users.* FROM users;
SELECT public.users.* FROM public.users;
SELECT count(t.*) FROM t;
SELECT row_to_json(t.*) FROM t;
-- Qualified names
SELECT public.users.id, public.users.email FROM public.users WHERE public.users.id = 1;
SELECT * FROM appdb.public.users;
SELECT appdb.public.users.id FROM appdb.public.users;
SELECT u.id FROM appdb.public.users AS u;
INSERT INTO appdb.public.users (email) VALUES ('x@y.z');
SELECT pg_catalog.now(), pg_catalog.lower('A'), public.my_fn(1), "Schema"."Func"(2);
SELECT * FROM pg_catalog.pg_class c WHERE c.relnamespace = 'pg_catalog'::pg_catalog.regnamespace;
SELECT "public"."t"."c", "MySchema"."MyTable"."MyCol" FROM "MySchema"."MyTable", "public"."t";
-- Statements without FROM, empty-ish statements
SELECT;
SELECT FROM users;
SELECT FROM users WHERE id = 1;
SELECT WHERE false;
SELECT 1 WHERE true;
SELECT ALL;
SELECT DISTINCT 1;
((SELECT 1));
(((SELECT 2 AS x)));
(SELECT 1) UNION (SELECT 2);
VALUES (1);
TABLE t;
SELECT * FROM (SELECT) AS empty;
SELECT NULL FROM t LIMIT 0;
-- Whitespace and case oddities
sElEcT iD fRoM UsErS wHeRe Id = 1;
SELECT(1)+(2)AS"x"FROM"t";
SELECT*FROM t WHERE(a)=(1)AND(b)IN(1,2);
SELECT	id,	name	FROM	users	WHERE	id	=	1;
SELECT id
  ,  name
  ,  email
FROM
  users
WHERE
  id
  =
  2;
SELECT 42     ;
SELECT 'a'
 ;
SELECT id
FROM users
WHERE id = 3;
-- CRLF line endings above
-- Parameters and dollar quotes in odd places
SELECT $1::text::varchar(10)::bpchar;
SELECT $$ $1 is not a param $$ AS s, $1 AS p;
SELECT '$1' AS not_param, $2 AS param;
SELECT * FROM t WHERE a = $1 AND b = $1 AND c = $2;
SELECT f($1, arg2 => $2, arg3 := $3);
-- Strings that look like other things
SELECT 'a;b' AS s -- c;d
;
SELECT E'\';' AS tricky;
SELECT 'it''s; fine' AS s, $x$; also fine $x$ AS d;
SELECT 1 AS "a;b", 2 AS "c--d", 3 AS "e/*f";
-- Odd but valid SQL
SELECT x FROM (VALUES (1), (2)) v(x) WHERE x IN (SELECT x);
SELECT * FROM t t1, t t2, t t3 WHERE t1.id = t2.id AND t2.id = t3.id;
SELECT 1 FROM t GROUP BY ();
SELECT * FROM t ORDER BY (SELECT 1);
SELECT * FROM t LIMIT (SELECT 10) OFFSET (SELECT 5);
SELECT (SELECT (SELECT (SELECT 1)));
SELECT ARRAY(SELECT ARRAY(SELECT 1));
SELECT x.y FROM (SELECT 1 AS y) AS x(y);
SELECT * FROM t WHERE NOT NOT NOT a;
SELECT CASE END_VALUE WHEN 1 THEN 2 END FROM t;
SELECT 1 AS "CASE", 2 AS "END";
SELECT * FROM ROWS FROM (generate_series(1, 2)) AS g;
SELECT * FROM LATERAL (SELECT 1) AS l;
SELECT * FROM t WHERE (a IS DISTINCT FROM b) IS NOT TRUE;
SELECT * FROM t WHERE x BETWEEN 1 AND 2 AND y BETWEEN 3 AND 4;
SELECT -x, +x, -(-x), -(x + 1) FROM t;
-- Long IN lists
SELECT * FROM users WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150);
SELECT * FROM users WHERE id IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55, $56, $57, $58, $59, $60, $61, $62, $63, $64, $65, $66, $67, $68, $69, $70, $71, $72, $73, $74, $75, $76, $77, $78, $79, $80, $81, $82, $83, $84, $85, $86, $87, $88, $89, $90, $91, $92, $93, $94, $95, $96, $97, $98, $99, $100, $101, $102, $103, $104, $105, $106, $107, $108, $109, $110, $111, $112, $113, $114, $115, $116, $117, $118, $119, $120);
SELECT * FROM users WHERE email IN ('user1@example.com', 'user2@example.com', 'user3@example.com', 'user4@example.com', 'user5@example.com', 'user6@example.com', 'user7@example.com', 'user8@example.com', 'user9@example.com', 'user10@example.com', 'user11@example.com', 'user12@example.com', 'user13@example.com', 'user14@example.com', 'user15@example.com', 'user16@example.com', 'user17@example.com', 'user18@example.com', 'user19@example.com', 'user20@example.com', 'user21@example.com', 'user22@example.com', 'user23@example.com', 'user24@example.com', 'user25@example.com', 'user26@example.com', 'user27@example.com', 'user28@example.com', 'user29@example.com', 'user30@example.com', 'user31@example.com', 'user32@example.com', 'user33@example.com', 'user34@example.com', 'user35@example.com', 'user36@example.com', 'user37@example.com', 'user38@example.com', 'user39@example.com', 'user40@example.com', 'user41@example.com', 'user42@example.com', 'user43@example.com', 'user44@example.com', 'user45@example.com', 'user46@example.com', 'user47@example.com', 'user48@example.com', 'user49@example.com', 'user50@example.com', 'user51@example.com', 'user52@example.com', 'user53@example.com', 'user54@example.com', 'user55@example.com', 'user56@example.com', 'user57@example.com', 'user58@example.com', 'user59@example.com', 'user60@example.com', 'user61@example.com', 'user62@example.com', 'user63@example.com', 'user64@example.com', 'user65@example.com', 'user66@example.com', 'user67@example.com', 'user68@example.com', 'user69@example.com', 'user70@example.com', 'user71@example.com', 'user72@example.com', 'user73@example.com', 'user74@example.com', 'user75@example.com', 'user76@example.com', 'user77@example.com', 'user78@example.com', 'user79@example.com', 'user80@example.com', 'user81@example.com', 'user82@example.com', 'user83@example.com', 'user84@example.com', 'user85@example.com', 'user86@example.com', 'user87@example.com', 'user88@example.com', 'user89@example.com', 'user90@example.com', 'user91@example.com', 'user92@example.com', 'user93@example.com', 'user94@example.com', 'user95@example.com', 'user96@example.com', 'user97@example.com', 'user98@example.com', 'user99@example.com', 'user100@example.com', 'user101@example.com', 'user102@example.com', 'user103@example.com', 'user104@example.com', 'user105@example.com', 'user106@example.com', 'user107@example.com', 'user108@example.com', 'user109@example.com', 'user110@example.com');
SELECT * FROM users WHERE id NOT IN (1000003, 2000006, 3000009, 4000012, 5000015, 6000018, 7000021, 8000024, 9000027, 10000030, 11000033, 12000036, 13000039, 14000042, 15000045, 16000048, 17000051, 18000054, 19000057, 20000060, 21000063, 22000066, 23000069, 24000072, 25000075, 26000078, 27000081, 28000084, 29000087, 30000090, 31000093, 32000096, 33000099, 34000102, 35000105, 36000108, 37000111, 38000114, 39000117, 40000120, 41000123, 42000126, 43000129, 44000132, 45000135, 46000138, 47000141, 48000144, 49000147, 50000150, 51000153, 52000156, 53000159, 54000162, 55000165, 56000168, 57000171, 58000174, 59000177, 60000180, 61000183, 62000186, 63000189, 64000192, 65000195, 66000198, 67000201, 68000204, 69000207, 70000210, 71000213, 72000216, 73000219, 74000222, 75000225, 76000228, 77000231, 78000234, 79000237, 80000240, 81000243, 82000246, 83000249, 84000252, 85000255, 86000258, 87000261, 88000264, 89000267, 90000270, 91000273, 92000276, 93000279, 94000282, 95000285, 96000288, 97000291, 98000294, 99000297, 100000300, 101000303, 102000306, 103000309, 104000312, 105000315, 106000318, 107000321, 108000324, 109000327, 110000330, 111000333, 112000336, 113000339, 114000342, 115000345, 116000348, 117000351, 118000354, 119000357, 120000360, 121000363, 122000366, 123000369, 124000372, 125000375, 126000378, 127000381, 128000384, 129000387, 130000390, 131000393, 132000396, 133000399, 134000402, 135000405, 136000408, 137000411, 138000414, 139000417, 140000420, 141000423, 142000426, 143000429, 144000432, 145000435, 146000438, 147000441, 148000444, 149000447, 150000450, 151000453, 152000456, 153000459, 154000462, 155000465, 156000468, 157000471, 158000474, 159000477, 160000480, 161000483, 162000486, 163000489, 164000492, 165000495, 166000498, 167000501, 168000504, 169000507, 170000510, 171000513, 172000516, 173000519, 174000522, 175000525, 176000528, 177000531, 178000534, 179000537, 180000540, 181000543, 182000546, 183000549, 184000552, 185000555, 186000558, 187000561, 188000564, 189000567, 190000570, 191000573, 192000576, 193000579, 194000582, 195000585, 196000588, 197000591, 198000594, 199000597, 200000600);
DELETE FROM sessions WHERE id IN ('00000001-0000-4000-8000-000000000001', '00000002-0000-4000-8000-000000000002', '00000003-0000-4000-8000-000000000003', '00000004-0000-4000-8000-000000000004', '00000005-0000-4000-8000-000000000005', '00000006-0000-4000-8000-000000000006', '00000007-0000-4000-8000-000000000007', '00000008-0000-4000-8000-000000000008', '00000009-0000-4000-8000-000000000009', '0000000a-0000-4000-8000-00000000000a', '0000000b-0000-4000-8000-00000000000b', '0000000c-0000-4000-8000-00000000000c', '0000000d-0000-4000-8000-00000000000d', '0000000e-0000-4000-8000-00000000000e', '0000000f-0000-4000-8000-00000000000f', '00000010-0000-4000-8000-000000000010', '00000011-0000-4000-8000-000000000011', '00000012-0000-4000-8000-000000000012', '00000013-0000-4000-8000-000000000013', '00000014-0000-4000-8000-000000000014', '00000015-0000-4000-8000-000000000015', '00000016-0000-4000-8000-000000000016', '00000017-0000-4000-8000-000000000017', '00000018-0000-4000-8000-000000000018', '00000019-0000-4000-8000-000000000019', '0000001a-0000-4000-8000-00000000001a', '0000001b-0000-4000-8000-00000000001b', '0000001c-0000-4000-8000-00000000001c', '0000001d-0000-4000-8000-00000000001d', '0000001e-0000-4000-8000-00000000001e', '0000001f-0000-4000-8000-00000000001f', '00000020-0000-4000-8000-000000000020', '00000021-0000-4000-8000-000000000021', '00000022-0000-4000-8000-000000000022', '00000023-0000-4000-8000-000000000023', '00000024-0000-4000-8000-000000000024', '00000025-0000-4000-8000-000000000025', '00000026-0000-4000-8000-000000000026', '00000027-0000-4000-8000-000000000027', '00000028-0000-4000-8000-000000000028', '00000029-0000-4000-8000-000000000029', '0000002a-0000-4000-8000-00000000002a', '0000002b-0000-4000-8000-00000000002b', '0000002c-0000-4000-8000-00000000002c', '0000002d-0000-4000-8000-00000000002d', '0000002e-0000-4000-8000-00000000002e', '0000002f-0000-4000-8000-00000000002f', '00000030-0000-4000-8000-000000000030', '00000031-0000-4000-8000-000000000031', '00000032-0000-4000-8000-000000000032', '00000033-0000-4000-8000-000000000033', '00000034-0000-4000-8000-000000000034', '00000035-0000-4000-8000-000000000035', '00000036-0000-4000-8000-000000000036', '00000037-0000-4000-8000-000000000037', '00000038-0000-4000-8000-000000000038', '00000039-0000-4000-8000-000000000039', '0000003a-0000-4000-8000-00000000003a', '0000003b-0000-4000-8000-00000000003b', '0000003c-0000-4000-8000-00000000003c', '0000003d-0000-4000-8000-00000000003d', '0000003e-0000-4000-8000-00000000003e', '0000003f-0000-4000-8000-00000000003f', '00000040-0000-4000-8000-000000000040', '00000041-0000-4000-8000-000000000041', '00000042-0000-4000-8000-000000000042', '00000043-0000-4000-8000-000000000043', '00000044-0000-4000-8000-000000000044', '00000045-0000-4000-8000-000000000045', '00000046-0000-4000-8000-000000000046', '00000047-0000-4000-8000-000000000047', '00000048-0000-4000-8000-000000000048', '00000049-0000-4000-8000-000000000049', '0000004a-0000-4000-8000-00000000004a', '0000004b-0000-4000-8000-00000000004b', '0000004c-0000-4000-8000-00000000004c', '0000004d-0000-4000-8000-00000000004d', '0000004e-0000-4000-8000-00000000004e', '0000004f-0000-4000-8000-00000000004f', '00000050-0000-4000-8000-000000000050', '00000051-0000-4000-8000-000000000051', '00000052-0000-4000-8000-000000000052', '00000053-0000-4000-8000-000000000053', '00000054-0000-4000-8000-000000000054', '00000055-0000-4000-8000-000000000055', '00000056-0000-4000-8000-000000000056', '00000057-0000-4000-8000-000000000057', '00000058-0000-4000-8000-000000000058', '00000059-0000-4000-8000-000000000059', '0000005a-0000-4000-8000-00000000005a', '0000005b-0000-4000-8000-00000000005b', '0000005c-0000-4000-8000-00000000005c', '0000005d-0000-4000-8000-00000000005d', '0000005e-0000-4000-8000-00000000005e', '0000005f-0000-4000-8000-00000000005f', '00000060-0000-4000-8000-000000000060', '00000061-0000-4000-8000-000000000061', '00000062-0000-4000-8000-000000000062', '00000063-0000-4000-8000-000000000063', '00000064-0000-4000-8000-000000000064', '00000065-0000-4000-8000-000000000065', '00000066-0000-4000-8000-000000000066', '00000067-0000-4000-8000-000000000067', '00000068-0000-4000-8000-000000000068');
SELECT * FROM t WHERE (a, b) IN ((1, 'b'), (2, 'c'), (3, 'd'), (4, 'e'), (5, 'f'), (6, 'g'), (7, 'h'), (8, 'i'), (9, 'j'), (10, 'k'), (11, 'l'), (12, 'm'), (13, 'n'), (14, 'o'), (15, 'p'), (16, 'q'), (17, 'r'), (18, 's'), (19, 't'), (20, 'u'), (21, 'v'), (22, 'w'), (23, 'x'), (24, 'y'), (25, 'z'), (26, 'a'), (27, 'b'), (28, 'c'), (29, 'd'), (30, 'e'), (31, 'f'), (32, 'g'), (33, 'h'), (34, 'i'), (35, 'j'), (36, 'k'), (37, 'l'), (38, 'm'), (39, 'n'), (40, 'o'), (41, 'p'), (42, 'q'), (43, 'r'), (44, 's'), (45, 't'), (46, 'u'), (47, 'v'), (48, 'w'), (49, 'x'), (50, 'y'), (51, 'z'), (52, 'a'), (53, 'b'), (54, 'c'), (55, 'd'), (56, 'e'), (57, 'f'), (58, 'g'), (59, 'h'), (60, 'i'), (61, 'j'), (62, 'k'), (63, 'l'), (64, 'm'), (65, 'n'), (66, 'o'), (67, 'p'), (68, 'q'), (69, 'r'), (70, 's'), (71, 't'), (72, 'u'), (73, 'v'), (74, 'w'), (75, 'x'), (76, 'y'), (77, 'z'), (78, 'a'), (79, 'b'), (80, 'c'), (81, 'd'), (82, 'e'), (83, 'f'), (84, 'g'), (85, 'h'), (86, 'i'), (87, 'j'), (88, 'k'), (89, 'l'), (90, 'm'), (91, 'n'), (92, 'o'), (93, 'p'), (94, 'q'), (95, 'r'), (96, 's'), (97, 't'), (98, 'u'), (99, 'v'), (100, 'w'), (101, 'x'));
SELECT * FROM t WHERE id = ANY (ARRAY[500, 501, 502, 503, 504, 505, 506, 507, 508, 509, 510, 511, 512, 513, 514, 515, 516, 517, 518, 519, 520, 521, 522, 523, 524, 525, 526, 527, 528, 529, 530, 531, 532, 533, 534, 535, 536, 537, 538, 539, 540, 541, 542, 543, 544, 545, 546, 547, 548, 549, 550, 551, 552, 553, 554, 555, 556, 557, 558, 559, 560, 561, 562, 563, 564, 565, 566, 567, 568, 569, 570, 571, 572, 573, 574, 575, 576, 577, 578, 579, 580, 581, 582, 583, 584, 585, 586, 587, 588, 589, 590, 591, 592, 593, 594, 595, 596, 597, 598, 599, 600, 601, 602, 603, 604, 605, 606, 607, 608, 609, 610, 611, 612, 613, 614, 615, 616, 617, 618, 619, 620, 621, 622, 623, 624, 625, 626, 627, 628, 629, 630, 631, 632, 633, 634, 635, 636, 637, 638, 639]);
SELECT * FROM t WHERE code IN (-50.5, -49.5, -48.5, -47.5, -46.5, -45.5, -44.5, -43.5, -42.5, -41.5, -40.5, -39.5, -38.5, -37.5, -36.5, -35.5, -34.5, -33.5, -32.5, -31.5, -30.5, -29.5, -28.5, -27.5, -26.5, -25.5, -24.5, -23.5, -22.5, -21.5, -20.5, -19.5, -18.5, -17.5, -16.5, -15.5, -14.5, -13.5, -12.5, -11.5, -10.5, -9.5, -8.5, -7.5, -6.5, -5.5, -4.5, -3.5, -2.5, -1.5, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5, 17.5, 18.5, 19.5, 20.5, 21.5, 22.5, 23.5, 24.5, 25.5, 26.5, 27.5, 28.5, 29.5, 30.5, 31.5, 32.5, 33.5, 34.5, 35.5, 36.5, 37.5, 38.5, 39.5, 40.5, 41.5, 42.5, 43.5, 44.5, 45.5, 46.5, 47.5, 48.5, 49.5, 50.5, 51.5, 52.5, 53.5, 54.5, 55.5, 56.5, 57.5, 58.5, 59.5);
-- Many-column inserts
INSERT INTO wide_table (col_01, col_02, col_03, col_04, col_05, col_06, col_07, col_08, col_09, col_10, col_11, col_12, col_13, col_14, col_15, col_16, col_17, col_18, col_19, col_20, col_21, col_22, col_23, col_24, col_25, col_26, col_27, col_28, col_29, col_30, col_31, col_32, col_33, col_34, col_35, col_36, col_37, col_38, col_39, col_40, col_41, col_42, col_43, col_44, col_45, col_46, col_47, col_48, col_49, col_50, col_51, col_52, col_53, col_54, col_55, col_56, col_57, col_58, col_59, col_60, col_61, col_62, col_63, col_64, col_65, col_66, col_67, col_68, col_69, col_70, col_71, col_72, col_73, col_74, col_75, col_76, col_77, col_78, col_79, col_80) VALUES ('v1', 2.25, NULL, true, 5, 'v6', 7.25, NULL, true, 10, 'v11', 12.25, NULL, true, 15, 'v16', 17.25, NULL, true, 20, 'v21', 22.25, NULL, true, 25, 'v26', 27.25, NULL, true, 30, 'v31', 32.25, NULL, true, 35, 'v36', 37.25, NULL, true, 40, 'v41', 42.25, NULL, true, 45, 'v46', 47.25, NULL, true, 50, 'v51', 52.25, NULL, true, 55, 'v56', 57.25, NULL, true, 60, 'v61', 62.25, NULL, true, 65, 'v66', 67.25, NULL, true, 70, 'v71', 72.25, NULL, true, 75, 'v76', 77.25, NULL, true, 80);
INSERT INTO wide_table (col_01, col_02, col_03, col_04, col_05, col_06, col_07, col_08, col_09, col_10, col_11, col_12, col_13, col_14, col_15, col_16, col_17, col_18, col_19, col_20, col_21, col_22, col_23, col_24, col_25, col_26, col_27, col_28, col_29, col_30, col_31, col_32, col_33, col_34, col_35, col_36, col_37, col_38, col_39, col_40, col_41, col_42, col_43, col_44, col_45, col_46, col_47, col_48, col_49, col_50, col_51, col_52, col_53, col_54, col_55, col_56, col_57, col_58, col_59, col_60) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55, $56, $57, $58, $59, $60) RETURNING id;
INSERT INTO wide_table (col_01, col_02, col_03, col_04, col_05, col_06, col_07, col_08, col_09, col_10, col_11, col_12, col_13, col_14, col_15, col_16, col_17, col_18, col_19, col_20) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20), ($21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34, $35, $36, $37, $38, $39, $40), ($41, $42, $43, $44, $45, $46, $47, $48, $49, $50, $51, $52, $53, $54, $55, $56, $57, $58, $59, $60), ($61, $62, $63, $64, $65, $66, $67, $68, $69, $70, $71, $72, $73, $74, $75, $76, $77, $78, $79, $80), ($81, $82, $83, $84, $85, $86, $87, $88, $89, $90, $91, $92, $93, $94, $95, $96, $97, $98, $99, $100), ($101, $102, $103, $104, $105, $106, $107, $108, $109, $110, $111, $112, $113, $114, $115, $116, $117, $118, $119, $120), ($121, $122, $123, $124, $125, $126, $127, $128, $129, $130, $131, $132, $133, $134, $135, $136, $137, $138, $139, $140), ($141, $142, $143, $144, $145, $146, $147, $148, $149, $150, $151, $152, $153, $154, $155, $156, $157, $158, $159, $160), ($161, $162, $163, $164, $165, $166, $167, $168, $169, $170, $171, $172, $173, $174, $175, $176, $177, $178, $179, $180), ($181, $182, $183, $184, $185, $186, $187, $188, $189, $190, $191, $192, $193, $194, $195, $196, $197, $198, $199, $200), ($201, $202, $203, $204, $205, $206, $207, $208, $209, $210, $211, $212, $213, $214, $215, $216, $217, $218, $219, $220), ($221, $222, $223, $224, $225, $226, $227, $228, $229, $230, $231, $232, $233, $234, $235, $236, $237, $238, $239, $240);
SELECT t.col_01, t.col_02, t.col_03, t.col_04, t.col_05, t.col_06, t.col_07, t.col_08, t.col_09, t.col_10, t.col_11, t.col_12, t.col_13, t.col_14, t.col_15, t.col_16, t.col_17, t.col_18, t.col_19, t.col_20, t.col_21, t.col_22, t.col_23, t.col_24, t.col_25, t.col_26, t.col_27, t.col_28, t.col_29, t.col_30, t.col_31, t.col_32, t.col_33, t.col_34, t.col_35, t.col_36, t.col_37, t.col_38, t.col_39, t.col_40, t.col_41, t.col_42, t.col_43, t.col_44, t.col_45, t.col_46, t.col_47, t.col_48, t.col_49, t.col_50, t.col_51, t.col_52, t.col_53, t.col_54, t.col_55, t.col_56, t.col_57, t.col_58, t.col_59, t.col_60, t.col_61, t.col_62, t.col_63, t.col_64, t.col_65, t.col_66, t.col_67, t.col_68, t.col_69, t.col_70, t.col_71, t.col_72, t.col_73, t.col_74, t.col_75, t.col_76, t.col_77, t.col_78, t.col_79, t.col_80 FROM wide_table t WHERE t.col_01 = 1;
UPDATE wide_table SET col_01 = $1, col_02 = $2, col_03 = $3, col_04 = $4, col_05 = $5, col_06 = $6, col_07 = $7, col_08 = $8, col_09 = $9, col_10 = $10, col_11 = $11, col_12 = $12, col_13 = $13, col_14 = $14, col_15 = $15, col_16 = $16, col_17 = $17, col_18 = $18, col_19 = $19, col_20 = $20, col_21 = $21, col_22 = $22, col_23 = $23, col_24 = $24, col_25 = $25, col_26 = $26, col_27 = $27, col_28 = $28, col_29 = $29, col_30 = $30, col_31 = $31, col_32 = $32, col_33 = $33, col_34 = $34, col_35 = $35, col_36 = $36, col_37 = $37, col_38 = $38, col_39 = $39, col_40 = $40, col_41 = $41, col_42 = $42, col_43 = $43, col_44 = $44, col_45 = $45, col_46 = $46, col_47 = $47, col_48 = $48, col_49 = $49, col_50 = $50 WHERE id = $51;
CREATE TABLE wide_table (id bigserial PRIMARY KEY, col_01 text, col_02 numeric, col_03 jsonb, col_04 boolean, col_05 int, col_06 text, col_07 numeric, col_08 jsonb, col_09 boolean, col_10 int, col_11 text, col_12 numeric, col_13 jsonb, col_14 boolean, col_15 int, col_16 text, col_17 numeric, col_18 jsonb, col_19 boolean, col_20 int, col_21 text, col_22 numeric, col_23 jsonb, col_24 boolean, col_25 int, col_26 text, col_27 numeric, col_28 jsonb, col_29 boolean, col_30 int, col_31 text, col_32 numeric, col_33 jsonb, col_34 boolean, col_35 int, col_36 text, col_37 numeric, col_38 jsonb, col_39 boolean, col_40 int, col_41 text, col_42 numeric, col_43 jsonb, col_44 boolean, col_45 int, col_46 text, col_47 numeric, col_48 jsonb, col_49 boolean, col_50 int, col_51 text, col_52 numeric, col_53 jsonb, col_54 boolean, col_55 int, col_56 text, col_57 numeric, col_58 jsonb, col_59 boolean, col_60 int, col_61 text, col_62 numeric, col_63 jsonb, col_64 boolean, col_65 int, col_66 text, col_67 numeric, col_68 jsonb, col_69 boolean, col_70 int, col_71 text, col_72 numeric, col_73 jsonb, col_74 boolean, col_75 int, col_76 text, col_77 numeric, col_78 jsonb, col_79 boolean, col_80 int);
-- Nested expressions
SELECT (10 * (9 + (8 / (7 - (6 * (5 + (4 / (3 - (2 * (1 + x)))))))))) FROM t;
SELECT (20 / (19 - (18 * (17 + (16 / (15 - (14 * (13 + (12 / (11 - (10 * (9 + (8 / (7 - (6 * (5 + (4 / (3 - (2 * (1 + x)))))))))))))))))))) FROM t;
SELECT ((((((((((((((((((((1))))))))))))))))))));
SELECT (SELECT (SELECT (SELECT (SELECT (SELECT 1) + 0) + 1) + 2) + 3) + 4;
SELECT (SELECT (SELECT (SELECT (SELECT (SELECT (SELECT (SELECT (SELECT (SELECT (SELECT 1) + 0) + 1) + 2) + 3) + 4) + 5) + 6) + 7) + 8) + 9;
SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM t) s0) s1) s2) s3) s4) s5;
SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM (SELECT id FROM t) s0) s1) s2) s3) s4) s5) s6) s7) s8) s9) s10) s11;
SELECT CASE WHEN x > 7 THEN CASE WHEN x > 6 THEN CASE WHEN x > 5 THEN CASE WHEN x > 4 THEN CASE WHEN x > 3 THEN CASE WHEN x > 2 THEN CASE WHEN x > 1 THEN CASE WHEN x > 0 THEN 'deep' ELSE '0' END ELSE '1' END ELSE '2' END ELSE '3' END ELSE '4' END ELSE '5' END ELSE '6' END ELSE '7' END FROM t;
SELECT CASE WHEN x > 14 THEN CASE WHEN x > 13 THEN CASE WHEN x > 12 THEN CASE WHEN x > 11 THEN CASE WHEN x > 10 THEN CASE WHEN x > 9 THEN CASE WHEN x > 8 THEN CASE WHEN x > 7 THEN CASE WHEN x > 6 THEN CASE WHEN x > 5 THEN CASE WHEN x > 4 THEN CASE WHEN x > 3 THEN CASE WHEN x > 2 THEN CASE WHEN x > 1 THEN CASE WHEN x > 0 THEN 'deep' ELSE '0' END ELSE '1' END ELSE '2' END ELSE '3' END ELSE '4' END ELSE '5' END ELSE '6' END ELSE '7' END ELSE '8' END ELSE '9' END ELSE '10' END ELSE '11' END ELSE '12' END ELSE '13' END ELSE '14' END FROM t;
SELECT * FROM t WHERE (a19 AND (a18 OR (a17 AND (a16 OR (a15 AND (a14 OR (a13 AND (a12 OR (a11 AND (a10 OR (a9 AND (a8 OR (a7 AND (a6 OR (a5 AND (a4 OR (a3 AND (a2 OR (a1 AND a0)))))))))))))))))));
SELECT upper(lower(btrim(trim(upper(lower(btrim(trim(upper(lower(btrim(trim(upper(lower(btrim(trim(upper(lower(name)))))))))))))))))) FROM users;
SELECT 1 FROM t7 WHERE EXISTS (SELECT 1 FROM t6 WHERE EXISTS (SELECT 1 FROM t5 WHERE EXISTS (SELECT 1 FROM t4 WHERE EXISTS (SELECT 1 FROM t3 WHERE EXISTS (SELECT 1 FROM t2 WHERE EXISTS (SELECT 1 FROM t1 WHERE EXISTS (SELECT 1 FROM t0 WHERE t0.id = 1)))))));
SELECT data->'k0'->'k1'->'k2'->'k3'->'k4'->'k5'->'k6'->'k7'->'k8'->'k9'->'k10'->'k11'->'k12'->'k13'->'k14' FROM docs;
SELECT coalesce(coalesce(coalesce(coalesce(coalesce(coalesce(coalesce(coalesce(coalesce(coalesce(coalesce(coalesce(x, 0), 0), 0), 0), 0), 0), 0), 0), 0), 0), 0), 0) FROM t;
SELECT ARRAY[[[[[[1]]]]]];
SELECT ROW(ROW(ROW(ROW(ROW(ROW(ROW(ROW(1))))))));
WITH c0 AS (SELECT 0 AS v), c1 AS (SELECT 1 AS v UNION ALL SELECT v FROM c0), c2 AS (SELECT 2 AS v UNION ALL SELECT v FROM c1), c3 AS (SELECT 3 AS v UNION ALL SELECT v FROM c2), c4 AS (SELECT 4 AS v UNION ALL SELECT v FROM c3), c5 AS (SELECT 5 AS v UNION ALL SELECT v FROM c4), c6 AS (SELECT 6 AS v UNION ALL SELECT v FROM c5), c7 AS (SELECT 7 AS v UNION ALL SELECT v FROM c6), c8 AS (SELECT 8 AS v UNION ALL SELECT v FROM c7), c9 AS (SELECT 9 AS v UNION ALL SELECT v FROM c8), c10 AS (SELECT 10 AS v UNION ALL SELECT v FROM c9), c11 AS (SELECT 11 AS v UNION ALL SELECT v FROM c10), c12 AS (SELECT 12 AS v UNION ALL SELECT v FROM c11), c13 AS (SELECT 13 AS v UNION ALL SELECT v FROM c12), c14 AS (SELECT 14 AS v UNION ALL SELECT v FROM c13), c15 AS (SELECT 15 AS v UNION ALL SELECT v FROM c14), c16 AS (SELECT 16 AS v UNION ALL SELECT v FROM c15), c17 AS (SELECT 17 AS v UNION ALL SELECT v FROM c16), c18 AS (SELECT 18 AS v UNION ALL SELECT v FROM c17), c19 AS (SELECT 19 AS v UNION ALL SELECT v FROM c18), c20 AS (SELECT 20 AS v UNION ALL SELECT v FROM c19), c21 AS (SELECT 21 AS v UNION ALL SELECT v FROM c20), c22 AS (SELECT 22 AS v UNION ALL SELECT v FROM c21), c23 AS (SELECT 23 AS v UNION ALL SELECT v FROM c22), c24 AS (SELECT 24 AS v UNION ALL SELECT v FROM c23) SELECT count(*) FROM c24;
SELECT 'part0' || 'part1' || 'part2' || 'part3' || 'part4' || 'part5' || 'part6' || 'part7' || 'part8' || 'part9' || 'part10' || 'part11' || 'part12' || 'part13' || 'part14' || 'part15' || 'part16' || 'part17';
SELECT 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11 + 12 + 13 + 14 + 15 + 16 + 17 + 18;
SELECT (c0 = 0 AND c1 = 1 AND c2 = 2 AND c3 = 3 AND c4 = 4 AND c5 = 5 AND c6 = 6 AND c7 = 7 AND c8 = 8 AND c9 = 9 AND c10 = 10 AND c11 = 11 AND c12 = 12 AND c13 = 13 AND c14 = 14 AND c15 = 15 AND c16 = 16 AND c17 = 17 AND c18 = 18 AND c19 = 19 AND c20 = 20 AND c21 = 21 AND c22 = 22 AND c23 = 23 AND c24 = 24 AND c25 = 25 AND c26 = 26 AND c27 = 27 AND c28 = 28 AND c29 = 29 AND c30 = 30 AND c31 = 31 AND c32 = 32 AND c33 = 33 AND c34 = 34 AND c35 = 35 AND c36 = 36 AND c37 = 37 AND c38 = 38 AND c39 = 39 AND c40 = 40 AND c41 = 41 AND c42 = 42 AND c43 = 43 AND c44 = 44 AND c45 = 45 AND c46 = 46 AND c47 = 47 AND c48 = 48 AND c49 = 49 AND c50 = 50 AND c51 = 51 AND c52 = 52 AND c53 = 53 AND c54 = 54 AND c55 = 55 AND c56 = 56 AND c57 = 57 AND c58 = 58 AND c59 = 59) FROM t;
