//! reclaimlab-workload (being written).
