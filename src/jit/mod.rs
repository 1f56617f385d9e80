//! JIT.
