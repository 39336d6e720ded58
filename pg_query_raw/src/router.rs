//! The router's fast path: a lean view of a statement, built without the full tree.
