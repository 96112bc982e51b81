//! Exporters: each turns a [`crate::Report`] into bytes, and nothing else.

pub mod csv;
pub mod fidelity_html;
pub mod fidelity_text;
mod ftrace;
pub mod html;
pub mod json;
pub mod runs;
mod sweep;
pub mod text;
