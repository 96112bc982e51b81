//! Workload definitions: the generic TOML spec and the named workloads.

pub mod stutterp;
