-- pgbench -i (initialization)
drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers;
create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22));
create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100);
create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor=100);
create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100);
create unlogged table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22));
create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) partition by range (aid);
create table pgbench_accounts_1 partition of pgbench_accounts for values from (minvalue) to (25001) with (fillfactor=100);
create table pgbench_accounts_2 partition of pgbench_accounts for values from (25001) to (50001) with (fillfactor=100);
create table pgbench_accounts_4 partition of pgbench_accounts for values from (75001) to (maxvalue) with (fillfactor=100);
create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) partition by hash (aid);
create table pgbench_accounts_1 partition of pgbench_accounts for values with (modulus 4, remainder 0) with (fillfactor=100);
truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers;
insert into pgbench_branches(bid,bbalance) values(1,0);
insert into pgbench_tellers(tid,bid,tbalance) values (1,1,0);
copy pgbench_accounts from stdin with (freeze on);
copy pgbench_accounts from stdin;
insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, 1) as bid;
insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / 10 + 1, 0 from generate_series(1, 10) as tid;
insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / 100000 + 1, 0, '' from generate_series(1, 100000) as aid;
vacuum analyze pgbench_branches;
vacuum analyze pgbench_tellers;
vacuum analyze pgbench_accounts;
vacuum analyze pgbench_history;
alter table pgbench_branches add primary key (bid);
alter table pgbench_tellers add primary key (tid);
alter table pgbench_accounts add primary key (aid);
alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches;
alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches;
alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches;
alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers;
alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts;
select count(*) from pgbench_branches;
select o.n, p.partstrat, pg_catalog.count(i.inhparent) from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) where c.relname = 'pgbench_accounts' and o.n is not null group by 1, 2 order by 1 asc limit 1;

-- tpcb-like, prepared/extended protocol ($n placeholders)
UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;
SELECT abalance FROM pgbench_accounts WHERE aid = $1;
UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2;
UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP);

-- tpcb-like, simple protocol (variables substituted)
UPDATE pgbench_accounts SET abalance = abalance + -2773 WHERE aid = 40931;
SELECT abalance FROM pgbench_accounts WHERE aid = 40931;
UPDATE pgbench_tellers SET tbalance = tbalance + -2773 WHERE tid = 7;
UPDATE pgbench_branches SET bbalance = bbalance + -2773 WHERE bid = 1;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (7, 1, 40931, -2773, CURRENT_TIMESTAMP);
UPDATE pgbench_accounts SET abalance = abalance + 4512 WHERE aid = 88214;
SELECT abalance FROM pgbench_accounts WHERE aid = 88214;
UPDATE pgbench_tellers SET tbalance = tbalance + 4512 WHERE tid = 3;
UPDATE pgbench_branches SET bbalance = bbalance + 4512 WHERE bid = 1;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (3, 1, 88214, 4512, CURRENT_TIMESTAMP);
UPDATE pgbench_accounts SET abalance = abalance + 0 WHERE aid = 1;
UPDATE pgbench_accounts SET abalance = abalance + 5000 WHERE aid = 10000000;
UPDATE pgbench_accounts SET abalance = abalance + -5000 WHERE aid = 2500001;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (250, 25, 2500001, -5000, CURRENT_TIMESTAMP);

-- select-only
SELECT abalance FROM pgbench_accounts WHERE aid = 1;
SELECT abalance FROM pgbench_accounts WHERE aid = 57123;
SELECT abalance FROM pgbench_accounts WHERE aid = 99999;
SELECT abalance FROM pgbench_accounts WHERE aid = 100000;

-- custom-script patterns
SELECT sum(abalance) FROM pgbench_accounts WHERE bid = $1;
SELECT count(*) FROM pgbench_history WHERE mtime > now() - interval '1 minute';
SELECT * FROM pgbench_accounts WHERE aid BETWEEN $1 AND $1 + 100;
SELECT aid, abalance FROM pgbench_accounts WHERE aid IN ($1, $2, $3, $4, $5);
UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2 RETURNING abalance;
SELECT sum(bbalance) FROM pgbench_branches;
SELECT sum(tbalance) FROM pgbench_tellers;
SELECT sum(delta) FROM pgbench_history;
