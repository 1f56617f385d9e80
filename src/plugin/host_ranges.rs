//! The registered (locked) host ranges of a device, with LLVM 22's pinned-buffer rules: ranges are
//! disjoint; registering a range that lies inside a registered one adds a use of it; one that overlaps
//! a registered range without being contained in it is INVALID_ARGUMENT; unregistering takes any
//! pointer inside a range and drops one use. Each plugin keeps its own per-range data `T` (the CUDA
//! plugin: whether it page-locked the range itself).

use std::collections::BTreeMap;

use super::{PluginError, PluginResult};

struct Range<T> {
    len: usize,
    uses: u32,
    data: T,
}

/// Disjoint registered host ranges keyed by base address.
pub struct HostRanges<T> {
    map: BTreeMap<usize, Range<T>>,
}

impl<T> Default for HostRanges<T> {
    fn default() -> Self {
        HostRanges { map: BTreeMap::new() }
    }
}

impl<T> HostRanges<T> {
    /// `[ptr, ptr+size)` inside a registered range: one more use of it, `Ok(true)`. Overlapping none:
    /// `Ok(false)` (the caller registers it and calls [`HostRanges::insert`]). Partial overlap or a range
    /// that wraps around the address space: INVALID_ARGUMENT.
    pub fn add_use(&mut self, ptr: usize, size: usize) -> PluginResult<bool> {
        let partial = || PluginError::InvalidArgument("partial overlapping not allowed in locked buffers".into());
        let end = ptr
            .checked_add(size)
            .ok_or_else(|| PluginError::InvalidArgument("host range wraps around the address space".into()))?;
        if let Some((&start, r)) = self.map.range_mut(..=ptr).next_back()
            && ptr < start + r.len
        {
            if end <= start + r.len {
                r.uses += 1;
                return Ok(true);
            }
            return Err(partial());
        }
        if let Some((&next, _)) = self.map.range(ptr..).next()
            && next < end
        {
            return Err(partial());
        }
        Ok(false)
    }

    /// Record a new range (after [`HostRanges::add_use`] said it overlaps none) with one use.
    pub fn insert(&mut self, ptr: usize, size: usize, data: T) {
        self.map.insert(ptr, Range { len: size, uses: 1, data });
    }

    /// The registered range containing `ptr`, as (base, length).
    pub fn find(&self, ptr: usize) -> Option<(usize, usize)> {
        let (&start, r) = self.map.range(..=ptr).next_back()?;
        (ptr - start < r.len).then_some((start, r.len))
    }

    /// Drop one use of the range containing `ptr`; `Some((base, data))` when that was its last use (the
    /// range is gone), `None` while others remain; INVALID_ARGUMENT when no range contains `ptr`.
    pub fn release(&mut self, ptr: usize) -> PluginResult<Option<(usize, T)>> {
        let not_found = || PluginError::InvalidArgument("cannot find locked buffer".into());
        let (&start, r) = self.map.range_mut(..=ptr).next_back().ok_or_else(not_found)?;
        if ptr >= start + r.len {
            return Err(not_found());
        }
        r.uses -= 1;
        if r.uses > 0 {
            return Ok(None);
        }
        Ok(self.map.remove(&start).map(|r| (start, r.data)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contained_ranges_add_uses_and_partial_overlaps_are_refused() {
        let mut t = HostRanges::default();
        assert!(!t.add_use(1000, 100).unwrap());
        t.insert(1000, 100, 'a');
        assert!(t.add_use(1010, 10).unwrap(), "inside: a use");
        assert!(t.add_use(1000, 100).unwrap(), "the same range: a use");
        assert!(matches!(t.add_use(1050, 100), Err(PluginError::InvalidArgument(_))), "runs past the end");
        assert!(matches!(t.add_use(950, 100), Err(PluginError::InvalidArgument(_))), "runs into it");
        assert!(matches!(t.add_use(usize::MAX - 1, 4), Err(PluginError::InvalidArgument(_))), "wraps");
        assert!(!t.add_use(1100, 10).unwrap(), "adjacent is disjoint");
        assert_eq!(t.find(1000), Some((1000, 100)));
        assert_eq!(t.find(1099), Some((1000, 100)));
        assert_eq!(t.find(1100), None, "one past the end");
        assert_eq!(t.find(999), None);
        assert!(matches!(t.release(1100), Err(PluginError::InvalidArgument(_))), "not registered");
        assert_eq!(t.release(1099).unwrap(), None);
        assert_eq!(t.release(1000).unwrap(), None);
        assert_eq!(t.release(1050).unwrap(), Some((1000, 'a')), "last use");
        assert!(matches!(t.release(1000), Err(PluginError::InvalidArgument(_))));
    }
}
