//! reclaimlab-kernel (being written).
