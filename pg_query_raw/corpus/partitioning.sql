-- Declarative partitioning
CREATE TABLE measurement (
    city_id int NOT NULL,
    logdate date NOT NULL,
    peaktemp int,
    unitsales int
) PARTITION BY RANGE (logdate);
CREATE TABLE measurement_y2023 PARTITION OF measurement FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
CREATE TABLE measurement_y2024m01 PARTITION OF measurement FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
CREATE TABLE measurement_y2024m02 PARTITION OF measurement FOR VALUES FROM ('2024-02-01') TO ('2024-03-01') TABLESPACE fasttablespace;
CREATE TABLE measurement_old PARTITION OF measurement FOR VALUES FROM (MINVALUE) TO ('2023-01-01');
CREATE TABLE measurement_future PARTITION OF measurement FOR VALUES FROM ('2030-01-01') TO (MAXVALUE);
CREATE TABLE measurement_default PARTITION OF measurement DEFAULT;
CREATE TABLE IF NOT EXISTS measurement_y2025 PARTITION OF measurement FOR VALUES FROM ('2025-01-01') TO ('2026-01-01') WITH (parallel_workers = 4);
CREATE TABLE measurement_y2024m03 PARTITION OF measurement (
    CONSTRAINT y2024m03_peaktemp_check CHECK (peaktemp > -100),
    unitsales DEFAULT 0
) FOR VALUES FROM ('2024-03-01') TO ('2024-04-01');
CREATE TABLE events_p (
    id bigint GENERATED ALWAYS AS IDENTITY,
    tenant_id int NOT NULL,
    created_at timestamptz NOT NULL,
    payload jsonb,
    PRIMARY KEY (tenant_id, id, created_at)
) PARTITION BY RANGE (created_at);
CREATE TABLE events_p_2024_q1 PARTITION OF events_p FOR VALUES FROM ('2024-01-01 00:00:00+00') TO ('2024-04-01 00:00:00+00');
CREATE TABLE events_p_2024_q2 PARTITION OF events_p FOR VALUES FROM ('2024-04-01') TO ('2024-07-01');
CREATE TABLE range_multi (a int, b int, c text) PARTITION BY RANGE (a, b);
CREATE TABLE range_multi_low PARTITION OF range_multi FOR VALUES FROM (MINVALUE, MINVALUE) TO (10, 0);
CREATE TABLE range_multi_mid PARTITION OF range_multi FOR VALUES FROM (10, 0) TO (20, MAXVALUE);
CREATE TABLE range_multi_high PARTITION OF range_multi FOR VALUES FROM (20, MAXVALUE) TO (MAXVALUE, MAXVALUE);
CREATE TABLE range_expr (ts timestamptz, v int) PARTITION BY RANGE ((date_trunc('month', ts AT TIME ZONE 'UTC')));
CREATE TABLE range_num (n numeric) PARTITION BY RANGE (n);
CREATE TABLE range_num_neg PARTITION OF range_num FOR VALUES FROM (-1000.5) TO (0);
CREATE TABLE range_num_pos PARTITION OF range_num FOR VALUES FROM (0) TO (1e6);
CREATE TABLE range_collate (name text) PARTITION BY RANGE (name COLLATE "C");
CREATE TABLE range_collate_am PARTITION OF range_collate FOR VALUES FROM ('a') TO ('n');
CREATE TABLE range_opclass (name text) PARTITION BY RANGE (name text_pattern_ops);

-- LIST partitioning
CREATE TABLE cities_p (city_id bigserial NOT NULL, name text NOT NULL, population bigint) PARTITION BY LIST (left(lower(name), 1));
CREATE TABLE cities_ab PARTITION OF cities_p FOR VALUES IN ('a', 'b');
CREATE TABLE cities_cd PARTITION OF cities_p FOR VALUES IN ('c', 'd') PARTITION BY RANGE (population);
CREATE TABLE cities_cd_small PARTITION OF cities_cd FOR VALUES FROM (MINVALUE) TO (100000);
CREATE TABLE cities_cd_large PARTITION OF cities_cd FOR VALUES FROM (100000) TO (MAXVALUE);
CREATE TABLE cities_other PARTITION OF cities_p DEFAULT;
CREATE TABLE orders_by_region (id bigint, region text, amount numeric) PARTITION BY LIST (region);
CREATE TABLE orders_region_us PARTITION OF orders_by_region FOR VALUES IN ('us-east', 'us-west', 'us-central');
CREATE TABLE orders_region_eu PARTITION OF orders_by_region FOR VALUES IN ('eu-west', 'eu-central');
CREATE TABLE orders_region_null PARTITION OF orders_by_region FOR VALUES IN (NULL);
CREATE TABLE orders_region_default PARTITION OF orders_by_region DEFAULT PARTITION BY HASH (id);
CREATE TABLE orders_region_default_h0 PARTITION OF orders_region_default FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE orders_region_default_h1 PARTITION OF orders_region_default FOR VALUES WITH (MODULUS 2, REMAINDER 1);
CREATE TABLE status_list (id int, status smallint) PARTITION BY LIST (status);
CREATE TABLE status_list_active PARTITION OF status_list FOR VALUES IN (1, 2, 3);
CREATE TABLE status_list_inactive PARTITION OF status_list FOR VALUES IN (-1, 0);
CREATE TABLE bool_list (id int, flag boolean) PARTITION BY LIST (flag);
CREATE TABLE bool_list_true PARTITION OF bool_list FOR VALUES IN (true);
CREATE TABLE bool_list_false PARTITION OF bool_list FOR VALUES IN (false);

