//! CUDA plugin (placeholder until the cuda branch lands).
use std::sync::Arc;
pub fn devices() -> Vec<Arc<dyn super::Device>> {
    Vec::new()
}
