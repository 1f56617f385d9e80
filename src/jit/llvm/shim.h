// What the JIT's C++ shims (lower/, kernel_memory.cpp, passes.cpp, ...) share.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

namespace ol_rs {

// A malloc'ed NUL-terminated copy of `s` for Rust (freed with ol_rs_jit_free), or NULL when out of memory.
inline char *dup_for_rust(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p) {
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = 0;
  }
  return p;
}

} // namespace ol_rs
