//! bindgen output for libpg_query's parse nodes and entry points (generated at build time from
//! the headers the `pg_query` crate ships). Kept in its own module: the C `String` node would
//! shadow Rust's.
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code,
    clippy::all,
    unnecessary_transmutes,
    unsafe_op_in_unsafe_fn
)]
include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
