//! reclaimlab-record (being written).
