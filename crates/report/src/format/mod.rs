//! Exporters: each turns a [`crate::Report`] into bytes, and nothing else.

pub mod csv;
mod ftrace;
pub mod html;
pub mod json;
pub mod runs;
mod sweep;
pub mod text;
