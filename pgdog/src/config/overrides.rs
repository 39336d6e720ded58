//! The settings one pool runs with. The most specific setting wins: the user's entry for the
//! database (users.toml), then the user's entry for every database (`database = "*"`), then the
//! database's server entry (`[[databases]]`), then `[general]`.
use super::{Database, PoolerMode, Settings, User, FALLBACK_DATABASE};

/// A pool's client timeouts, milliseconds (0: off): a request in flight (`query_timeout`), a
/// transaction waiting for its client (`idle_in_transaction_timeout`), a client idle between
/// transactions (`client_idle_timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClientClocks {
    pub query: u64,
    pub idle_in_transaction: u64,
    pub idle: u64,
}

/// The values in force for one user's pool on one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    pub size: usize,
    pub min: usize,
    pub reserve: usize,
    pub mode: PoolerMode,
    /// Milliseconds.
    pub server_lifetime: u64,
    /// Milliseconds.
    pub idle_timeout: u64,
    /// Milliseconds, sent as a startup parameter (0: not sent).
    pub statement_timeout: u64,
    pub read_only: bool,
    /// The clients' clocks, ms (0: off).
    pub clocks: ClientClocks,
    /// Milliseconds a client waits for a server connection.
    pub checkout_timeout: u64,
    /// Milliseconds, sent as Postgres' `transaction_timeout` (0: not sent).
    pub transaction_timeout: u64,
    /// The role pgdog logs in to the servers as, when not the client's own.
    pub server_user: Option<String>,
    /// Its password, when one is known.
    pub server_password: Option<String>,
    /// Without `server_password`, the client's own plain password may log in (false for a
    /// users.toml `server_user`: another role's password is never the client's).
    pub client_password: bool,
}

impl PoolConfig {
    /// Startup parameters the pool's server connections send (after user and database).
    pub fn startup_parameters(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if self.statement_timeout > 0 {
            out.push((
                "statement_timeout".into(),
                self.statement_timeout.to_string(),
            ));
        }
        if self.read_only {
            out.push(("default_transaction_read_only".into(), "on".into()));
        }
        if self.transaction_timeout > 0 {
            out.push((
                "transaction_timeout".into(),
                self.transaction_timeout.to_string(),
            ));
        }
        out
    }
}

impl Settings {
    /// The user's entry for every database (`database = "*"`), when `user` is another one.
    pub(super) fn user_wide(&self, user: &User) -> Option<&User> {
        if user.database == FALLBACK_DATABASE {
            return None;
        }
        self.users
            .users
            .iter()
            .find(|u| u.name == user.name && u.database == FALLBACK_DATABASE)
    }

    /// What `user`'s pool on the server `db` runs with.
    pub fn pool_config(&self, user: &User, db: &Database) -> PoolConfig {
        let g = &self.config.general;
        let wide = self.user_wide(user);
        // The user's entries first, then the database's, then `[general]`'s.
        macro_rules! pick {
            ($field:ident, $general:expr) => {
                user.$field
                    .or_else(|| wide.and_then(|w| w.$field))
                    .or(db.$field)
                    .unwrap_or($general)
            };
        }
        let size = pick!(pool_size, g.default_pool_size).max(1);
        // A server user comes with the password given beside it at the same level.
        let users = [Some(user), wide].into_iter().flatten();
        let (server_user, server_password, client_password) = match users
            .filter_map(|u| Some((u.server_user.clone()?, u.server_password.clone())))
            .next()
        {
            Some((name, password)) => {
                let password = password.or_else(|| self.plain_password(&name));
                (Some(name), password, false)
            }
            None => (db.user.clone(), db.password.clone(), true),
        };
        PoolConfig {
            size,
            min: pick!(min_pool_size, g.min_pool_size).min(size),
            reserve: pick!(reserve_pool_size, g.reserve_pool_size),
            mode: pick!(pooler_mode, g.pooler_mode),
            server_lifetime: pick!(server_lifetime, g.server_lifetime),
            idle_timeout: pick!(idle_timeout, g.idle_timeout),
            statement_timeout: pick!(statement_timeout, g.statement_timeout),
            read_only: pick!(read_only, g.read_only),
            clocks: ClientClocks {
                query: pick!(query_timeout, g.query_timeout),
                idle_in_transaction: pick!(
                    idle_in_transaction_timeout,
                    g.idle_in_transaction_timeout
                ),
                idle: pick!(client_idle_timeout, g.client_idle_timeout),
            },
            checkout_timeout: pick!(checkout_timeout, g.checkout_timeout),
            transaction_timeout: pick!(transaction_timeout, g.transaction_timeout),
            server_user,
            server_password,
            client_password,
        }
    }

