# Build, test and install offload-rs as libLLVMOffload.so.22.1 and libLLVMOffload.so.23.1 (one core, two ABIs).
#
#   make            release libraries: build/lib (libLLVMOffload.so.22.1 + libLLVMOffload.so symlink) and
#                   build/lib23 (libLLVMOffload.so.23.1 + libLLVMOffload.so), each with offload-rs/offload-rs-jit
#                   (the compile helper) and offload-rs/liboffload-rs-llvm.so (the in-process LLVM module)
#                   beside it. The 23 library links a copy of the same staticlib in which objcopy renames
#                   the 23.1 entry points (src/api/v23, offload_rs_v23_olX) to their C names
#                   (scripts/abi23-syms.sh).
#
# Two builds of the one crate: without the `llvm` feature (target/client: the libraries, which have no
# LLVM in them and never load it themselves) and with it (target: the compile helper, and the staticlib
# the LLVM module is linked from, exporting only its three offload_rs_llvm_* entry points).
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
# with the `llvm` feature: the LLVM module's code
STATICLIB  := $(TARGET_DIR)/$(PROFILE_DIR)/liboffload_rs.a
# without it: the libraries' code
CLIENT_TARGET_DIR ?= $(TARGET_DIR)/client
CLIENT_STATICLIB := $(CLIENT_TARGET_DIR)/$(PROFILE_DIR)/liboffload_rs.a
MODULE     := liboffload-rs-llvm.so
# The JIT's compile helper (src/jit/helper.rs), found by the library in offload-rs/ beside itself.
HELPER     := $(TARGET_DIR)/$(PROFILE_DIR)/offload-rs-jit
OUT        ?= build
SONAME     := libLLVMOffload.so.22.1
SONAME23   := libLLVMOffload.so.23.1
NATIVE_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
LLVM_LIBS  := -L$(LLVM_LIBDIR) -lLLVM-22 -lstdc++
EXTRA_LDFLAGS ?=

.PHONY: all lib staticlib install test header clean FORCE

all: lib

staticlib:
	cargo build --lib --bins --profile $(PROFILE)
	cargo build --lib --profile $(PROFILE) --no-default-features --target-dir $(CLIENT_TARGET_DIR)

lib: staticlib
	@mkdir -p $(OUT)/lib
	cc -shared -o $(OUT)/lib/$(SONAME) -Wl,--whole-archive $(CLIENT_STATICLIB) -Wl,--no-whole-archive \
	   -Wl,--version-script=exports.map -Wl,-soname,$(SONAME) -Wl,--gc-sections -Wl,-z,defs \
	   $(NATIVE_LIBS) $(EXTRA_LDFLAGS)
	ln -sf $(SONAME) $(OUT)/lib/libLLVMOffload.so
	@mkdir -p $(OUT)/lib/offload-rs
	install -m 755 $(HELPER) $(OUT)/lib/offload-rs/offload-rs-jit
	cc -shared -o $(OUT)/lib/offload-rs/$(MODULE) -Wl,--whole-archive $(STATICLIB) -Wl,--no-whole-archive \
	   -Wl,--version-script=src/jit/llvm/module.map -Wl,-soname,$(MODULE) -Wl,--gc-sections -Wl,-z,defs \
	   $(LLVM_LIBS) $(NATIVE_LIBS) $(EXTRA_LDFLAGS)
	@mkdir -p $(OUT)/lib23/offload-rs $(OUT)/abi23
	bash scripts/abi23-syms.sh $(CLIENT_STATICLIB) > $(OUT)/abi23/abi23.syms
	objcopy --redefine-syms=$(OUT)/abi23/abi23.syms $(CLIENT_STATICLIB) $(OUT)/abi23/liboffload_rs_23.a
	cc -shared -o $(OUT)/lib23/$(SONAME23) -Wl,--whole-archive $(OUT)/abi23/liboffload_rs_23.a -Wl,--no-whole-archive \
	   -Wl,--version-script=exports.map -Wl,-soname,$(SONAME23) -Wl,--gc-sections -Wl,-z,defs \
	   $(NATIVE_LIBS) $(EXTRA_LDFLAGS)
	ln -sf $(SONAME23) $(OUT)/lib23/libLLVMOffload.so
	install -m 755 $(HELPER) $(OUT)/lib23/offload-rs/offload-rs-jit
	install -m 755 $(OUT)/lib/offload-rs/$(MODULE) $(OUT)/lib23/offload-rs/$(MODULE)

header:  # regenerate include/offload/OffloadAPI.h with cbindgen (tests/header.rs)
	UPDATE_HEADER=1 cargo test --test header

install: lib
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/offload $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -d $(DESTDIR)$(PREFIX)/lib/offload-rs
	install -m 755 $(OUT)/lib/$(SONAME) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	install -m 755 $(OUT)/lib/offload-rs/offload-rs-jit $(DESTDIR)$(PREFIX)/lib/offload-rs/offload-rs-jit
	install -m 755 $(OUT)/lib/offload-rs/$(MODULE) $(DESTDIR)$(PREFIX)/lib/offload-rs/$(MODULE)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libLLVMOffload.so
	install -m 644 include/offload/OffloadAPI.h $(DESTDIR)$(PREFIX)/include/offload/OffloadAPI.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' offload-rs.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/offload-rs.pc
	ln -sf offload-rs.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/LLVMOffload.pc
	# 23.1, side by side: lib/offload-rs-23/ (its own libLLVMOffload.so link and helper), include/offload-23
	install -d $(DESTDIR)$(PREFIX)/lib/offload-rs-23/offload-rs $(DESTDIR)$(PREFIX)/include/offload-23/offload
	install -m 755 $(OUT)/lib23/$(SONAME23) $(DESTDIR)$(PREFIX)/lib/$(SONAME23)
	ln -sf ../$(SONAME23) $(DESTDIR)$(PREFIX)/lib/offload-rs-23/libLLVMOffload.so
	ln -sf ../$(SONAME23) $(DESTDIR)$(PREFIX)/lib/offload-rs-23/$(SONAME23)
	install -m 755 $(OUT)/lib23/offload-rs/offload-rs-jit $(DESTDIR)$(PREFIX)/lib/offload-rs-23/offload-rs/offload-rs-jit
	install -m 755 $(OUT)/lib23/offload-rs/$(MODULE) $(DESTDIR)$(PREFIX)/lib/offload-rs-23/offload-rs/$(MODULE)
	install -m 644 include/offload-23/OffloadAPI.h $(DESTDIR)$(PREFIX)/include/offload-23/offload/OffloadAPI.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' offload-rs-23.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/offload-rs-23.pc

test:
	bash scripts/test.sh

clean:
	cargo clean
	rm -rf $(OUT)
