# Build, test and install offload-rs as libLLVMOffload.so.22.1.
#
#   make            release library in build/lib (libLLVMOffload.so.22.1 + libLLVMOffload.so symlink)
#   make test       everything CI runs (see scripts/test.sh)
#   make install PREFIX=/opt/offload-rs   (the library, its compile helper lib/offload-rs/offload-rs-jit,
#                                          the header and the pkg-config file)
#
# The library is a Rust staticlib linked by cc with exports.map: rustc's cdylib version script cannot carry
# LLVM's named VERS1.0 node (shared/reference/clients.md §3).

PREFIX     ?= /usr/local
PROFILE    ?= release
LLVM_CONFIG ?= llvm-config-22
LLVM_LIBDIR := $(shell $(LLVM_CONFIG) --libdir)
TARGET_DIR ?= target
PROFILE_DIR := $(if $(filter dev,$(PROFILE)),debug,$(PROFILE))
STATICLIB  := $(TARGET_DIR)/$(PROFILE_DIR)/liboffload_rs.a
# The JIT's compile helper (src/jit/helper.rs), found by the library in offload-rs/ beside itself.
HELPER     := $(TARGET_DIR)/$(PROFILE_DIR)/offload-rs-jit
OUT        ?= build
SONAME     := libLLVMOffload.so.22.1
NATIVE_LIBS := -L$(LLVM_LIBDIR) -lLLVM-22 -lstdc++ -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
EXTRA_LDFLAGS ?=

.PHONY: all lib staticlib install test header clean FORCE

all: lib

staticlib:
	cargo build --lib --bins --profile $(PROFILE)

lib: staticlib
	@mkdir -p $(OUT)/lib
	cc -shared -o $(OUT)/lib/$(SONAME) -Wl,--whole-archive $(STATICLIB) -Wl,--no-whole-archive \
	   -Wl,--version-script=exports.map -Wl,-soname,$(SONAME) -Wl,--gc-sections -Wl,-z,defs \
	   $(NATIVE_LIBS) $(EXTRA_LDFLAGS)
	ln -sf $(SONAME) $(OUT)/lib/libLLVMOffload.so
	@mkdir -p $(OUT)/lib/offload-rs
	install -m 755 $(HELPER) $(OUT)/lib/offload-rs/offload-rs-jit

header:  # regenerate include/offload/OffloadAPI.h with cbindgen (tests/header.rs)
	UPDATE_HEADER=1 cargo test --test header

install: lib
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/offload $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -d $(DESTDIR)$(PREFIX)/lib/offload-rs
	install -m 755 $(OUT)/lib/$(SONAME) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	install -m 755 $(OUT)/lib/offload-rs/offload-rs-jit $(DESTDIR)$(PREFIX)/lib/offload-rs/offload-rs-jit
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libLLVMOffload.so
	install -m 644 include/offload/OffloadAPI.h $(DESTDIR)$(PREFIX)/include/offload/OffloadAPI.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' offload-rs.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/offload-rs.pc
	ln -sf offload-rs.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/LLVMOffload.pc

test:
	bash scripts/test.sh

clean:
	cargo clean
	rm -rf $(OUT)
