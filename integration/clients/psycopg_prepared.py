"""Shared prepared statements seen from psycopg 3 with server-side prepare on every statement
(prepare_threshold=0): one client's DEALLOCATE ALL / DISCARD ALL (sent as prepared statements)
and DDL, whether through the tested endpoint or straight on the server, never break another
client's statements.

Usage: psycopg_prepared.py DSN DIRECT_DSN
DSN is the endpoint under test (PostgreSQL itself, or pgdog in front of it); DIRECT_DSN is the
server, for DDL that does not go through the endpoint. Prints one line per step: its rows, or
the SQLSTATE of its error. The test compares the output of both endpoints.
"""
import sys

import psycopg


def step(out, name, conn, sql):
    try:
        cur = conn.execute(sql)
        rows = cur.fetchall() if cur.description else cur.statusmessage
        out.append(f"{name}: {rows}")
    except psycopg.Error as e:
        out.append(f"{name}: error {e.sqlstate}")


def main():
    dsn, direct_dsn = sys.argv[1], sys.argv[2]
    opts = dict(autocommit=True, prepare_threshold=0)
    out = []
    with psycopg.connect(direct_dsn, autocommit=True) as server:
        server.execute("DROP TABLE IF EXISTS pp_t")
        server.execute("CREATE TABLE pp_t (a int)")
        server.execute("INSERT INTO pp_t VALUES (1)")
        with psycopg.connect(dsn, **opts) as one, psycopg.connect(dsn, **opts) as other:
            select = "SELECT a FROM pp_t WHERE a = 1"
            step(out, "other prepares", other, select)
            step(out, "one DEALLOCATE ALL", one, "DEALLOCATE ALL")
            step(out, "other again", other, select)
            step(out, "one DISCARD ALL", one, "DISCARD ALL")
            step(out, "other again", other, select)
            step(out, "one select *", one, "SELECT * FROM pp_t")
            step(out, "one ALTER", one, "ALTER TABLE pp_t ADD COLUMN b int DEFAULT 7")
            step(out, "other select * after ALTER", other, "SELECT * FROM pp_t")
            step(out, "one select * after ALTER", one, "SELECT * FROM pp_t")
            # DDL that does not go through the endpoint.
            server.execute("ALTER TABLE pp_t ADD COLUMN c int DEFAULT 8")
            with psycopg.connect(dsn, **opts) as third:
                step(out, "third select * after outside ALTER", third, "SELECT * FROM pp_t")
                step(out, "third again", third, "SELECT * FROM pp_t")
            step(out, "other DISCARD ALL", other, "DISCARD ALL")
            step(out, "other select *", other, "SELECT * FROM pp_t")
            step(out, "one select a", one, select)
    print("\n".join(out))


main()
