//! reclaimlab-host (being written).
