//! HIP backend (being written).
