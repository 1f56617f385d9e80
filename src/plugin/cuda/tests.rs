//! GPU tests
