//! stutterp sizing (being written).
