//! Real pgoutput bytes captured from PostgreSQL 18.6 (`captures.txt`, data: see its header),
//! loaded once for the decoder tests.
use std::sync::LazyLock;

/// One capture: protocol version and its messages in order (XLogData LSN, payload hex).
pub(super) struct Fixture {
    pub name: &'static str,
    pub proto_version: u32,
    pub messages: Vec<(&'static str, &'static str)>,
}

/// Every capture, in the file's order.
pub(super) static ALL: LazyLock<Vec<Fixture>> =
    LazyLock::new(|| parse(include_str!("captures.txt")));

fn parse(text: &'static str) -> Vec<Fixture> {
    let mut all: Vec<Fixture> = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix("== ") {
            let (name_version, _what) = header.split_once(':').expect("== NAME VERSION: what");
            let (name, version) = name_version.split_once(' ').expect("== NAME VERSION");
            all.push(Fixture {
                name,
                proto_version: version.parse().expect("proto_version"),
                messages: Vec::new(),
            });
            continue;
        }
        let message = line.split_once(' ').expect("LSN HEX");
        all.last_mut()
            .expect("a capture header first")
            .messages
            .push(message);
    }
    all
}

/// The capture called `name`.
pub(super) fn named(name: &str) -> &'static Fixture {
    ALL.iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no capture {name}"))
}
