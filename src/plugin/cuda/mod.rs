//! CUDA plugin.
