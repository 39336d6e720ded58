//! `dry_run` / `dry_run_shards`: which databases count their statements' routes (SHOW ROUTES),
//! and as if they had how many shards. Set in `[general]`, overridden per `[[databases]]`
//! entry (any entry of the database name).
use super::Settings;

impl Settings {
    /// The planned shard count when `database` runs a dry run, else `None`.
    pub fn dry_run(&self, database: &str) -> Option<usize> {
        let g = &self.config.general;
        let entries = || self.config.databases.iter().filter(|d| d.name == database);
        let on = entries().find_map(|d| d.dry_run).unwrap_or(g.dry_run);
        if !on {
            return None;
        }
        let planned = entries()
            .find_map(|d| d.dry_run_shards)
            .or(g.dry_run_shards);
        Some(planned.unwrap_or_else(|| self.shards(database)))
    }

    /// A dry run needs at least 2 planned shards (1 would say "one shard" of everything).
    pub(super) fn check_dry_run(&self) -> Result<(), String> {
        if self.config.general.dry_run_shards.is_some_and(|n| n < 2) {
            return Err("general.dry_run_shards must be at least 2".into());
        }
        for (i, d) in self.config.databases.iter().enumerate() {
            if d.dry_run_shards.is_some_and(|n| n < 2) {
                return Err(format!(
                    "databases[{i}] ({}): dry_run_shards must be at least 2",
                    d.name
                ));
            }
            if self.dry_run(&d.name).is_some_and(|n| n < 2) {
                return Err(format!(
                    "databases[{i}] ({}): dry_run needs dry_run_shards (the planned shard count, at least 2): the database has one shard",
                    d.name
                ));
            }
        }
        Ok(())
    }
}