    /// A users.toml plain password of `name` (any of its entries).
    fn plain_password(&self, name: &str) -> Option<String> {
        self.users
            .users
            .iter()
            .filter(|u| u.name == name)
            .find_map(|u| u.password.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(config: &str, users: &str) -> Settings {
        Settings {
            config: toml::from_str(config).unwrap(),
            users: toml::from_str(users).unwrap(),
            ..Default::default()
        }
    }

    #[test]
    fn the_most_specific_setting_wins() {
        let s = settings(
            "[general]\ndefault_pool_size = 7\nidle_timeout = 1000\nstatement_timeout = 10\n\
             reserve_pool_size = 1\n\
             [[databases]]\nname = \"db\"\npool_size = 5\nmin_pool_size = 2\nidle_timeout = 2000\n\
             pool_mode = \"session\"\nread_only = true\n",
            "[[users]]\nname = \"a\"\ndatabase = \"db\"\npool_size = 3\n\
             [[users]]\nname = \"a\"\ndatabase = \"*\"\npool_size = 4\nidle_timeout = 3000\n\
             server_user = \"owner\"\n\
             [[users]]\nname = \"owner\"\ndatabase = \"db\"\npassword = \"secret\"\n\
             [[users]]\nname = \"b\"\ndatabase = \"db\"\n",
        );
        let db = &s.config.databases[0];
        let a = s.pool_config(&s.users.users[0], db);
        assert_eq!((a.size, a.min, a.reserve, a.idle_timeout), (3, 2, 1, 3000));
        assert_eq!(
            (a.mode, a.read_only, a.statement_timeout),
            (PoolerMode::Session, true, 10)
        );
        assert_eq!(a.server_user.as_deref(), Some("owner"));
        assert_eq!(a.server_password.as_deref(), Some("secret"));
        let b = s.pool_config(&s.users.users[3], db);
        assert_eq!(
            (b.size, b.idle_timeout, b.server_user.is_none()),
            (5, 2000, true)
        );
        assert_eq!(
            b.startup_parameters(),
            vec![
                ("statement_timeout".to_string(), "10".to_string()),
                ("default_transaction_read_only".into(), "on".into())
            ]
        );
    }

    #[test]
    fn client_timeouts_per_user_under_pgbouncer_names() {
        let s = settings(
            "[general]\nquery_timeout = 7\n[[databases]]\nname = \"db\"\nclient_idle_timeout = 9\n",
            "[[users]]\nname = \"a\"\ndatabase = \"db\"\nidle_transaction_timeout = 400\n\
             query_wait_timeout = 500\ntransaction_timeout = 600\npool_idle_timeout = 1234\n",
        );
        let a = s.pool_config(&s.users.users[0], &s.config.databases[0]);
        assert_eq!(
            a.clocks,
            ClientClocks {
                query: 7,
                idle_in_transaction: 400,
                idle: 9
            }
        );
        assert_eq!((a.checkout_timeout, a.idle_timeout), (500, 1234));
        assert!(a
            .startup_parameters()
            .contains(&("transaction_timeout".to_string(), "600".to_string())));
    }
}