-- HASH partitioning
CREATE TABLE sessions_h (id uuid NOT NULL, user_id bigint NOT NULL, data jsonb) PARTITION BY HASH (user_id);
CREATE TABLE sessions_h0 PARTITION OF sessions_h FOR VALUES WITH (MODULUS 4, REMAINDER 0);
CREATE TABLE sessions_h1 PARTITION OF sessions_h FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE sessions_h2 PARTITION OF sessions_h FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TABLE sessions_h3 PARTITION OF sessions_h FOR VALUES WITH (modulus 4, remainder 3);
CREATE TABLE hash_multi (a int, b text) PARTITION BY HASH (a, b);
CREATE TABLE hash_multi_0 PARTITION OF hash_multi FOR VALUES WITH (MODULUS 8, REMAINDER 0);
CREATE UNLOGGED TABLE hash_unlogged (k int) PARTITION BY HASH (k);
CREATE TABLE tenant_data (tenant_id int NOT NULL, key text, value text, PRIMARY KEY (tenant_id, key)) PARTITION BY HASH (tenant_id);
CREATE TABLE tenant_data_p0 PARTITION OF tenant_data FOR VALUES WITH (MODULUS 16, REMAINDER 0) PARTITION BY LIST (key);
CREATE TABLE tenant_data_p0_cfg PARTITION OF tenant_data_p0 FOR VALUES IN ('config', 'settings');

-- Attaching and detaching
ALTER TABLE measurement ATTACH PARTITION measurement_y2022 FOR VALUES FROM ('2022-01-01') TO ('2023-01-01');
ALTER TABLE cities_p ATTACH PARTITION cities_ef FOR VALUES IN ('e', 'f');
ALTER TABLE orders_by_region ATTACH PARTITION orders_region_apac FOR VALUES IN ('ap-south', 'ap-northeast');
ALTER TABLE sessions_h ATTACH PARTITION sessions_h4 FOR VALUES WITH (MODULUS 8, REMAINDER 4);
ALTER TABLE measurement ATTACH PARTITION measurement_misc DEFAULT;
ALTER TABLE IF EXISTS measurement ATTACH PARTITION measurement_y2021 FOR VALUES FROM (MINVALUE) TO ('2022-01-01');
ALTER TABLE measurement DETACH PARTITION measurement_y2023;
ALTER TABLE measurement DETACH PARTITION measurement_y2024m01 CONCURRENTLY;
ALTER TABLE measurement DETACH PARTITION measurement_y2024m01 FINALIZE;
ALTER TABLE cities_p DETACH PARTITION cities_other;
ALTER TABLE public.events_p DETACH PARTITION public.events_p_2024_q1 CONCURRENTLY;
-- Partition maintenance
CREATE INDEX measurement_logdate_idx ON measurement (logdate);
CREATE INDEX measurement_city_idx ON ONLY measurement (city_id);
CREATE INDEX CONCURRENTLY measurement_y2024m01_city_idx ON measurement_y2024m01 (city_id);
ALTER INDEX measurement_city_idx ATTACH PARTITION measurement_y2024m01_city_idx;
CREATE UNIQUE INDEX events_p_uq ON events_p (tenant_id, id, created_at);
ALTER TABLE measurement ADD CONSTRAINT measurement_peaktemp_check CHECK (peaktemp BETWEEN -100 AND 100);
ALTER TABLE ONLY measurement ADD CONSTRAINT measurement_unitsales_check CHECK (unitsales >= 0) NOT VALID;
ALTER TABLE measurement_y2023 ADD CONSTRAINT y2023_logdate_check CHECK (logdate >= DATE '2023-01-01' AND logdate < DATE '2024-01-01');
ALTER TABLE measurement SET (parallel_workers = 2);
ALTER TABLE measurement_y2023 SET TABLESPACE archive_space;
DROP TABLE measurement_y2023;
TRUNCATE measurement_y2024m01;
SELECT * FROM measurement WHERE logdate >= DATE '2024-01-01' AND logdate < DATE '2024-02-01';
SELECT tableoid::regclass AS partition, count(*) FROM measurement GROUP BY 1 ORDER BY 1;
SELECT * FROM pg_partition_tree('measurement');
SELECT pg_partition_root('measurement_y2024m01'), pg_partition_ancestors('measurement_y2024m01');
SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'measurement'::regclass;
SELECT partstrat, partnatts, partattrs FROM pg_partitioned_table WHERE partrelid = 'measurement'::regclass;
INSERT INTO measurement (city_id, logdate, peaktemp, unitsales) VALUES (1, '2024-01-15', 21, 300);
UPDATE measurement SET logdate = '2024-02-15' WHERE city_id = 1 AND logdate = '2024-01-15';
