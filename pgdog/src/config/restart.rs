//! Settings read once, at start: a reload that changes one is refused, naming it.
use super::General;

/// The `[general]` keys whose value differs between `old` and `new` and that only a restart
/// applies: the listening address and sockets, the runtime, the metrics endpoint, two-phase
/// commit's instance.
pub fn restart_only_changes(old: &General, new: &General) -> Vec<&'static str> {
    let mut changed = Vec::new();
    let mut check = |name: &'static str, same: bool| {
        if !same {
            changed.push(name);
        }
    };
    check("host", old.host == new.host);
    check("port", old.port == new.port);
    check("workers", old.workers == new.workers);
    check("so_reuseport", old.so_reuseport == new.so_reuseport);
    check("handover_dir", old.handover_dir == new.handover_dir);
    check(
        "unix_socket_dir",
        old.unix_socket_dir == new.unix_socket_dir,
    );
    check(
        "unix_socket_mode",
        old.unix_socket_mode == new.unix_socket_mode,
    );
    check(
        "unix_socket_group",
        old.unix_socket_group == new.unix_socket_group,
    );
    check(
        "openmetrics_port",
        old.openmetrics_port == new.openmetrics_port,
    );
    check(
        "openmetrics_host",
        old.openmetrics_host == new.openmetrics_host,
    );
    check(
        "two_phase_commit",
        old.two_phase_commit == new.two_phase_commit,
    );
    check("instance_id", old.instance_id == new.instance_id);
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_restart_only_key_that_changed() {
        let old = General::default();
        assert!(restart_only_changes(&old, &old.clone()).is_empty());
        let mut new = old.clone();
        new.port = 7000;
        new.stats_period = 1_000;
        new.workers = 2;
        assert_eq!(restart_only_changes(&old, &new), ["port", "workers"]);
    }
}
