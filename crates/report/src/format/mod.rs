//! Exporters: each turns a [`crate::Report`] into bytes, and nothing else.

pub mod csv;
pub mod fidelity_html;
pub mod fidelity_text;
mod ftrace;
pub mod html;
mod html_plots;
mod html_tables;
pub mod json;
mod oom;
mod plot;
pub mod runs;
mod sweep;
pub mod text;
