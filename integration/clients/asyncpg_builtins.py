"""40 asyncpg clients through one asyncpg pool, each calling built-in functions that leave no
session state, over and over, releasing its connection to the pool after each call (asyncpg's
reset sends `SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;`).

Usage: asyncpg_builtins.py DSN CLIENTS ROUNDS
Prints `ok CALLS` when every call answered right; otherwise the first error (its SQLSTATE) and
exits 1. Run by integration/tests/pooler_pinning.rs through pgdog with a smaller server pool.
"""
import asyncio
import sys

import asyncpg

CALLS = [
    ("SELECT pg_advisory_unlock_all()", None, None),
    ("SELECT txid_current() > 0", None, True),
    ("SELECT hashtext($1)", "pgdog", -381767418),
    ("SELECT date_bin('15 minutes', '2026-11-26 10:07'::timestamp, '2000-01-01')::text", None,
     "2026-11-26 10:00:00"),
    ("SELECT pg_column_size(ROW(1, 2))", None, 32),
    ("SELECT pg_catalog.upper($1)", "x", "X"),
    ("SELECT md5($1)", "a", "0cc175b9c0f1b6a831c399e269772661"),
]


async def client(pool, n, rounds):
    for r in range(rounds):
        sql, arg, want = CALLS[(n + r) % len(CALLS)]
        async with pool.acquire() as conn:
            got = await (conn.fetchval(sql, arg) if arg is not None else conn.fetchval(sql))
        if got != want:
            raise AssertionError(f"{sql}: {got!r}, want {want!r}")
    return rounds


async def main():
    dsn, clients, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    pool = await asyncpg.create_pool(dsn, min_size=clients, max_size=clients)
    try:
        done = await asyncio.gather(*(client(pool, n, rounds) for n in range(clients)))
    finally:
        await pool.close()
    print(f"ok {sum(done)}")


try:
    asyncio.run(main())
except Exception as e:  # the test prints it
    print(f"error {getattr(e, 'sqlstate', '')} {type(e).__name__}: {e}")
    sys.exit(1)
