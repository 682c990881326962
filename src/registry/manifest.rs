//! Manifests, indexes and image configs (being written).
