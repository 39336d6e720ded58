//! The `orders` fixture of the replica-identity tests: the most common layout, a surrogate
//! primary key (`id`) on a table sharded by another column (`customer_id`), and a pgbench-style
//! write load on it straight on the source (inserts, updates of `amount`, updates of
//! `customer_id` that move rows between shards, deletes, and transactions doing several).
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Rows `orders` starts with.
pub const SEED_ROWS: i64 = 2000;
/// Rows (ids 1..=TOAST_ROWS) whose `note` is ~64 kB of hex digits: incompressible enough to be
/// stored out of line, so an UPDATE that leaves it alone sends it as unchanged TOAST.
pub const TOAST_ROWS: i64 = 20;

/// `orders` with [`SEED_ROWS`] rows and publication `pub` for it.
pub const SCHEMA: &str = "
CREATE TABLE orders (id bigserial PRIMARY KEY, customer_id bigint NOT NULL, amount int, note text);
CREATE PUBLICATION pub FOR TABLE orders;
INSERT INTO orders (customer_id, amount, note)
  SELECT i % 97, i, CASE WHEN i <= 20
    THEN (SELECT string_agg(md5(i::text || '-' || j), '') FROM generate_series(1, 2000) j)
    ELSE 'n' || i END
  FROM generate_series(1, 2000) i;
";

/// The `[[sharded_tables]]` entry of `orders` in database `dst`: by `customer_id`.
pub fn sharded_by_customer() -> String {
    super::sharded_table("dst", "orders", "customer_id", "bigint")
}

/// A small deterministic generator (xorshift), one per client.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Writes on `url` (the source) until `stop`, counting its statements in `done`: per round one
/// of an insert, an update of `amount`, a move (new `customer_id`), a delete, or a transaction
/// moving a row and updating it again. Ids are drawn from the seeded rows and the ones
/// inserted since (a deleted id just changes no row). Returns the errors seen.
pub async fn load(
    url: String,
    seed: u64,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
) -> Vec<String> {
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("load client connects");
    tokio::spawn(conn);
    let mut rng = Rng(seed | 1);
    let mut errors = Vec::new();
    let mut highest = SEED_ROWS as u64;
    while !stop.load(Ordering::SeqCst) {
        let id = 1 + rng.below(highest) as i64;
        let customer = rng.below(1000) as i64;
        let sql = match rng.below(10) {
            0..=2 => {
                highest += 1;
                format!(
                    "INSERT INTO orders (customer_id, amount, note) VALUES ({customer}, 1, 'new')"
                )
            }
            3..=5 => format!("UPDATE orders SET amount = amount + 1 WHERE id = {id}"),
            6 | 7 => format!("UPDATE orders SET customer_id = {customer} WHERE id = {id}"),
            8 => format!("DELETE FROM orders WHERE id = {id}"),
            _ => format!(
                "BEGIN; UPDATE orders SET customer_id = {customer} WHERE id = {id}; \
                 UPDATE orders SET amount = amount * 2, note = 'moved' WHERE id = {id}; COMMIT"
            ),
        };
        if let Err(e) = client.batch_execute(&sql).await {
            errors.push(format!("{sql}: {e}"));
        }
        done.fetch_add(1, Ordering::SeqCst);
    }
    errors
}
