//! CPU compute device (placeholder until the cpu branch lands).
use std::sync::Arc;
pub fn devices() -> Vec<Arc<dyn super::Device>> {
    Vec::new()
}
