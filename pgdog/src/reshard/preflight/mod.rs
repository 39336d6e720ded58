//! The checks before a reshard creates anything: `pgdog reshard --check`, and the first step of
//! every reshard (a refusal stops it there). They read settings and catalogs only: no slot, no
//! table, no publication is created (a replication connection is opened and closed to prove
//! the REPLICATION privilege and `pg_hba.conf`). Every server is asked at once, each within
//! [`SERVER_TIMEOUT`], so the whole report takes a few seconds at most.
//!
//! One line per check: `ok`, `warning` (the reshard runs; the line says what to watch or
//! change) or `refused` (the reshard does not start; the line says what to do).
mod identity;
mod servers;
mod space;
mod tables;

use crate::config::Settings;
use crate::reshard::orchestrate::ReshardOptions;
use std::fmt;
use std::time::Duration;

/// How long one server may take to answer every question of the checks.
pub(crate) const SERVER_TIMEOUT: Duration = Duration::from_secs(4);
/// Findings spelled out per line; the rest are counted.
const SHOWN: usize = 6;

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Ok,
    Warning,
    Refused,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            Verdict::Ok => "ok",
            Verdict::Warning => "warning",
            Verdict::Refused => "refused",
        })
    }
}

/// One check: its name, its worst finding, and what it found (worst first).
#[derive(Debug, Clone)]
pub struct Check {
    pub name: &'static str,
    findings: Vec<(Verdict, String)>,
}

impl Check {
    pub(crate) fn new(name: &'static str) -> Check {
        Check {
            name,
            findings: Vec::new(),
        }
    }

    /// A finding that is fine (said for the record).
    pub(crate) fn ok(&mut self, text: impl Into<String>) {
        self.findings.push((Verdict::Ok, text.into()));
    }

    pub(crate) fn warn(&mut self, text: impl Into<String>) {
        self.findings.push((Verdict::Warning, text.into()));
    }

    pub(crate) fn refuse(&mut self, text: impl Into<String>) {
        self.findings.push((Verdict::Refused, text.into()));
    }

    /// The worst finding (ok when there is none).
    pub fn verdict(&self) -> Verdict {
        self.findings
            .iter()
            .map(|(v, _)| *v)
            .max()
            .unwrap_or(Verdict::Ok)
    }

    /// The findings of the worst kind, then the others, as one text.
    pub fn detail(&self) -> String {
        let mut sorted: Vec<&(Verdict, String)> = self.findings.iter().collect();
        sorted.sort_by_key(|f| std::cmp::Reverse(f.0));
        // Every refusal is spelled out (each must be fixed); other findings up to SHOWN.
        let refused = sorted
            .iter()
            .filter(|(v, _)| *v == Verdict::Refused)
            .count();
        let shown = refused.max(SHOWN);
        let mut parts: Vec<&str> = sorted.iter().take(shown).map(|(_, t)| t.as_str()).collect();
        let more = sorted.len().saturating_sub(shown);
        let more_text = format!("and {more} more");
        if more > 0 {
            parts.push(&more_text);
        }
        if parts.is_empty() {
            return "nothing to check".into();
        }
        parts.join("; ")
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<8} {}: {}", self.verdict(), self.name, self.detail())
    }
}

/// The checks' report.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    pub fn verdict(&self) -> Verdict {
        self.checks
            .iter()
            .map(Check::verdict)
            .max()
            .unwrap_or(Verdict::Ok)
    }

    /// The lines of the checks with this verdict.
    pub fn lines(&self, verdict: Verdict) -> Vec<String> {
        self.checks
            .iter()
            .filter(|c| c.verdict() == verdict)
            .map(|c| c.to_string())
            .collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.checks {
            writeln!(f, "{c}")?;
        }
        Ok(())
    }
}

/// Runs every check of a reshard with these options.
pub async fn run(settings: &Settings, options: &ReshardOptions) -> Report {
    let (probes, tables) = tokio::join!(
        servers::probe_all(settings, options),
        tables::read(settings, options)
    );
    let mut checks = servers::checks(&probes, options, tables.published.len());
    let placed = tables::placements(settings, options, &tables);
    checks.extend(tables::checks(
        settings,
        options,
        &tables,
        &placed,
        servers::destinations_can_set_role(&probes),
    ));
    let needs = space::estimate(&placed, &tables, settings.shards(&options.databases.to));
    checks.push(space::check(&probes, &needs, servers::resumed(&probes)).await);
    Report { checks }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_says_its_worst_finding_first() {
        let mut c = Check::new("wal_level");
        assert_eq!(c.verdict(), Verdict::Ok);
        c.ok("logical on a");
        c.warn("w");
        c.refuse("replica on b: set it");
        assert_eq!(c.verdict(), Verdict::Refused);
        assert_eq!(
            c.to_string(),
            "refused  wal_level: replica on b: set it; w; logical on a"
        );
        let mut many = Check::new("tables");
        (0..9).for_each(|i| many.warn(format!("t{i}")));
        assert!(
            many.detail().ends_with("t5; and 3 more"),
            "{}",
            many.detail()
        );
        let report = Report {
            checks: vec![c, many],
        };
        assert_eq!(report.verdict(), Verdict::Refused);
        assert_eq!(report.lines(Verdict::Warning).len(), 1);
    }
}
