//! Importers: external data (ftrace text, mmtests results) into run records.
//!
//! (being written)
