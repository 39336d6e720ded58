//! The import rule of `lib.rs`: no folder below `frontend/` and `admin/` names them (outside
//! comments and test modules), so no import circle runs through them and back.
use std::path::Path;

/// The folders that sessions and the admin database are built on.
const LOWER: &[&str] = &[
    "auth",
    "backend",
    "config",
    "merge",
    "net",
    "ops",
    "registry",
    "replication",
    "router",
    "sharding",
    "stats",
];
const UPPER: &[&str] = &["frontend", "admin"];

/// The upper folders `code` names: `crate::frontend...` paths, and `frontend` / `admin` inside a
/// `crate::{...}` import group.
fn upper_names(code: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for upper in UPPER {
        let path = code.contains(&format!("crate::{upper}"));
        let grouped = code.match_indices("crate::{").any(|(at, _)| {
            let group = &code[at..];
            let group = &group[..group.find('}').unwrap_or(group.len())];
            group
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|word| word == *upper)
        });
        if path || grouped {
            found.push(*upper);
        }
    }
    found
}

/// `src` up to its inline test module (`#[cfg(test)] mod tests {`), without `//` comments.
fn code_of(src: &str) -> String {
    let end = src
        .match_indices("#[cfg(test)]\nmod ")
        .find(|(at, _)| {
            let line = src[*at + 13..].lines().next().unwrap_or("");
            !line.trim_end().ends_with(';')
        })
        .map_or(src.len(), |(at, _)| at);
    src[..end]
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn walk(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("read src folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && !is_test_file(&path) {
            let src = std::fs::read_to_string(&path).expect("read source file");
            out.push((path.display().to_string(), code_of(&src)));
        }
    }
}

/// A test module in a file of its own (`tests.rs`, `*_tests.rs`, or under a `tests/` folder).
fn is_test_file(path: &Path) -> bool {
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    name == "tests"
        || name.ends_with("_tests")
        || path.components().any(|c| c.as_os_str() == "tests")
}

#[test]
fn lower_folders_never_import_frontend_or_admin() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut offenders = Vec::new();
    for folder in LOWER {
        let mut files = Vec::new();
        walk(&src.join(folder), &mut files);
        assert!(!files.is_empty(), "src/{folder} has no source files");
        for (path, code) in files {
            for upper in upper_names(&code) {
                offenders.push(format!("{path} imports {upper}/"));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

#[test]
fn upper_names_finds_paths_and_groups() {
    assert_eq!(upper_names("crate::frontend::x()"), ["frontend"]);
    assert_eq!(upper_names("use crate::{net, admin::Reply};"), ["admin"]);
    assert!(upper_names("use crate::net::protocol::frontend::QUERY;").is_empty());
    assert!(upper_names("use crate::{net, administrator};").is_empty());
}

#[test]
fn code_of_drops_comments_and_tests() {
    let src = "use crate::net; // crate::frontend\n#[cfg(test)]\nmod tests { crate::admin }";
    assert_eq!(code_of(src), "use crate::net; ");
    // An external test module's declaration does not end the code.
    let src = "#[cfg(test)]\nmod tests;\npub use crate::frontend::x;";
    assert!(code_of(src).contains("crate::frontend"));
    assert!(is_test_file(Path::new("src/merge/tests/spill.rs")));
    assert!(!is_test_file(Path::new("src/merge/spill.rs")));
}
