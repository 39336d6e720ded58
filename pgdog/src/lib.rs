//! pgdog: a PostgreSQL proxy that pools connections, routes queries across shards and reshards
//! live databases. The modules land one concern at a time; see README.md for what works today.
