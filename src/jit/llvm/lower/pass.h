// ol-lower: the CPU lowering as a module pass of a pipeline string (pass.cpp).
#ifndef OL_RS_LOWER_PASS_H
#define OL_RS_LOWER_PASS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/IR/PassManager.h"

namespace ol_rs::lower {
// Adds `ol-lower<options>` to MPM when `name` is that pass (see pass.cpp); false for another name.
bool parseLowerPass(llvm::StringRef name, llvm::ModulePassManager &MPM);
} // namespace ol_rs::lower

#endif
