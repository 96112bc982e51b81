//! Errors of the record crate.
//!
//! One enum for everything that can go wrong while writing, reading, validating
//! or importing a run record. Every variant that comes from user input names the
//! file, the line (where there is one) and what would have been accepted, because
//! the people reading these messages are holding a broken file and want to know
//! where to look and how to fix it.

use std::path::PathBuf;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// An operating-system I/O error on a named file or directory.
    #[error("{}: {what}: {err}", path.display())]
    Io {
        /// The file or directory concerned.
        path: PathBuf,
        /// What was being done (`reading`, `creating`, `renaming into place`, ...).
        what: &'static str,
        /// The underlying error (shown in the message, so not also a `source`).
        err: std::io::Error,
    },

    /// A required file of the record is missing.
    #[error("{}: missing: {hint}", path.display())]
    Missing {
        /// The file that should exist.
        path: PathBuf,
        /// What the file should hold and what produces it.
        hint: String,
    },

    /// `run.json` is not valid JSON, is missing a required key, or a key has a
    /// value of the wrong kind.
    #[error("{}: {key}: {message}", path.display())]
    Meta {
        /// The `run.json` file.
        path: PathBuf,
        /// The key concerned (dotted path, e.g. `machine.cpus`), or `(document)`.
        key: String,
        /// What is wrong and what would be accepted.
        message: String,
    },

    /// `run.json` declares a schema this version does not read.
    #[error(
        "{}: schema: found {found:?}, this reclaimlab reads {expected:?} \
         (a record written by a newer reclaimlab? upgrade, or re-create the record)",
        path.display()
    )]
    Schema {
        /// The `run.json` file.
        path: PathBuf,
        /// The schema string found.
        found: String,
        /// The schema string this version reads.
        expected: &'static str,
    },

    /// A line of a text input (CSV, trace, mmtests log) is malformed.
    #[error("{}:{line}: {message}", path.display())]
    Line {
        /// The file concerned.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// What is wrong and what would be accepted.
        message: String,
    },

    /// A compressed file ends early or is corrupt.
    #[error(
        "{}:{line}: the gzip stream is truncated or corrupt ({err}); \
         re-copy or re-capture the file (`gzip -t` checks it)",
        path.display()
    )]
    Gzip {
        /// The compressed file.
        path: PathBuf,
        /// The number of the line being read when the stream broke (1-based).
        line: u64,
        /// The decoder's error (shown in the message).
        err: std::io::Error,
    },

    /// An input to be imported has nothing usable in it.
    #[error("{}: {message}", path.display())]
    Import {
        /// The input file or directory.
        path: PathBuf,
        /// What was expected and what was found.
        message: String,
    },

    /// A writer was used in a way the record format does not allow (a programming
    /// error of the caller, reported rather than panicking).
    #[error("{}: {message}", path.display())]
    Usage {
        /// The record being written.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
}

/// Result with [`RecordError`].
pub type Result<T, E = RecordError> = std::result::Result<T, E>;

impl RecordError {
    /// Builds an [`RecordError::Io`].
    pub fn io(path: impl Into<PathBuf>, what: &'static str, err: std::io::Error) -> Self {
        RecordError::Io {
            path: path.into(),
            what,
            err,
        }
    }

    /// Builds a [`RecordError::Line`].
    pub fn line(path: impl Into<PathBuf>, line: u64, message: impl Into<String>) -> Self {
        RecordError::Line {
            path: path.into(),
            line,
            message: message.into(),
        }
    }
}
