//! The `pgdog` binary.
fn main() {
    println!("pgdog {}", env!("CARGO_PKG_VERSION"));
}
