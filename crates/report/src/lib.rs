//! reclaimlab-report (being written).
