//! Where and how pgdog logs, as PgBouncer's settings say: `log_format` (`text`, or `json`: one
//! object per line with timestamp, level, message and the event's fields: database, user,
//! client, sqlstate...), `logfile` (appended to; reopened at SIGHUP and RELOAD, so logrotate
//! can move it), and `syslog` with `syslog_ident` and `syslog_facility`. Without a logfile
//! the lines go to stderr. The level comes from `RUST_LOG` (default `info`).
use crate::config::General;
use parking_lot::Mutex;
use std::io::Write;
use std::path::PathBuf;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

/// The open logfile and its path.
static LOGFILE: Mutex<Option<(PathBuf, std::fs::File)>> = Mutex::new(None);
/// syslog is open (`openlog` was called).
static SYSLOG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Installs the process' logger from `general` (once, at start).
pub fn init(general: &General) -> Result<(), String> {
    if let Some(path) = &general.logfile {
        *LOGFILE.lock() = Some((path.clone(), open(path)?));
    }
    if general.syslog {
        open_syslog(&general.syslog_ident, &general.syslog_facility)?;
    }
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let to_file = general.logfile.is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Sink)
        .with_ansi(!to_file && !general.syslog);
    let installed = if general.log_format == "json" {
        builder.event_format(Json).try_init()
    } else {
        builder.try_init()
    };
    installed.map_err(|e| e.to_string())
}

fn open(path: &PathBuf) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("logfile {}: {e}", path.display()))
}

/// SIGHUP and RELOAD: the logfile is closed and opened again at `path` (the configuration's,
/// which a reload may have changed), so a file logrotate moved away is left behind.
pub fn reopen(path: Option<&PathBuf>) {
    let mut file = LOGFILE.lock();
    let Some(path) = path.or(file.as_ref().map(|(p, _)| p)).cloned() else {
        return;
    };
    match open(&path) {
        Ok(f) => *file = Some((path, f)),
        Err(e) => eprintln!("pgdog: {e}"),
    }
}

/// syslog's facility by PgBouncer's names (`daemon` when unknown, as PgBouncer).
fn facility(name: &str) -> libc::c_int {
    match name {
        "auth" => libc::LOG_AUTH,
        "authpriv" => libc::LOG_AUTHPRIV,
        "user" => libc::LOG_USER,
        "local0" => libc::LOG_LOCAL0,
        "local1" => libc::LOG_LOCAL1,
        "local2" => libc::LOG_LOCAL2,
        "local3" => libc::LOG_LOCAL3,
        "local4" => libc::LOG_LOCAL4,
        "local5" => libc::LOG_LOCAL5,
        "local6" => libc::LOG_LOCAL6,
        "local7" => libc::LOG_LOCAL7,
        _ => libc::LOG_DAEMON,
    }
}

fn open_syslog(ident: &str, facility_name: &str) -> Result<(), String> {
    let ident = std::ffi::CString::new(ident).map_err(|_| format!("bad syslog_ident {ident:?}"))?;
    // openlog keeps the pointer: the name lives as long as the process.
    let ident: &'static std::ffi::CStr = Box::leak(ident.into_boxed_c_str());
    // SAFETY: a NUL-terminated string that is never freed, and valid flags.
    unsafe { libc::openlog(ident.as_ptr(), libc::LOG_PID, facility(facility_name)) };
    SYSLOG.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Where formatted lines go: the logfile or stderr, and syslog.
#[derive(Clone, Copy)]
struct Sink;

/// One event's line, written when it is complete.
struct Line {
    level: Level,
    buf: Vec<u8>,
}

impl Write for Line {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        if SYSLOG.load(std::sync::atomic::Ordering::Relaxed) {
            let priority = match self.level {
                Level::ERROR => libc::LOG_ERR,
                Level::WARN => libc::LOG_WARNING,
                Level::INFO => libc::LOG_INFO,
                _ => libc::LOG_DEBUG,
            };
            let text = String::from_utf8_lossy(&self.buf)
                .trim_end()
                .replace('\0', " ");
            if let Ok(c) = std::ffi::CString::new(text) {
                // SAFETY: a "%s" format with one NUL-terminated string argument.
                unsafe { libc::syslog(priority, c"%s".as_ptr(), c.as_ptr()) };
            }
        }
        let mut file = LOGFILE.lock();
        match file.as_mut() {
            Some((_, f)) => {
                let _ = f.write_all(&self.buf);
            }
            None if SYSLOG.load(std::sync::atomic::Ordering::Relaxed) => {}
            None => {
                let _ = std::io::stderr().write_all(&self.buf);
            }
        }
    }
}

impl<'a> MakeWriter<'a> for Sink {
    type Writer = Line;
    fn make_writer(&'a self) -> Line {
        Line {
            level: Level::INFO,
            buf: Vec::new(),
        }
    }
    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Line {
        Line {
            level: *meta.level(),
            buf: Vec::with_capacity(256),
        }
    }
}

/// `log_format = "json"`: one object per line.
struct Json;

/// An event's fields as JSON values (`message` among them).
struct Fields(serde_json::Map<String, serde_json::Value>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
}

impl<S, N> FormatEvent<S, N> for Json
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        let mut line = serde_json::Map::new();
        line.insert("timestamp".into(), rfc3339_now().into());
        line.insert("level".into(), meta.level().as_str().into());
        line.insert("target".into(), meta.target().into());
        let mut fields = Fields(serde_json::Map::new());
        event.record(&mut fields);
        line.extend(fields.0);
        writeln!(writer, "{}", serde_json::Value::Object(line))
    }
}

/// Now as `2026-11-28T23:35:00.123456Z`.
fn rfc3339_now() -> String {
    let us = crate::stats::clients::now_us();
    let secs = us / 1_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = crate::replication::pgoutput::civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60,
        us % 1_000_000
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_are_rfc3339() {
        let t = super::rfc3339_now();
        assert_eq!(t.len(), 27, "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
    }

    #[test]
    fn facilities_by_name() {
        assert_eq!(super::facility("local3"), libc::LOG_LOCAL3);
        assert_eq!(super::facility("nonsense"), libc::LOG_DAEMON);
    }
}
