// The bitcode targets' address spaces our pipeline passes (ol-prefetch-streams, ol-prefetch-next-group)
// leave alone: group (shared, LDS) memory, small and in the first-level cache, and amdgcn's private
// memory; in both nvptx64's and amdgcn's numbering global memory is 1, generic 0 and constant 4.
#pragma once

namespace ol_rs {

inline constexpr unsigned kGroupAddressSpace = 3, kPrivateAddressSpace = 5;

} // namespace ol_rs
