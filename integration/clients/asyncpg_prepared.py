"""Shared prepared statements seen from asyncpg (which prepares every statement it runs with
arguments, caches it, and re-prepares by itself after 0A000 `cached plan must not change result
type`): one client's DEALLOCATE ALL / DISCARD ALL and DDL, through the tested endpoint or
straight on the server, never break another client's statements.

Usage: asyncpg_prepared.py DSN DIRECT_DSN
Prints one line per step: its rows, or the SQLSTATE of its error. The test compares the output
of PostgreSQL itself with pgdog's.
"""
import asyncio
import sys

import asyncpg


async def step(out, name, coro):
    try:
        rows = await coro
        out.append(f"{name}: {[tuple(r) for r in rows] if isinstance(rows, list) else rows}")
    except asyncpg.PostgresError as e:
        out.append(f"{name}: error {e.sqlstate}")


async def main():
    dsn, direct_dsn = sys.argv[1], sys.argv[2]
    out = []
    server = await asyncpg.connect(direct_dsn)
    await server.execute("DROP TABLE IF EXISTS ap_t; CREATE TABLE ap_t (a int); INSERT INTO ap_t VALUES (1)")
    one = await asyncpg.connect(dsn)
    other = await asyncpg.connect(dsn)
    select = "SELECT a FROM ap_t WHERE a = $1"
    star = "SELECT * FROM ap_t WHERE a = $1"
    await step(out, "other prepares", other.fetch(select, 1))
    await step(out, "one DEALLOCATE ALL", one.execute("DEALLOCATE ALL"))
    await step(out, "other again", other.fetch(select, 1))
    await step(out, "one DISCARD ALL", one.execute("DISCARD ALL"))
    await step(out, "other again", other.fetch(select, 1))
    await step(out, "one select *", one.fetch(star, 1))
    await step(out, "one ALTER", one.execute("ALTER TABLE ap_t ADD COLUMN b int DEFAULT 7"))
    await step(out, "other select * after ALTER", other.fetch(star, 1))
    await step(out, "one select * after ALTER", one.fetch(star, 1))
    await server.execute("ALTER TABLE ap_t ADD COLUMN c int DEFAULT 8")
    third = await asyncpg.connect(dsn)
    await step(out, "third select * after outside ALTER", third.fetch(star, 1))
    await step(out, "one select * after outside ALTER", one.fetch(star, 1))
    await step(out, "other select * after outside ALTER", other.fetch(star, 1))
    for c in (one, other, third, server):
        await c.close()
    print("\n".join(out))


asyncio.run(main())
