//! A read-only pool (`read_only`): its servers start every session with
//! `default_transaction_read_only = on`, so Postgres refuses writes (25006); pgdog refuses the
//! statements that would turn that off, with the same SQLSTATE. It guards against mistakes,
//! not against a determined client (a function on the server may still change the setting):
//! a role without write privileges is the security boundary.
use crate::router::read_write::words_outside_literals;

/// The SQLSTATE and message of a refused statement.
pub const CODE: &str = "25006";
pub const MESSAGE: &str =
    "cannot turn off read-only transactions on a read-only database (pgdog read_only)";

/// Whether `sql` may turn read-only transactions off: `READ WRITE` (BEGIN, START
/// TRANSACTION, SET TRANSACTION, SET SESSION CHARACTERISTICS), a SET of
/// `default_transaction_read_only` or `transaction_read_only`, or a `set_config` call whose
/// parameter is one of those or not a plain literal.
pub fn turns_off(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    let mut set = false;
    let mut previous_read = false;
    let read_write = words_outside_literals(&lower, |w, _| {
        set |= w == "set";
        let hit = previous_read && w == "write";
        previous_read = w == "read";
        hit
    });
    // (A SET anywhere: statements of a multi-statement query are not told apart.)
    let sets = set && lower.contains("transaction_read_only");
    read_write || sets || set_config_unsure(&lower)
}

/// A `set_config(` whose first argument is not a literal naming another parameter.
fn set_config_unsure(lower: &str) -> bool {
    lower.match_indices("set_config").any(|(at, name)| {
        let rest = lower[at + name.len()..].trim_start();
        let Some(args) = rest.strip_prefix('(') else {
            return false;
        };
        let Some(literal) = args.trim_start().strip_prefix('\'') else {
            return true;
        };
        let parameter = literal.split('\'').next().unwrap_or("");
        parameter.contains("read_only")
    })
}

#[cfg(test)]
mod tests {
    use super::turns_off;

    #[test]
    fn refuses_what_turns_read_only_off_and_nothing_else() {
        for sql in [
            "BEGIN READ WRITE",
            "start transaction isolation level serializable, read write",
            "BEGIN; SET TRANSACTION READ /* x */ WRITE",
            "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
            "SET default_transaction_read_only = off",
            "set \"default_transaction_read_only\" to false",
            "/* c */ SET LOCAL transaction_read_only = off",
            "SELECT set_config('default_transaction_read_only', 'off', false)",
            "SELECT pg_catalog.set_config ( 'transaction_read_only', 'off', true)",
            "SELECT set_config(name, 'off', false) FROM t",
            "SELECT 1; SET default_transaction_read_only = off",
        ] {
            assert!(turns_off(sql), "{sql}");
        }
        for sql in [
            "SELECT 1",
            "BEGIN READ ONLY",
            "BEGIN",
            "SELECT 'read write'",
            "SHOW transaction_read_only",
            "SELECT current_setting('default_transaction_read_only')",
            "RESET default_transaction_read_only",
            "SELECT set_config('app.user', '42', false)",
            "SET search_path = a",
        ] {
            assert!(!turns_off(sql), "{sql}");
        }
    }
}
