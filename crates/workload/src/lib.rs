//! Workload definitions: the generic TOML spec ([`spec`]), the named
//! workloads ([`stutterp`]), the simulated worker programs ([`workers`]) and
//! the runner that drives a simulated kernel through a workload's steps
//! ([`sim`]).

pub mod cgroups;
pub mod sim;
pub mod spec;
pub mod stutterp;
pub mod text;
pub mod workers;
