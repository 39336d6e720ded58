//! Build script: finds the libpg_query that the `pg_query` crate ships, compiles our small C shim
//! against its headers, generates bindings with bindgen, and generates the tree converters from
//! libpg_query's own mapping tables (see `codegen.rs`).
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

mod codegen;

fn main() {
    let pkg = pg_query_dir();
    let lib = pkg.join("libpg_query");
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=build");
    println!("cargo:rerun-if-changed=csrc");

    let includes = [
        lib.clone(),
        lib.join("src"),
        lib.join("src/postgres/include"),
        lib.join("src/include"),
        lib.join("vendor"),
        manifest.join("csrc"),
    ];
    // Match the pg_query crate's own compile flags (it defines USE_ASSERT_CHECKING in debug).
    let asserts =
        env::var("PROFILE").as_deref() == Ok("debug") || env::var("DEBUG").as_deref() == Ok("1");

    let mut cc = cc::Build::new();
    cc.file(manifest.join("csrc/shim.c"))
        .warnings(false)
        .flag("-fno-strict-aliasing")
        .flag("-fwrapv");
    for inc in &includes {
        cc.include(inc);
    }
    if asserts {
        cc.define("USE_ASSERT_CHECKING", None);
    }
    cc.compile("pg_query_raw_shim");

    let mut bg = bindgen::Builder::default()
        .header(manifest.join("csrc/wrapper.h").display().to_string())
        .layout_tests(false)
        .derive_debug(false)
        .derive_default(false)
        .generate_comments(false)
        .allowlist_function(
            "pg_query_.*|pgqr_.*|palloc0?|lappend|make(Integer|Float|Boolean|String|BitString)",
        )
        .allowlist_type("NodeTag|List|ListCell|Node|PgQuery.*")
        .allowlist_var("NodeTag_.*|PG_VERSION_NUM");
    for inc in &includes {
        bg = bg.clang_arg(format!("-I{}", inc.display()));
    }
    if asserts {
        bg = bg.clang_arg("-DUSE_ASSERT_CHECKING");
    }
    let tables = codegen::Tables::read(&lib.join("src/include"));
    for ty in tables.c_types() {
        bg = bg.allowlist_type(ty);
    }
    bg.generate()
        .expect("bindgen failed on libpg_query's headers (is libclang-dev installed?)")
        .write_to_file(out.join("bindings.rs"))
        .expect("writing bindings.rs");

    std::fs::write(out.join("convert_out.rs"), tables.gen_out()).expect("writing convert_out.rs");
    std::fs::write(out.join("convert_read.rs"), tables.gen_read())
        .expect("writing convert_read.rs");
}

/// The `pg_query` package's folder, from `cargo metadata` (its Cargo.toml has no `links` key, so
/// it passes us no DEP_ variables).
fn pg_query_dir() -> PathBuf {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest =
        Path::new(&env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let target = env::var("TARGET").expect("TARGET");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
            &target,
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .expect("running cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let pkg = packages
        .iter()
        .find(|p| p["name"] == "pg_query")
        .expect("pg_query package in cargo metadata");
    let manifest_path = pkg["manifest_path"].as_str().expect("manifest_path");
    Path::new(manifest_path)
        .parent()
        .expect("package dir")
        .to_path_buf()
}
