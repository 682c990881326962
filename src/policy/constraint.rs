//! Masterminds v3 constraint grammar (being written).
