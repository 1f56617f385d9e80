//! CPU compute device.
