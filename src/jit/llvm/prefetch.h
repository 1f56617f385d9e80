// What our prefetching passes (ol-prefetch-streams, ol-prefetch-next-group) share: the address spaces they
// leave alone and the prefetch they insert.
#pragma once

#include "llvm/IR/IRBuilder.h"

namespace ol_rs {

// The bitcode targets' address spaces the prefetching passes leave alone: group (shared, LDS) memory,
// small and in the first-level cache, and amdgcn's private memory; in both nvptx64's and amdgcn's
// numbering global memory is 1, generic 0 and constant 4.
inline constexpr unsigned kGroupAddressSpace = 3, kPrivateAddressSpace = 5;

// Inserts before `at` a prefetch of the data at `p` into every cache level (`llvm.prefetch` locality 3),
// for a write or a read. A prefetch is a hint: it never faults and changes no value, whatever `p` is.
inline void insertPrefetch(llvm::Instruction *at, llvm::Value *p, bool write) {
  llvm::IRBuilder<> B(at);
  B.CreateIntrinsic(llvm::Intrinsic::prefetch, {p->getType()},
                    {p, B.getInt32(write), B.getInt32(3), B.getInt32(1)});
}

} // namespace ol_rs
