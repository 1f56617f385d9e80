/* A fake libcuda.so.1 for rehearsing offload-rs's CUDA plugin (src/plugin/cuda) without a GPU. TEST ONLY:
 * built into build/fake-cuda/, never installed. It exports every entry point of the plugin's driver table
 * (src/plugin/cuda/driver.rs, with the same versioned names) with cuda.h's prototypes (own declarations: it
 * does not include cuda.h) and returns the real driver's error codes.
 *
 * What it is for: checking the *protocol* the plugin follows, where a real GPU would catch mistakes:
 *   - a current context on the calling thread for every call that needs one (CUDA_ERROR_INVALID_CONTEXT),
 *     including queue threads and user threads that never called cuCtxSetCurrent;
 *   - no driver call from inside a cuLaunchHostFunc callback (CUDA_ERROR_NOT_PERMITTED);
 *   - allocations, frees, host registration, stale handles (the real codes);
 *   - streams that really run asynchronously and in order, one worker thread each, events, cross-stream
 *     waits, NOT_READY while pending;
 *   - modules from PTX text: entries with their .param lists laid out as the PTX ABI does
 *     (cuFuncGetParamInfo answers from that), .global/.const variables with their initial values,
 *     ctor/dtor tables (nvptx$device$init/fini walk [__init_array_start, __init_array_end));
 *   - cuLaunchKernel: the argument buffer must be exactly the kernel's parameter block, dims and shared
 *     memory within the device's limits.
 * Kernels are then *emulated*: the entries of ffi-tests/device/kernels.c are written again in C below and
 * run over grid x block, reading each parameter at the offset the PTX declares, and checking that every
 * pointer they dereference lies in memory a GPU could reach. The emulation is honest about what it is:
 * it checks how the plugin calls the driver (argument layout, sizes, dims, contexts, ordering), NOT the
 * PTX the plugin generated (the PTX's instructions are never looked at). Unknown kernels are
 * CUDA_ERROR_NOT_SUPPORTED with a note on stderr.
 *
 * Environment: FAKE_CUDA_DEVICES=0..2 (default 1); FAKE_CUDA_QUIET=1 hides the violation lines on stderr;
 * FAKE_CUDA_DUMP_PTX=DIR writes every loaded image to DIR/moduleN.ptx; FAKE_CUDA_PTXAS=/path/to/ptxas
 * assembles every loaded PTX module with NVIDIA's assembler for the fake device's sm_90 first (as the real
 * driver's JIT does) and refuses what it rejects with CUDA_ERROR_INVALID_PTX and ptxas's messages.
 * Counters for tests: fakeCudaStats (fake_cuda.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda.h"

#define API __attribute__((visibility("default")))

/* ---- cuda.h's types, declared here ------------------------------------------------------------------ */
typedef int CUresult; /* an enum in cuda.h */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;
typedef void (*CUhostFn)(void *);
typedef size_t (*CUoccupancyB2DSize)(int);
typedef struct {
  char bytes[16];
} CUuuid;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_NOT_PERMITTED = 800,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_OPERATING_SYSTEM = 304,
};

static const struct {
  int code;
  const char *name, *text;
} ERRORS[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
};

/* H200-like device */
#define TOTAL_MEM 150754820096ull
#define SHARED_PER_BLOCK 49152
#define SHARED_OPTIN 232448
#define DRIVER_VERSION 12080
#define MAX_PTX_MAJOR 8 /* CUDA 12.8 accepts PTX ISA <= 8.7 */
#define MAX_PTX_MINOR 7
#define SM 90

/* ---- counters and violation reports ---------------------------------------------------------------- */
static struct fake_cuda_stats S;
#define BUMP(field) __atomic_add_fetch(&S.field, 1, __ATOMIC_RELAXED)
#define DROP(field) __atomic_sub_fetch(&S.field, 1, __ATOMIC_RELAXED)

static void note(const char *fmt, ...) {
  static int printed;
  const char *q = getenv("FAKE_CUDA_QUIET");
  if ((q && *q == '1') || __atomic_add_fetch(&printed, 1, __ATOMIC_RELAXED) > 200)
    return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "fake libcuda: %s\n", buf);
}

API int fakeCudaStats(struct fake_cuda_stats *out, size_t size) {
  struct fake_cuda_stats tmp;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  memcpy(&tmp, &S, sizeof tmp);
  memcpy(out, &tmp, size < sizeof tmp ? size : sizeof tmp);
  return 0;
}

/* ---- init, devices, contexts ----------------------------------------------------------------------- */
static pthread_mutex_t G = PTHREAD_MUTEX_INITIALIZER; /* tables below */
static int g_inited, g_ndev = 1;

typedef struct {
  int magic; /* 0xC7C7 */
  int dev;
  int retains;
} ctx_t;
static ctx_t g_ctx[2] = {{0xC7C7, 0, 0}, {0xC7C7, 1, 0}};
static __thread ctx_t *t_cur;  /* the calling thread's current context */
static __thread int t_in_cb;   /* inside a host function callback */

/* Every entry point starts here. need_ctx: the call needs a current context. */
static CUresult enter(const char *fn, int need_ctx) {
  if (t_in_cb) {
    BUMP(calls_from_host_fn);
    note("VIOLATION: %s called from inside a host function callback (CUDA_ERROR_NOT_PERMITTED)", fn);
    return CUDA_ERROR_NOT_PERMITTED;
  }
  if (!__atomic_load_n(&g_inited, __ATOMIC_ACQUIRE))
    return CUDA_ERROR_NOT_INITIALIZED;
  if (need_ctx && !t_cur) {
    BUMP(no_context_calls);
    note("VIOLATION: %s called on thread %ld with no current context (CUDA_ERROR_INVALID_CONTEXT)", fn,
         (long)gettid());
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return CUDA_SUCCESS;
}
#define ENTER(need)                                                                                          \
  do {                                                                                                       \
    CUresult e_ = enter(__func__, need);                                                                     \
    if (e_)                                                                                                  \
      return e_;                                                                                             \
  } while (0)

static CUresult wrong_ctx(const char *fn, ctx_t *obj_ctx) {
  BUMP(wrong_context_calls);
  note("VIOLATION: %s: object of device %d's context used while device %d's is current", fn, obj_ctx->dev,
       t_cur ? t_cur->dev : -1);
  return CUDA_ERROR_INVALID_CONTEXT;
}

API CUresult cuInit(unsigned flags) {
  if (t_in_cb)
    return enter("cuInit", 0);
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  const char *n = getenv("FAKE_CUDA_DEVICES");
  if (n)
    g_ndev = atoi(n) < 0 ? 0 : atoi(n) > 2 ? 2 : atoi(n);
  if (g_ndev == 0)
    return CUDA_ERROR_NO_DEVICE;
  __atomic_store_n(&g_inited, 1, __ATOMIC_RELEASE);
  return CUDA_SUCCESS;
}

API CUresult cuDriverGetVersion(int *v) {
  if (t_in_cb)
    return enter("cuDriverGetVersion", 0);
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  *v = DRIVER_VERSION;
  return CUDA_SUCCESS;
}

static CUresult error_text(CUresult e, const char **out, int name) {
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
    if (ERRORS[i].code == e) {
      *out = name ? ERRORS[i].name : ERRORS[i].text;
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}
API CUresult cuGetErrorName(CUresult e, const char **out) { return error_text(e, out, 1); }
API CUresult cuGetErrorString(CUresult e, const char **out) { return error_text(e, out, 0); }

API CUresult cuDeviceGetCount(int *n) {
  ENTER(0);
  if (!n)
    return CUDA_ERROR_INVALID_VALUE;
  *n = g_ndev;
  return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  ENTER(0);
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= g_ndev)
    return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
#define CHECK_DEV(d)                                                                                         \
  do {                                                                                                       \
    if ((d) < 0 || (d) >= g_ndev)                                                                            \
      return CUDA_ERROR_INVALID_DEVICE;                                                                      \
  } while (0)

API CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  ENTER(0);
  CHECK_DEV(d);
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "%s", "Fake CUDA Device");
  return CUDA_SUCCESS;
}

static int attribute(int a, int *ok) {
  *ok = 1;
  switch (a) {
  case 1: return 1024;             /* MAX_THREADS_PER_BLOCK */
  case 2: return 1024;             /* MAX_BLOCK_DIM_X */
  case 3: return 1024;             /* Y */
  case 4: return 64;               /* Z */
  case 5: return 2147483647;       /* MAX_GRID_DIM_X */
  case 6: return 65535;            /* Y */
  case 7: return 65535;            /* Z */
  case 8: return SHARED_PER_BLOCK; /* MAX_SHARED_MEMORY_PER_BLOCK */
  case 9: return 65536;            /* TOTAL_CONSTANT_MEMORY */
  case 10: return 32;              /* WARP_SIZE */
  case 11: return 2147483647;      /* MAX_PITCH */
  case 12: return 65536;           /* MAX_REGISTERS_PER_BLOCK */
  case 13: return 1980000;         /* CLOCK_RATE (kHz) */
  case 14: return 512;             /* TEXTURE_ALIGNMENT */
  case 15: return 1;               /* GPU_OVERLAP */
  case 16: return 132;             /* MULTIPROCESSOR_COUNT */
  case 17: return 0;               /* KERNEL_EXEC_TIMEOUT */
  case 18: return 0;               /* INTEGRATED */
  case 19: return 1;               /* CAN_MAP_HOST_MEMORY */
  case 20: return 0;               /* COMPUTE_MODE */
  case 31: return 1;               /* CONCURRENT_KERNELS */
  case 32: return 1;               /* ECC_ENABLED */
  case 33: return 0x19;            /* PCI_BUS_ID */
  case 34: return 0;               /* PCI_DEVICE_ID */
  case 36: return 2619000;         /* MEMORY_CLOCK_RATE (kHz) */
  case 37: return 6144;            /* GLOBAL_MEMORY_BUS_WIDTH */
  case 38: return 52428800;        /* L2_CACHE_SIZE */
  case 39: return 2048;            /* MAX_THREADS_PER_MULTIPROCESSOR */
  case 40: return 2;               /* ASYNC_ENGINE_COUNT */
  case 41: return 1;               /* UNIFIED_ADDRESSING */
  case 75: return SM / 10;         /* COMPUTE_CAPABILITY_MAJOR */
  case 76: return SM % 10;         /* COMPUTE_CAPABILITY_MINOR */
  case 81: return 233472;          /* MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
  case 82: return 65536;           /* MAX_REGISTERS_PER_MULTIPROCESSOR */
  case 83: return 1;               /* MANAGED_MEMORY */
  case 89: return 1;               /* CONCURRENT_MANAGED_ACCESS */
  case 97: return SHARED_OPTIN;    /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
  default:
    if (a > 0 && a < 150)
      return 0; /* a real attribute we have no H200 value for */
    *ok = 0;
    return 0;
  }
}

API CUresult cuDeviceGetAttribute(int *v, int a, CUdevice d) {
  ENTER(0);
  CHECK_DEV(d);
  int ok;
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  int x = attribute(a, &ok);
  if (!ok)
    return CUDA_ERROR_INVALID_VALUE;
  *v = x;
  return CUDA_SUCCESS;
}

API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
  ENTER(0);
  CHECK_DEV(d);
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  *bytes = TOTAL_MEM;
  return CUDA_SUCCESS;
}

static CUresult uuid(CUuuid *u, CUdevice d) {
  ENTER(0);
  CHECK_DEV(d);
  if (!u)
    return CUDA_ERROR_INVALID_VALUE;
  static const unsigned char base[16] = {0xfa, 0xce, 0xc0, 0xda, 0x12, 0x34, 0x45, 0x67,
                                         0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x60};
  memcpy(u->bytes, base, 16);
  u->bytes[15] = (char)(0x60 + d);
  return CUDA_SUCCESS;
}
API CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) { return uuid(u, d); }
API CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) { return uuid(u, d); }

API CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  ENTER(0);
  CHECK_DEV(d);
  if (!c)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&G);
  g_ctx[d].retains++;
  pthread_mutex_unlock(&G);
  BUMP(primary_ctx_retains);
  *c = &g_ctx[d];
  return CUDA_SUCCESS;
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  ENTER(0);
  CHECK_DEV(d);
  pthread_mutex_lock(&G);
  int was = g_ctx[d].retains;
  if (was > 0)
    g_ctx[d].retains--;
  pthread_mutex_unlock(&G);
  if (!was) {
    note("VIOLATION: cuDevicePrimaryCtxRelease_v2(%d) without a retain", d);
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  DROP(primary_ctx_retains);
  return CUDA_SUCCESS;
}

static ctx_t *as_ctx(CUcontext c) {
  for (int i = 0; i < g_ndev; i++)
    if (c == &g_ctx[i])
      return &g_ctx[i];
  return NULL;
}

API CUresult cuCtxSetCurrent(CUcontext c) {
  ENTER(0);
  if (!c) {
    t_cur = NULL;
    return CUDA_SUCCESS;
  }
  ctx_t *x = as_ctx(c);
  if (!x) {
    BUMP(invalid_handles);
    note("VIOLATION: cuCtxSetCurrent with an unknown context %p", c);
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (!__atomic_load_n(&x->retains, __ATOMIC_RELAXED)) {
    note("VIOLATION: cuCtxSetCurrent with device %d's primary context, which is not retained", x->dev);
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  t_cur = x;
  return CUDA_SUCCESS;
}

API CUresult cuCtxGetCurrent(CUcontext *c) {
  ENTER(0);
  if (!c)
    return CUDA_ERROR_INVALID_VALUE;
  *c = t_cur;
  return CUDA_SUCCESS;
}

/* ---- handles: never reused, never dereferenced before lookup ---------------------------------------- */
enum kind { K_STREAM = 1, K_EVENT, K_MODULE, K_FUNC };
static const char *KIND_NAMES[] = {"", "stream", "event", "module", "function"};
typedef struct {
  int kind;
  void *live;  /* NULL once destroyed */
  void *grave; /* the object, kept (never freed: stale handles stay detectable and nothing dangles) */
} slot_t;
static slot_t *g_slots;
static size_t g_nslots, g_capslots;
#define HANDLE_BASE 0x7fca00000000ull

static void *new_handle(int kind, void *obj) {
  pthread_mutex_lock(&G);
  if (g_nslots == g_capslots) {
    g_capslots = g_capslots ? 2 * g_capslots : 256;
    g_slots = realloc(g_slots, g_capslots * sizeof *g_slots);
  }
  size_t i = g_nslots++;
  g_slots[i] = (slot_t){kind, obj, obj};
  pthread_mutex_unlock(&G);
  return (void *)(uintptr_t)(HANDLE_BASE + 16 * (i + 1));
}

static void *lookup(const char *fn, int kind, void *h, int kill) {
  uintptr_t v = (uintptr_t)h;
  void *obj = NULL;
  pthread_mutex_lock(&G);
  if (v > HANDLE_BASE && (v - HANDLE_BASE) % 16 == 0 && (v - HANDLE_BASE) / 16 <= g_nslots) {
    slot_t *s = &g_slots[(v - HANDLE_BASE) / 16 - 1];
    if (s->kind == kind) {
      obj = s->live;
      if (kill)
        s->live = NULL;
    }
  }
  pthread_mutex_unlock(&G);
  if (!obj) {
    BUMP(invalid_handles);
    note("VIOLATION: %s: %p is not a live %s handle (CUDA_ERROR_INVALID_HANDLE)", fn, h, KIND_NAMES[kind]);
  }
  return obj;
}

/* ---- memory ---------------------------------------------------------------------------------------- */
enum mkind { M_DEVICE, M_MANAGED, M_HOST, M_GLOBAL, M_REGISTERED };
typedef struct {
  uintptr_t base;
  size_t size;
  int kind;
} range_t;
static range_t *g_mem;
static size_t g_nmem, g_capmem;
static size_t g_used;

static void mem_add(uintptr_t base, size_t size, int kind) {
  pthread_mutex_lock(&G);
  if (g_nmem == g_capmem) {
    g_capmem = g_capmem ? 2 * g_capmem : 256;
    g_mem = realloc(g_mem, g_capmem * sizeof *g_mem);
  }
  g_mem[g_nmem++] = (range_t){base, size, kind};
  if (kind == M_DEVICE || kind == M_MANAGED)
    g_used += size;
  pthread_mutex_unlock(&G);
}

/* The range containing p (G held), or -1. */
static long mem_find(uintptr_t p) {
  for (size_t i = 0; i < g_nmem; i++)
    if (p >= g_mem[i].base && p < g_mem[i].base + (g_mem[i].size ? g_mem[i].size : 1))
      return (long)i;
  return -1;
}

/* Remove the range starting exactly at p of one of the kinds in mask; returns its kind or -1 (and why). */
static int mem_remove(uintptr_t p, unsigned mask, int *interior) {
  int k = -1;
  *interior = 0;
  pthread_mutex_lock(&G);
  long i = mem_find(p);
  if (i >= 0 && g_mem[i].base == p && (mask & (1u << g_mem[i].kind))) {
    k = g_mem[i].kind;
    if (k == M_DEVICE || k == M_MANAGED)
      g_used -= g_mem[i].size;
    g_mem[i] = g_mem[--g_nmem];
  } else if (i >= 0) {
    *interior = 1;
  }
  pthread_mutex_unlock(&G);
  return k;
}

/* Could a kernel (or the copy engine, for device-side checks) reach [p, p+n)? Device, managed, pinned
 * host, registered host memory and module globals are reachable; pageable host memory is not. */
static int reachable(uintptr_t p, size_t n) {
  int ok = 0;
  pthread_mutex_lock(&G);
  long i = mem_find(p);
  if (i >= 0 && p + n <= g_mem[i].base + g_mem[i].size)
    ok = 1;
  pthread_mutex_unlock(&G);
  return ok;
}

/* The kind of memory at p (enum mkind), or -1 for pageable host memory the driver does not know. */
static int mem_kind(uintptr_t p) {
  pthread_mutex_lock(&G);
  long i = mem_find(p);
  int k = i >= 0 ? g_mem[i].kind : -1;
  pthread_mutex_unlock(&G);
  return k;
}

/* A copy/memset touching a known allocation must stay inside it (pageable host memory is not checked). */
static int in_bounds(uintptr_t p, size_t n, const char *fn) {
  int ok = 1;
  pthread_mutex_lock(&G);
  long i = mem_find(p);
  if (i >= 0 && p + n > g_mem[i].base + g_mem[i].size)
    ok = 0;
  pthread_mutex_unlock(&G);
  if (!ok)
    note("%s: [%#lx, +%zu) runs past the end of its allocation (CUDA_ERROR_INVALID_VALUE)", fn, (unsigned long)p,
         n);
  return ok;
}

static CUresult alloc(uintptr_t *out, size_t size, int kind) {
  if (!out || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&G);
  int full = (kind != M_HOST) && size > TOTAL_MEM - g_used;
  pthread_mutex_unlock(&G);
  void *p = NULL;
  if (full || size > ((size_t)1 << 40) || posix_memalign(&p, 256, size))
    return CUDA_ERROR_OUT_OF_MEMORY;
  mem_add((uintptr_t)p, size, kind);
  *out = (uintptr_t)p;
  return CUDA_SUCCESS;
}

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size) {
  ENTER(1);
  uintptr_t u = 0;
  CUresult r = alloc(&u, size, M_DEVICE);
  if (!r) {
    *p = u;
    BUMP(live_device_allocs);
  }
  return r;
}

API CUresult cuMemAllocManaged(CUdeviceptr *p, size_t size, unsigned flags) {
  ENTER(1);
  if (flags != 1 && flags != 2) /* CU_MEM_ATTACH_GLOBAL / HOST */
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t u = 0;
  CUresult r = alloc(&u, size, M_MANAGED);
  if (!r) {
    *p = u;
    BUMP(live_device_allocs);
  }
  return r;
}

API CUresult cuMemAllocHost_v2(void **p, size_t size) {
  ENTER(1);
  uintptr_t u = 0;
  CUresult r = alloc(&u, size, M_HOST);
  if (!r) {
    *p = (void *)u;
    BUMP(live_host_allocs);
  }
  return r;
}

static void implicit_sync(const char *fn);

static CUresult do_free(const char *fn, uintptr_t p, unsigned mask, int64_t *live) {
  int interior;
  if (p == 0)
    return CUDA_SUCCESS; /* freeing NULL is a no-op */
  implicit_sync(fn);
  int k = mem_remove(p, mask, &interior);
  if (k < 0) {
    BUMP(bad_frees);
    note("VIOLATION: %s(%#lx): %s (CUDA_ERROR_INVALID_VALUE)", fn, (unsigned long)p,
         interior ? "not the start of an allocation of this kind" : "unknown or already freed");
    return CUDA_ERROR_INVALID_VALUE;
  }
  free((void *)p);
  __atomic_sub_fetch(live, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

API CUresult cuMemFree_v2(CUdeviceptr p) {
  ENTER(1);
  return do_free("cuMemFree_v2", p, (1u << M_DEVICE) | (1u << M_MANAGED), &S.live_device_allocs);
}

API CUresult cuMemFreeHost(void *p) {
  ENTER(1);
  return do_free("cuMemFreeHost", (uintptr_t)p, 1u << M_HOST, &S.live_host_allocs);
}

/* CU_POINTER_ATTRIBUTE_MEMORY_TYPE (2) only: HOST (1) for pinned or registered host memory, DEVICE (2) for
 * device and managed memory and module globals; pageable memory is CUDA_ERROR_INVALID_VALUE, as NVIDIA's. */
API CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
  ENTER(0);
  if (!data || attr != 2)
    return CUDA_ERROR_INVALID_VALUE;
  int k = mem_kind(p);
  if (k < 0)
    return CUDA_ERROR_INVALID_VALUE;
  *(unsigned *)data = k == M_HOST || k == M_REGISTERED ? 1 : 2;
  return CUDA_SUCCESS;
}

API CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
  ENTER(1);
  if (!free_ || !total)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&G);
  *free_ = TOTAL_MEM - g_used;
  pthread_mutex_unlock(&G);
  *total = TOTAL_MEM;
  return CUDA_SUCCESS;
}

API CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags) {
  ENTER(1);
  if (!p || size == 0 || (flags & ~0xfu))
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t b = (uintptr_t)p;
  int overlap = 0;
  pthread_mutex_lock(&G);
  for (size_t i = 0; i < g_nmem; i++) {
    range_t *m = &g_mem[i];
    if (b < m->base + m->size && m->base < b + size) {
      /* pinned or registered host memory overlaps: already registered; device memory is not host memory */
      overlap = (m->kind == M_HOST || m->kind == M_REGISTERED) ? 1 : 2;
      break;
    }
  }
  pthread_mutex_unlock(&G);
  if (overlap == 1)
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  if (overlap == 2)
    return CUDA_ERROR_INVALID_VALUE;
  mem_add(b, size, M_REGISTERED);
  BUMP(live_registrations);
  return CUDA_SUCCESS;
}

API CUresult cuMemHostUnregister(void *p) {
  ENTER(1);
  int interior;
  if (mem_remove((uintptr_t)p, 1u << M_REGISTERED, &interior) < 0)
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  DROP(live_registrations);
  return CUDA_SUCCESS;
}

/* ---- modules (PTX parsing) -------------------------------------------------------------------------- */
typedef struct {
  size_t off, size;
} param_t;

typedef struct module module_t;
typedef struct launch launch_t;
typedef void (*kern_fn)(launch_t *);

typedef struct {
  char name[128];
  int is_entry;
  int nparams;
  param_t params[64];
  size_t param_block;  /* end of the last parameter */
  size_t static_shared;
  int maxntid[3];      /* 0: none */
  int max_dyn_shared;  /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  uintptr_t addr;      /* its "code address" (a token, never dereferenced) */
  module_t *mod;
  void *handle;
} func_t;

typedef struct {
  char name[128];
  size_t size, align;
  int is_const;
  uint8_t *storage;
} global_t;

struct module {
  ctx_t *ctx;
  int nfuncs, nglobals;
  func_t *funcs;
  global_t *globals;
  int unloaded;
};

static func_t *mod_func(module_t *m, const char *name) {
  for (int i = 0; i < m->nfuncs; i++)
    if (!strcmp(m->funcs[i].name, name))
      return &m->funcs[i];
  return NULL;
}
static global_t *mod_global(module_t *m, const char *name) {
  for (int i = 0; i < m->nglobals; i++)
    if (!strcmp(m->globals[i].name, name))
      return &m->globals[i];
  return NULL;
}

static size_t type_size(const char *t) {
  if (!strcmp(t, ".pred"))
    return 1;
  if (strlen(t) < 3 || !strchr("busf", t[1]))
    return 0;
  int bits = atoi(t + 2);
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? (size_t)bits / 8 : 0;
}

/* Strip comments (keeping offsets: comments become spaces). */
static void strip_comments(char *s) {
  for (char *p = s; *p; p++) {
    if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n')
        *p++ = ' ';
      if (!*p)
        break;
    } else if (p[0] == '/' && p[1] == '*') {
      while (*p && !(p[0] == '*' && p[1] == '/'))
        *p++ = ' ';
      if (!*p)
        break;
      p[0] = p[1] = ' ';
      p++;
    } else if (*p == '"') { /* strings (e.g. .file) */
      p++;
      while (*p && *p != '"')
        p++;
      if (!*p)
        break;
    }
  }
}

/* Next token of s at *pos: identifiers/directives (with $ . _ %), numbers, or single punctuation. */
static int token(const char *s, size_t *pos, size_t end, char *out, size_t cap) {
  size_t i = *pos;
  while (i < end && isspace((unsigned char)s[i]))
    i++;
  if (i >= end) {
    *pos = i;
    return 0;
  }
  size_t n = 0;
  if (isalnum((unsigned char)s[i]) || strchr("._$%-", s[i])) {
    while (i < end && (isalnum((unsigned char)s[i]) || strchr("._$%", s[i]) || (n == 0 && s[i] == '-'))) {
      if (n + 1 < cap)
        out[n++] = s[i];
      i++;
    }
  } else {
    out[n++] = s[i++];
  }
  out[n] = 0;
  *pos = i;
  return 1;
}

static void set_log(char *log, size_t cap, const char *fmt, ...) {
  if (!log || !cap)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(log, cap, fmt, ap);
  va_end(ap);
}

/* FAKE_CUDA_PTXAS: run NVIDIA's ptxas on the module (n bytes of PTX). 0 when it assembles, else
 * CUDA_ERROR_INVALID_PTX with ptxas's output in the JIT error log. */
static CUresult check_with_ptxas(const char *ptx, size_t n, char *log, size_t logcap) {
  const char *ptxas = getenv("FAKE_CUDA_PTXAS");
  if (!ptxas || !*ptxas)
    return CUDA_SUCCESS;
  char path[] = "/tmp/fake-cuda-ptxas-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return CUDA_ERROR_OPERATING_SYSTEM;
  size_t off = 0;
  while (off < n) {
    ssize_t w = write(fd, ptx + off, n - off);
    if (w <= 0)
      break;
    off += (size_t)w;
  }
  close(fd);
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90 -o /dev/null '%s' 2>&1", ptxas, path);
  FILE *p = popen(cmd, "r");
  char out[4096] = "";
  size_t got = 0;
  if (p) {
    size_t r;
    while (got + 1 < sizeof out && (r = fread(out + got, 1, sizeof out - 1 - got, p)) > 0)
      got += r;
    out[got] = 0;
  }
  int status = p ? pclose(p) : -1;
  unlink(path);
  BUMP(ptxas_runs);
  if (status == 0)
    return CUDA_SUCCESS;
  note("VIOLATION: cuModuleLoadDataEx: NVIDIA's ptxas rejects the PTX (CUDA_ERROR_INVALID_PTX):\n%s", out);
  BUMP(ptxas_rejects);
  set_log(log, logcap, "ptxas: %s", out);
  return CUDA_ERROR_INVALID_PTX;
}

/* Parse the .param list of an entry between s[from] ('(') and the matching ')'. */
static int parse_params(const char *s, size_t from, size_t to, func_t *f) {
  size_t pos = from + 1, off = 0;
  char tok[128];
  while (pos < to) {
    size_t align = 0, size = 0, count = 1;
    int seen_type = 0, any = 0;
    while (token(s, &pos, to, tok, sizeof tok)) {
      any = 1;
      if (!strcmp(tok, ","))
        break;
      if (!strcmp(tok, ".align")) {
        token(s, &pos, to, tok, sizeof tok);
        if (!seen_type)
          align = (size_t)strtoul(tok, NULL, 0); /* after the type (.ptr .align N) it is the pointee's */
      } else if (tok[0] == '.' && type_size(tok)) {
        size = type_size(tok);
        seen_type = 1;
      } else if (!strcmp(tok, "[")) {
        token(s, &pos, to, tok, sizeof tok);
        count *= (size_t)strtoul(tok, NULL, 0);
        token(s, &pos, to, tok, sizeof tok); /* ] */
      }
    }
    if (!any)
      break;
    if (!seen_type || f->nparams >= 64)
      return -1;
    if (!align)
      align = size;
    off = (off + align - 1) / align * align;
    f->params[f->nparams++] = (param_t){off, size * count};
    off += size * count;
  }
  f->param_block = f->nparams ? f->params[f->nparams - 1].off + f->params[f->nparams - 1].size : 0;
  return 0;
}

static size_t g_module_seq;

/* The initialiser values of a global: numbers, PTX float literals, symbols (functions: their token address,
 * variables: their storage) and generic(sym). */
static void parse_init(module_t *m, global_t *g, const char *s, size_t pos, size_t end, size_t elem) {
  char tok[256];
  size_t at = 0;
  while (token(s, &pos, end, tok, sizeof tok)) {
    if (!strcmp(tok, "{") || !strcmp(tok, "}") || !strcmp(tok, ",") || !strcmp(tok, "(") || !strcmp(tok, ")") ||
        !strcmp(tok, "generic"))
      continue;
    uint64_t v = 0;
    if ((tok[0] == '0' && (tok[1] == 'f' || tok[1] == 'F' || tok[1] == 'd' || tok[1] == 'D')) && strlen(tok) > 2)
      v = strtoull(tok + 2, NULL, 16);
    else if (isdigit((unsigned char)tok[0]) || tok[0] == '-')
      v = (uint64_t)strtoll(tok, NULL, 0);
    else {
      func_t *f = mod_func(m, tok);
      global_t *o = mod_global(m, tok);
      if (f)
        v = f->addr;
      else if (o)
        v = (uintptr_t)o->storage;
      else
        note("module: initialiser of %s names unknown symbol '%s' (left 0)", g->name, tok);
    }
    if (at + elem <= g->size)
      memcpy(g->storage + at, &v, elem);
    at += elem;
  }
}

static void free_module(module_t *m) {
  for (int i = 0; i < m->nglobals; i++) {
    int interior;
    mem_remove((uintptr_t)m->globals[i].storage, 1u << M_GLOBAL, &interior);
    free(m->globals[i].storage);
  }
  free(m->globals);
  m->globals = NULL;
  m->nglobals = 0;
}

/* Parse PTX text into m. Returns a CUresult and a message in log. */
static CUresult parse_ptx(const char *text, module_t *m, char *log, size_t logcap) {
  size_t len = strlen(text);
  char *s = strdup(text);
  strip_comments(s);
  int have_version = 0, have_target = 0;
  /* header directives: lines without ';' */
  for (char *line = s; *line;) {
    char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    char *p = line;
    while (p < line + n && isspace((unsigned char)*p))
      p++;
    int maj = 0, min = 0, sm = 0;
    if (!strncmp(p, ".version", 8)) {
      if (sscanf(p + 8, " %d.%d", &maj, &min) != 2) {
        set_log(log, logcap, "ptxas fatal: malformed .version");
        free(s);
        return CUDA_ERROR_INVALID_PTX;
      }
      if (maj > MAX_PTX_MAJOR || (maj == MAX_PTX_MAJOR && min > MAX_PTX_MINOR)) {
        set_log(log, logcap, "ptxas application ptx input, line 1; fatal   : Unsupported .version %d.%d; current version is '%d.%d'",
                maj, min, MAX_PTX_MAJOR, MAX_PTX_MINOR);
        free(s);
        return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
      }
      have_version = 1;
      memset(line, ' ', n);
    } else if (!strncmp(p, ".target", 7)) {
      if (sscanf(p + 7, " sm_%d", &sm) != 1 || sm > SM) {
        set_log(log, logcap, "ptxas fatal: .target in '%.*s' is not supported by this sm_%d device", (int)n, line, SM);
        free(s);
        return CUDA_ERROR_INVALID_PTX;
      }
      have_target = 1;
      memset(line, ' ', n);
    } else if (!strncmp(p, ".address_size", 13)) {
      memset(line, ' ', n);
    }
    if (!nl)
      break;
    line = nl + 1;
  }
  if (!have_version || !have_target) {
    set_log(log, logcap, "fake libcuda: the image is not PTX text (no .version/.target directive)");
    free(s);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  /* pass 1: functions (so that initialisers can name them); pass 2: globals */
  m->funcs = calloc(256, sizeof *m->funcs);
  m->globals = calloc(256, sizeof *m->globals);
  size_t seq = __atomic_add_fetch(&g_module_seq, 1, __ATOMIC_RELAXED);
  CUresult rc = CUDA_SUCCESS;
  for (int pass = 1; pass <= 2 && !rc; pass++) {
    size_t pos = 0;
    while (pos < len && !rc) {
      /* one top-level statement: up to ';' or a '{' ... '}' body */
      size_t start = pos, i = pos;
      int paren = 0, init = 0; /* after '=', braces are an initialiser, not a body */
      while (i < len && !(paren == 0 && (s[i] == ';' || (s[i] == '{' && !init)))) {
        paren += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
        init |= s[i] == '=';
        i++;
      }
      if (i >= len)
        break;
      size_t hdr_end = i, body = 0, body_end = 0;
      if (s[i] == '{') {
        int depth = 0;
        body = i;
        for (; i < len; i++) {
          if (s[i] == '{')
            depth++;
          else if (s[i] == '}' && --depth == 0)
            break;
        }
        if (i >= len) {
          set_log(log, logcap, "ptxas fatal: unbalanced braces");
          rc = CUDA_ERROR_INVALID_PTX;
          break;
        }
        body_end = i;
      }
      pos = i + 1;
      char tok[256];
      size_t tp = start;
      int is_entry = 0, is_func = 0, is_var = 0, is_const = 0, is_shared = 0, is_extern = 0;
      size_t align = 0, elem = 0, count = 1;
      char name[128] = "";
      size_t name_end = 0, init_at = 0;
      while (token(s, &tp, hdr_end, tok, sizeof tok)) {
        if (!strcmp(tok, ".entry"))
          is_entry = 1;
        else if (!strcmp(tok, ".func"))
          is_func = 1;
        else if (!strcmp(tok, ".global"))
          is_var = 1;
        else if (!strcmp(tok, ".const"))
          is_var = is_const = 1;
        else if (!strcmp(tok, ".shared"))
          is_shared = 1;
        else if (!strcmp(tok, ".extern"))
          is_extern = 1;
        else if (!strcmp(tok, ".align") && (is_var || is_shared)) {
          token(s, &tp, hdr_end, tok, sizeof tok);
          align = (size_t)strtoul(tok, NULL, 0);
        } else if (tok[0] == '.' && type_size(tok) && (is_var || is_shared))
          elem = type_size(tok);
        else if ((is_entry || is_func) && !name[0] && !strcmp(tok, "(")) { /* .func (.param ..) name( */
          int d = 1;
          while (d && token(s, &tp, hdr_end, tok, sizeof tok))
            d += !strcmp(tok, "(") ? 1 : !strcmp(tok, ")") ? -1 : 0;
        } else if (!name[0] && tok[0] != '.' && (isalpha((unsigned char)tok[0]) || strchr("_$%", tok[0]))) {
          snprintf(name, sizeof name, "%s", tok);
          name_end = tp;
        } else if (name[0] && !strcmp(tok, "[") && (is_var || is_shared)) {
          token(s, &tp, hdr_end, tok, sizeof tok);
          count *= tok[0] == ']' ? 0 : (size_t)strtoul(tok, NULL, 0);
          if (tok[0] != ']')
            token(s, &tp, hdr_end, tok, sizeof tok);
        } else if (!strcmp(tok, "=")) {
          init_at = tp;
          break;
        }
      }
      if (!name[0])
        continue;
      if (pass == 1 && (is_entry || is_func)) {
        func_t *f = mod_func(m, name);
        if (!f) {
          if (m->nfuncs >= 256) {
            set_log(log, logcap, "fake libcuda: too many functions");
            rc = CUDA_ERROR_NOT_SUPPORTED;
            break;
          }
          f = &m->funcs[m->nfuncs++];
          snprintf(f->name, sizeof f->name, "%s", name);
          f->mod = m;
          f->addr = 0x7e0000000000ull + (seq << 20) + 64 * (uintptr_t)m->nfuncs;
        }
        f->is_entry |= is_entry;
        if (is_entry) {
          /* parameters: the '(' after the name; performance directives after the ')' */
          size_t p = name_end;
          while (p < hdr_end && isspace((unsigned char)s[p]))
            p++;
          size_t close = p;
          if (p < hdr_end && s[p] == '(') {
            int d = 0;
            for (close = p; close < hdr_end; close++) {
              d += s[close] == '(' ? 1 : s[close] == ')' ? -1 : 0;
              if (!d)
                break;
            }
            f->nparams = 0;
            if (parse_params(s, p, close, f)) {
              set_log(log, logcap, "ptxas fatal: cannot parse the parameters of %s", name);
              rc = CUDA_ERROR_INVALID_PTX;
              break;
            }
          }
          const char *mx = strstr(s + close, ".maxntid");
          if (!mx || mx > s + hdr_end)
            mx = strstr(s + close, ".reqntid");
          if (mx && mx < s + hdr_end) {
            int a = 0, b = 1, c = 1;
            if (sscanf(mx + 8, " %d , %d , %d", &a, &b, &c) >= 1)
              f->maxntid[0] = a, f->maxntid[1] = b, f->maxntid[2] = c;
          }
          /* static shared memory: the .shared declarations in the body (LLVM demotes a kernel's
           * static __shared__ variables into it); module-level .shared is not attributed */
          for (const char *q = s + body; body && (q = strstr(q, ".shared")) && q < s + body_end; q += 7) {
            const char *semi = memchr(q, ';', (size_t)(s + body_end - q));
            if (!semi || !isspace((unsigned char)q[-1]) || q[7] == '.')
              continue;
            size_t tp2 = (size_t)(q - s) + 7, esz = 0, cnt = 1;
            char t2[64];
            while (token(s, &tp2, (size_t)(semi - s), t2, sizeof t2)) {
              if (t2[0] == '.' && type_size(t2))
                esz = type_size(t2);
              else if (!strcmp(t2, "[") && token(s, &tp2, (size_t)(semi - s), t2, sizeof t2))
                cnt *= (size_t)strtoul(t2, NULL, 0);
            }
            f->static_shared += esz * cnt;
          }
          f->max_dyn_shared = SHARED_PER_BLOCK - (int)f->static_shared;
        }
      }
      if (pass == 2 && is_var && !body) {
        if (is_extern) {
          set_log(log, logcap, "ptxas fatal: unresolved extern variable '%s'", name);
          rc = CUDA_ERROR_INVALID_PTX;
          break;
        }
        if (m->nglobals >= 256 || !elem) {
          set_log(log, logcap, "fake libcuda: cannot handle variable '%s'", name);
          rc = CUDA_ERROR_NOT_SUPPORTED;
          break;
        }
        global_t *g = &m->globals[m->nglobals++];
        snprintf(g->name, sizeof g->name, "%s", name);
        g->size = elem * count;
        g->align = align ? align : elem;
        g->is_const = is_const;
        size_t al = g->align < sizeof(void *) ? sizeof(void *) : g->align;
        if (posix_memalign((void **)&g->storage, al, g->size ? g->size : 1)) {
          rc = CUDA_ERROR_OUT_OF_MEMORY;
          break;
        }
        memset(g->storage, 0, g->size ? g->size : 1);
        mem_add((uintptr_t)g->storage, g->size, M_GLOBAL);
        if (init_at)
          parse_init(m, g, s, init_at, hdr_end, elem);
      }
    }
  }
  if (!rc && !m->nfuncs && !m->nglobals) {
    set_log(log, logcap, "fake libcuda: PTX without any function or variable");
  }
  free(s);
  return rc;
}

API CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned nopts, int *opts, void **vals) {
  ENTER(1);
  if (!out || !image || (nopts && (!opts || !vals)))
    return CUDA_ERROR_INVALID_VALUE;
  char *log = NULL;
  size_t logcap = 0;
  for (unsigned i = 0; i < nopts; i++) {
    if (opts[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
      log = vals[i];
    else if (opts[i] == 6) /* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: the value itself */
      logcap = (size_t)(uintptr_t)vals[i];
  }
  if (log && logcap)
    log[0] = 0;
  const unsigned char *b = image;
  if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') {
    set_log(log, logcap, "fake libcuda: CUBIN images are not emulated (only PTX text)");
    note("cuModuleLoadDataEx: a CUBIN; the fake only runs PTX (CUDA_ERROR_NOT_SUPPORTED)");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  /* PTX must be NUL-terminated text: look for the terminator within a sane length */
  size_t n = 0;
  while (n < (64u << 20) && b[n])
    n++;
  if (n >= (64u << 20)) {
    set_log(log, logcap, "fake libcuda: image is not NUL-terminated text");
    return CUDA_ERROR_INVALID_IMAGE;
  }
  const char *dump = getenv("FAKE_CUDA_DUMP_PTX");
  if (dump && *dump) { /* keep every loaded image for debugging */
    char path[4096];
    snprintf(path, sizeof path, "%s/module%zu.ptx", dump, __atomic_load_n(&g_module_seq, __ATOMIC_RELAXED) + 1);
    FILE *f = fopen(path, "w");
    if (f) {
      fwrite(image, 1, n, f);
      fclose(f);
    }
  }
  module_t *m = calloc(1, sizeof *m);
  m->ctx = t_cur;
  CUresult r = parse_ptx((const char *)image, m, log, logcap);
  if (!r) /* what the fake accepts must also pass NVIDIA's assembler (FAKE_CUDA_PTXAS) */
    r = check_with_ptxas((const char *)image, n, log, logcap);
  if (r) {
    free_module(m);
    free(m->funcs);
    free(m);
    return r;
  }
  for (int i = 0; i < m->nfuncs; i++)
    m->funcs[i].handle = new_handle(K_FUNC, &m->funcs[i]);
  *out = new_handle(K_MODULE, m);
  BUMP(live_modules);
  BUMP(modules_loaded);
  return CUDA_SUCCESS;
}

API CUresult cuModuleUnload(CUmodule h) {
  ENTER(1);
  module_t *m = lookup("cuModuleUnload", K_MODULE, h, 0);
  if (!m)
    return CUDA_ERROR_INVALID_HANDLE;
  if (m->ctx != t_cur)
    return wrong_ctx("cuModuleUnload", m->ctx);
  lookup("cuModuleUnload", K_MODULE, h, 1);
  pthread_mutex_lock(&G);
  for (int i = 0; i < m->nfuncs; i++) { /* its functions' handles die with it */
    uintptr_t v = (uintptr_t)m->funcs[i].handle;
    g_slots[(v - HANDLE_BASE) / 16 - 1].live = NULL;
  }
  m->unloaded = 1;
  pthread_mutex_unlock(&G);
  free_module(m);
  DROP(live_modules);
  return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunction(CUfunction *out, CUmodule h, const char *name) {
  ENTER(1);
  if (!out || !name)
    return CUDA_ERROR_INVALID_VALUE;
  module_t *m = lookup("cuModuleGetFunction", K_MODULE, h, 0);
  if (!m)
    return CUDA_ERROR_INVALID_HANDLE;
  if (m->ctx != t_cur)
    return wrong_ctx("cuModuleGetFunction", m->ctx);
  func_t *f = mod_func(m, name);
  if (!f || !f->is_entry)
    return CUDA_ERROR_NOT_FOUND;
  *out = f->handle;
  return CUDA_SUCCESS;
}

API CUresult cuModuleGetGlobal_v2(CUdeviceptr *p, size_t *size, CUmodule h, const char *name) {
  ENTER(1);
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  module_t *m = lookup("cuModuleGetGlobal_v2", K_MODULE, h, 0);
  if (!m)
    return CUDA_ERROR_INVALID_HANDLE;
  if (m->ctx != t_cur)
    return wrong_ctx("cuModuleGetGlobal_v2", m->ctx);
  global_t *g = mod_global(m, name);
  if (!g) {
    /* NVIDIA's driver (13.0 on an H200) answers a kernel's name with CUDA_ERROR_INVALID_VALUE */
    func_t *f = mod_func(m, name);
    return f && f->is_entry ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_FOUND;
  }
  if (p)
    *p = (uintptr_t)g->storage;
  if (size)
    *size = g->size;
  return CUDA_SUCCESS;
}

API CUresult cuFuncGetAttribute(int *v, int attr, CUfunction h) {
  ENTER(0);
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  func_t *f = lookup("cuFuncGetAttribute", K_FUNC, h, 0);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  int mt = f->maxntid[0] ? f->maxntid[0] * f->maxntid[1] * f->maxntid[2] : 1024;
  switch (attr) {
  case 0: *v = mt; break;
  case 1: *v = (int)f->static_shared; break;
  case 2: *v = 0; break;
  case 3: *v = 0; break;
  case 4: *v = 32; break;
  case 5: *v = 80; break;
  case 6: *v = SM; break;
  case 7: *v = 0; break;
  case 8: *v = f->max_dyn_shared; break;
  case 9: *v = -1; break;
  default:
    if (attr < 0 || attr > 15)
      return CUDA_ERROR_INVALID_VALUE;
    *v = 0;
  }
  return CUDA_SUCCESS;
}

API CUresult cuFuncSetAttribute(CUfunction h, int attr, int value) {
  ENTER(0);
  func_t *f = lookup("cuFuncSetAttribute", K_FUNC, h, 0);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (attr == 8) {
    if (value < 0 || value > SHARED_OPTIN - (int)f->static_shared)
      return CUDA_ERROR_INVALID_VALUE;
    f->max_dyn_shared = value;
    return CUDA_SUCCESS;
  }
  if (attr == 9 || (attr >= 10 && attr <= 15))
    return CUDA_SUCCESS;
  return CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuFuncGetParamInfo(CUfunction h, size_t index, size_t *off, size_t *size) {
  ENTER(0);
  func_t *f = lookup("cuFuncGetParamInfo", K_FUNC, h, 0);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (index >= (size_t)f->nparams)
    return CUDA_ERROR_INVALID_VALUE;
  if (off)
    *off = f->params[index].off;
  if (size)
    *size = f->params[index].size;
  return CUDA_SUCCESS;
}

API CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, CUfunction h, CUoccupancyB2DSize fn,
                                              size_t dyn, int limit) {
  ENTER(1);
  if (!min_grid || !block)
    return CUDA_ERROR_INVALID_VALUE;
  func_t *f = lookup("cuOccupancyMaxPotentialBlockSize", K_FUNC, h, 0);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  int b = f->maxntid[0] ? f->maxntid[0] * f->maxntid[1] * f->maxntid[2] : 1024;
  if (limit > 0 && b > limit)
    b = limit;
  size_t need = f->static_shared + (fn ? fn(b) : dyn);
  while (b > 32 && need > SHARED_OPTIN) {
    b /= 2;
    need = f->static_shared + (fn ? fn(b) : dyn);
  }
  *block = b;
  *min_grid = 132 * (2048 / b);
  return CUDA_SUCCESS;
}

/* ---- streams and events ----------------------------------------------------------------------------- */
enum optype { OP_COPY, OP_SET, OP_LAUNCH, OP_HOSTFN, OP_RECORD, OP_WAIT };

typedef struct event {
  ctx_t *ctx;
  uint64_t requested, completed; /* generations: record N is complete when completed >= N */
} event_t;
static pthread_mutex_t EV = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t EVC = PTHREAD_COND_INITIALIZER;

struct launch {
  func_t *f;
  module_t *mod;
  unsigned grid[3], block[3], shmem;
  uint8_t *params;
  int fault;
  char why[256];
};

typedef struct op {
  struct op *next;
  int type;
  uintptr_t dst, src;
  size_t n, pitch, width, height, elem;
  uint32_t value;
  CUhostFn fn;
  void *data;
  event_t *ev;
  uint64_t gen;
  launch_t *launch;
  kern_fn kernel;
} op_t;

typedef struct stream {
  ctx_t *ctx;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  op_t *head, *tail;
  uint64_t enqueued, done;
  int destroyed;
  CUresult error; /* sticky: a kernel fault */
  pthread_t thread;
} stream_t;

static void run_op(stream_t *s, op_t *o);

/* Operations enqueued on any stream and not finished yet (cuCtxSynchronize waits for 0). */
static pthread_mutex_t g_pending_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_pending_cv = PTHREAD_COND_INITIALIZER;
static unsigned long g_pending;

/* cuMemFree and cuMemFreeHost of memory from cuMemAlloc, cuMemAllocManaged and cuMemAllocHost "may perform
 * implicit synchronization" (CUDA's documentation): they wait for the work of every stream. Behind a host function
 * that waits for the caller that is a hang; the fake waits 2 s, counts it and goes on (a violation). */
static void implicit_sync(const char *fn) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 2;
  int stalled = 0;
  pthread_mutex_lock(&g_pending_mu);
  while (g_pending && !stalled)
    stalled = pthread_cond_timedwait(&g_pending_cv, &g_pending_mu, &until) == ETIMEDOUT;
  pthread_mutex_unlock(&g_pending_mu);
  if (stalled) {
    BUMP(implicit_sync_stalls);
    note("%s: waited 2 s for the device's queued work (the driver synchronises here: a hang behind a host "
         "function that waits for the caller)",
         fn);
  }
}

static void *stream_worker(void *arg) {
  stream_t *s = arg;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    while (!s->head && !s->destroyed)
      pthread_cond_wait(&s->cv, &s->mu);
    if (!s->head)
      break; /* destroyed and drained */
    op_t *o = s->head;
    pthread_mutex_unlock(&s->mu);
    run_op(s, o);
    pthread_mutex_lock(&s->mu);
    s->head = o->next;
    if (!s->head)
      s->tail = NULL;
    s->done++;
    free(o);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_lock(&g_pending_mu);
    if (--g_pending == 0)
      pthread_cond_broadcast(&g_pending_cv);
    pthread_mutex_unlock(&g_pending_mu);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static void enqueue(stream_t *s, op_t *o) {
  pthread_mutex_lock(&g_pending_mu);
  g_pending++;
  pthread_mutex_unlock(&g_pending_mu);
  pthread_mutex_lock(&s->mu);
  o->next = NULL;
  if (s->tail)
    s->tail->next = o;
  else
    s->head = o;
  s->tail = o;
  s->enqueued++;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

API CUresult cuStreamCreate(CUstream *out, unsigned flags) {
  ENTER(1);
  if (!out || (flags & ~1u))
    return CUDA_ERROR_INVALID_VALUE;
  stream_t *s = calloc(1, sizeof *s);
  s->ctx = t_cur;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&at, 256 * 1024);
  if (pthread_create(&s->thread, &at, stream_worker, s)) {
    pthread_attr_destroy(&at);
    free(s);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_attr_destroy(&at);
  *out = new_handle(K_STREAM, s);
  BUMP(live_streams);
  return CUDA_SUCCESS;
}

/* The stream of an async call; must belong to the current context. NULL stream: not used by the plugin. */
static CUresult get_stream(const char *fn, CUstream h, stream_t **out) {
  if (!h || h == (CUstream)1 || h == (CUstream)2) {
    note("%s: the legacy/per-thread default stream is not emulated (CUDA_ERROR_NOT_SUPPORTED)", fn);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  stream_t *s = lookup(fn, K_STREAM, h, 0);
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  if (t_cur && s->ctx != t_cur)
    return wrong_ctx(fn, s->ctx);
  *out = s;
  return CUDA_SUCCESS;
}

API CUresult cuStreamDestroy_v2(CUstream h) {
  ENTER(0);
  stream_t *s = lookup("cuStreamDestroy_v2", K_STREAM, h, 1);
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  /* as CUDA: returns at once; pending work completes, then the stream's resources are released */
  pthread_mutex_lock(&s->mu);
  s->destroyed = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  DROP(live_streams);
  return CUDA_SUCCESS;
}

API CUresult cuStreamSynchronize(CUstream h) {
  ENTER(0);
  stream_t *s = lookup("cuStreamSynchronize", K_STREAM, h, 0);
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&s->mu);
  while (s->done != s->enqueued)
    pthread_cond_wait(&s->cv, &s->mu);
  CUresult r = s->error;
  pthread_mutex_unlock(&s->mu);
  return r;
}

/* Waits for the work of every stream (the fake does not tell contexts apart here: stricter with two
 * devices, never looser); the context's sticky error is the first stream error. */
API CUresult cuCtxSynchronize(void) {
  ENTER(1);
  pthread_mutex_lock(&g_pending_mu);
  while (g_pending)
    pthread_cond_wait(&g_pending_cv, &g_pending_mu);
  pthread_mutex_unlock(&g_pending_mu);
  return CUDA_SUCCESS;
}

API CUresult cuStreamQuery(CUstream h) {
  ENTER(0);
  stream_t *s = lookup("cuStreamQuery", K_STREAM, h, 0);
  if (!s)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&s->mu);
  CUresult r = s->error ? s->error : s->done == s->enqueued ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&s->mu);
  return r;
}

API CUresult cuEventCreate(CUevent *out, unsigned flags) {
  ENTER(1);
  if (!out || (flags & ~0xfu))
    return CUDA_ERROR_INVALID_VALUE;
  event_t *e = calloc(1, sizeof *e);
  e->ctx = t_cur;
  *out = new_handle(K_EVENT, e);
  BUMP(live_events);
  return CUDA_SUCCESS;
}

API CUresult cuEventRecord(CUevent h, CUstream sh) {
  ENTER(0);
  event_t *e = lookup("cuEventRecord", K_EVENT, h, 0);
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  stream_t *s;
  CUresult r = get_stream("cuEventRecord", sh, &s);
  if (r)
    return r;
  if (s->ctx != e->ctx)
    return wrong_ctx("cuEventRecord (event and stream of different contexts)", e->ctx);
  op_t *o = calloc(1, sizeof *o);
  o->type = OP_RECORD;
  o->ev = e;
  pthread_mutex_lock(&EV);
  o->gen = ++e->requested;
  pthread_mutex_unlock(&EV);
  enqueue(s, o);
  return CUDA_SUCCESS;
}

API CUresult cuEventQuery(CUevent h) {
  ENTER(0);
  event_t *e = lookup("cuEventQuery", K_EVENT, h, 0);
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&EV);
  CUresult r = e->completed >= e->requested ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&EV);
  return r;
}

API CUresult cuEventSynchronize(CUevent h) {
  ENTER(0);
  event_t *e = lookup("cuEventSynchronize", K_EVENT, h, 0);
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&EV);
  uint64_t want = e->requested;
  while (e->completed < want)
    pthread_cond_wait(&EVC, &EV);
  pthread_mutex_unlock(&EV);
  return CUDA_SUCCESS;
}

API CUresult cuEventDestroy_v2(CUevent h) {
  ENTER(0);
  /* pending records/waits keep using the object (never freed), as CUDA defers the release */
  if (!lookup("cuEventDestroy_v2", K_EVENT, h, 1))
    return CUDA_ERROR_INVALID_HANDLE;
  DROP(live_events);
  return CUDA_SUCCESS;
}

API CUresult cuStreamWaitEvent(CUstream sh, CUevent h, unsigned flags) {
  ENTER(0);
  if (flags & ~1u)
    return CUDA_ERROR_INVALID_VALUE;
  stream_t *s;
  CUresult r = get_stream("cuStreamWaitEvent", sh, &s);
  if (r)
    return r;
  event_t *e = lookup("cuStreamWaitEvent", K_EVENT, h, 0);
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  op_t *o = calloc(1, sizeof *o);
  o->type = OP_WAIT;
  o->ev = e;
  pthread_mutex_lock(&EV);
  o->gen = e->requested; /* the most recent record at the time of the call */
  pthread_mutex_unlock(&EV);
  enqueue(s, o);
  return CUDA_SUCCESS;
}

API CUresult cuLaunchHostFunc(CUstream sh, CUhostFn fn, void *data) {
  ENTER(1);
  if (!fn)
    return CUDA_ERROR_INVALID_VALUE;
  stream_t *s;
  CUresult r = get_stream("cuLaunchHostFunc", sh, &s);
  if (r)
    return r;
  op_t *o = calloc(1, sizeof *o);
  o->type = OP_HOSTFN;
  o->fn = fn;
  o->data = data;
  enqueue(s, o);
  return CUDA_SUCCESS;
}

/* ---- copies and memsets ----------------------------------------------------------------------------- */
static CUresult copy_op(const char *fn, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream sh, int async) {
  if (n == 0)
    return CUDA_SUCCESS;
  if (!dst || !src)
    return CUDA_ERROR_INVALID_VALUE;
  if (!in_bounds(dst, n, fn) || !in_bounds(src, n, fn))
    return CUDA_ERROR_INVALID_VALUE;
  BUMP(copies);
  if (!async) {
    memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
  }
  stream_t *s;
  CUresult r = get_stream(fn, sh, &s);
  if (r)
    return r;
  int ks = mem_kind(src), kd = mem_kind(dst);
  int host_s = ks < 0 || ks == M_HOST || ks == M_REGISTERED, host_d = kd < 0 || kd == M_HOST || kd == M_REGISTERED;
  if (s && (ks < 0 || kd < 0 || (host_s && host_d))) {
    /* NVIDIA's driver, for a copy with pageable host memory or between two host ranges (measured on an H200,
     * driver 13.0, and CUDA's "API synchronization behavior"):
     * - from pageable memory to the device it takes the bytes at the call ("copied to a staging buffer
     *   immediately"; a copy whose source the stream's earlier work writes reads them too early), and may first
     *   wait for the stream's earlier work;
     * - to pageable memory, or host to host, it returns once the copy is done ("fully synchronous"): it waits
     *   for the stream.
     * Behind a host function that waits for the caller, the waits never end: the fake waits 2 s, counts it and
     * goes on (a violation). Either way the copy is done when the call returns. */
    void *snap = NULL;
    if (ks < 0 && !host_d) {
      snap = malloc(n);
      if (!snap)
        return CUDA_ERROR_OUT_OF_MEMORY;
      memcpy(snap, (void *)(uintptr_t)src, n);
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 2;
    int stalled = 0;
    pthread_mutex_lock(&s->mu);
    while (s->done != s->enqueued && !stalled)
      stalled = pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT;
    pthread_mutex_unlock(&s->mu);
    if (stalled) {
      BUMP(pageable_stalls);
      note("%s: a copy %#lx -> %#lx (%s) waited 2 s for its stream's earlier work (NVIDIA's driver waits for it "
           "to finish: a hang behind a host function that waits for the caller)",
           fn, (unsigned long)src, (unsigned long)dst, host_s && host_d ? "host to host" : "pageable host memory");
    }
    memmove((void *)(uintptr_t)dst, snap ? snap : (void *)(uintptr_t)src, n);
    free(snap);
    return CUDA_SUCCESS;
  }
  op_t *o = calloc(1, sizeof *o);
  o->type = OP_COPY;
  o->dst = dst;
  o->src = src;
  o->n = n;
  enqueue(s, o);
  return CUDA_SUCCESS;
}

API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  ENTER(1);
  return copy_op("cuMemcpy", dst, src, n, NULL, 0);
}

API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  ENTER(1);
  return copy_op("cuMemcpyAsync", dst, src, n, s, 1);
}

static CUresult memset_op(const char *fn, uintptr_t dst, size_t pitch, uint32_t v, size_t elem, size_t width,
                          size_t height, CUstream sh) {
  if (dst % elem || pitch % elem) {
    note("%s: address %#lx or pitch %zu not %zu-byte aligned (CUDA_ERROR_INVALID_VALUE)", fn, (unsigned long)dst,
         pitch, elem);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (width == 0 || height == 0)
    return CUDA_SUCCESS;
  if (height > 1 && pitch < width * elem)
    return CUDA_ERROR_INVALID_VALUE;
  if (!dst || !in_bounds(dst, pitch * (height - 1) + width * elem, fn))
    return CUDA_ERROR_INVALID_VALUE;
  stream_t *s;
  CUresult r = get_stream(fn, sh, &s);
  if (r)
    return r;
  BUMP(memsets);
  op_t *o = calloc(1, sizeof *o);
  o->type = OP_SET;
  o->dst = dst;
  o->pitch = pitch;
  o->value = v;
  o->elem = elem;
  o->width = width;
  o->height = height;
  enqueue(s, o);
  return CUDA_SUCCESS;
}

API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  ENTER(1);
  return memset_op("cuMemsetD8Async", d, n, v, 1, n, 1, s);
}
API CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
  ENTER(1);
  return memset_op("cuMemsetD16Async", d, 2 * n, v, 2, n, 1, s);
}
API CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
  ENTER(1);
  return memset_op("cuMemsetD32Async", d, 4 * n, v, 4, n, 1, s);
}
API CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s) {
  ENTER(1);
  return memset_op("cuMemsetD2D8Async", d, pitch, v, 1, w, h, s);
}
API CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s) {
  ENTER(1);
  return memset_op("cuMemsetD2D16Async", d, pitch, v, 2, w, h, s);
}
API CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s) {
  ENTER(1);
  return memset_op("cuMemsetD2D32Async", d, pitch, v, 4, w, h, s);
}

/* ---- kernel emulation ------------------------------------------------------------------------------- */
/* A pointer a kernel dereferences must be reachable by the GPU; else the launch faults (the stream's
 * sticky error becomes CUDA_ERROR_ILLEGAL_ADDRESS, as a real illegal access would). */
static int reach(launch_t *L, uint64_t p, size_t n, const char *what) {
  if (L->fault)
    return 0;
  if (reachable((uintptr_t)p, n))
    return 1;
  L->fault = 1;
  snprintf(L->why, sizeof L->why, "%s: %s [%#llx, +%zu) is not memory the GPU can reach", L->f->name, what,
           (unsigned long long)p, n);
  return 0;
}
#define PARAM(L, i, T) (*(T *)(void *)((L)->params + (L)->f->params[i].off))
#define NTHREADS(L) ((size_t)(L)->block[0] * (L)->block[1] * (L)->block[2])
#define NITEMS_X(L) ((size_t)(L)->grid[0] * (L)->block[0])

static uint8_t *global_of(launch_t *L, const char *name, size_t need) {
  global_t *g = mod_global(L->mod, name);
  if (!g || g->size < need) {
    L->fault = 1;
    snprintf(L->why, sizeof L->why, "%s: module has no global '%s' of %zu bytes", L->f->name, name, need);
    return NULL;
  }
  return g->storage;
}

static void k_saxpy(launch_t *L) {
  float a;
  memcpy(&a, L->params + L->f->params[0].off, 4);
  uint64_t x = PARAM(L, 1, uint64_t), y = PARAM(L, 2, uint64_t);
  uint32_t n = PARAM(L, 3, uint32_t);
  size_t items = NITEMS_X(L) < n ? NITEMS_X(L) : n;
  if (!items || !reach(L, x, items * 4, "x") || !reach(L, y, items * 4, "y"))
    return;
  float *xp = (float *)(uintptr_t)x, *yp = (float *)(uintptr_t)y;
  for (size_t i = 0; i < items; i++)
    yp[i] = a * xp[i] + yp[i];
}

static void k_reduce(launch_t *L) {
  uint64_t in = PARAM(L, 0, uint64_t), out = PARAM(L, 1, uint64_t);
  uint32_t n = L->block[0];
  if (!reach(L, in, (size_t)L->grid[0] * n * 4, "in") || !reach(L, out, (size_t)L->grid[0] * 4, "out"))
    return;
  if (n > 1024) {
    L->fault = 1;
    snprintf(L->why, sizeof L->why, "reduce: block of %u overflows its 1024-entry shared array", n);
    return;
  }
  uint32_t s[1024];
  for (uint32_t b = 0; b < L->grid[0]; b++) {
    memcpy(s, (uint32_t *)(uintptr_t)in + (size_t)b * n, n * 4);
    for (uint32_t k = n / 2; k > 0; k >>= 1)
      for (uint32_t t = 0; t < k; t++)
        s[t] += s[t + k];
    ((uint32_t *)(uintptr_t)out)[b] = s[0];
  }
}

static void k_coords2d(launch_t *L) {
  uint64_t out = PARAM(L, 0, uint64_t);
  size_t w = NITEMS_X(L), h = (size_t)L->grid[1] * L->block[1];
  if (!reach(L, out, w * h * 8, "out"))
    return;
  uint32_t *o = (uint32_t *)(uintptr_t)out;
  for (size_t y = 0; y < h; y++)
    for (size_t x = 0; x < w; x++) {
      o[2 * (y * w + x)] = (uint32_t)x;
      o[2 * (y * w + x) + 1] = (uint32_t)y;
    }
}

static void k_coords3d(launch_t *L) {
  uint64_t out = PARAM(L, 0, uint64_t);
  size_t w = NITEMS_X(L), h = (size_t)L->grid[1] * L->block[1], d = (size_t)L->grid[2] * L->block[2];
  if (!reach(L, out, w * h * d * 32, "out"))
    return;
  for (size_t z = 0; z < d; z++)
    for (size_t y = 0; y < h; y++)
      for (size_t x = 0; x < w; x++) {
        uint32_t *o = (uint32_t *)(uintptr_t)out + 8 * ((z * h + y) * w + x);
        o[0] = (uint32_t)x;
        o[1] = (uint32_t)y;
        o[2] = (uint32_t)z;
        o[3] = (uint32_t)(z % L->block[2]);
        o[4] = (uint32_t)(z / L->block[2]);
        o[5] = L->block[2];
        o[6] = L->grid[2];
        o[7] = (uint32_t)NTHREADS(L);
      }
}

static void k_dynshared(launch_t *L) {
  uint64_t out = PARAM(L, 0, uint64_t);
  uint32_t n = L->block[0];
  if (L->shmem < (size_t)n * 4) {
    L->fault = 1;
    snprintf(L->why, sizeof L->why, "dynshared: %u bytes of dynamic shared memory for %u threads (needs %u)",
             L->shmem, n, n * 4);
    return;
  }
  if (!reach(L, out, NITEMS_X(L) * 4, "out"))
    return;
  uint32_t *o = (uint32_t *)(uintptr_t)out;
  for (size_t g = 0; g < L->grid[0]; g++)
    for (uint32_t t = 0; t < n; t++)
      o[g * n + t] = (uint32_t)(g * n + (n - 1 - t)) * 3;
}

static void k_atomics(launch_t *L) {
  uint64_t c = PARAM(L, 0, uint64_t), m = PARAM(L, 1, uint64_t), s = PARAM(L, 2, uint64_t);
  if (!reach(L, c, 4, "counter") || !reach(L, m, 4, "maxv") || !reach(L, s, 8, "sum"))
    return;
  size_t n = NITEMS_X(L);
  uint32_t *cp = (uint32_t *)(uintptr_t)c, *mp = (uint32_t *)(uintptr_t)m;
  uint64_t *sp = (uint64_t *)(uintptr_t)s;
  for (size_t g = 0; g < n; g++) {
    *cp += 1;
    if (*mp < g)
      *mp = (uint32_t)g;
    *sp += g;
  }
}

static void k_structarg(launch_t *L) {
  const uint8_t *m = L->params + L->f->params[1].off; /* struct mixed {char; double; short; int *; float} */
  int8_t c0 = PARAM(L, 0, int8_t);
  int16_t s2 = PARAM(L, 2, int16_t);
  uint64_t out = PARAM(L, 3, uint64_t);
  double d;
  int16_t ms;
  uint64_t mp;
  float f;
  memcpy(&d, m + 8, 8);
  memcpy(&ms, m + 16, 2);
  memcpy(&mp, m + 24, 8);
  memcpy(&f, m + 32, 4);
  if (!reach(L, out, 7 * 8, "out") || !reach(L, mp, 4, "m.p"))
    return;
  int64_t *o = (int64_t *)(uintptr_t)out;
  o[0] = c0;
  o[1] = (int8_t)m[0];
  o[2] = (int64_t)(d * 4);
  o[3] = ms;
  o[4] = *(int32_t *)(uintptr_t)mp;
  o[5] = (int64_t)(f * 2);
  o[6] = s2;
}

static void k_divergent(launch_t *L) {
  uint64_t out = PARAM(L, 0, uint64_t);
  if (!reach(L, out, NITEMS_X(L) * 4, "out"))
    return;
  uint32_t *o = (uint32_t *)(uintptr_t)out;
  for (size_t g = 0; g < NITEMS_X(L); g++) {
    uint32_t t = (uint32_t)(g % L->block[0]), v;
    if (t % 3 == 0)
      v = (uint32_t)g * 2;
    else if (t % 3 == 1)
      v = t * (t - 1) / 2;
    else
      v = (uint32_t)g ^ 0x5a5a;
    o[g] = v;
  }
}

static void k_write_global(launch_t *L) {
  uint32_t *g = (uint32_t *)global_of(L, "global_var", 256);
  if (!g)
    return;
  for (uint32_t t = 0; t < L->block[0] && t < 64; t++)
    g[t] = 2 * t;
}

static void k_read_global(launch_t *L) {
  uint64_t out = PARAM(L, 0, uint64_t);
  uint32_t *g = (uint32_t *)global_of(L, "global_var", 256);
  if (!g || !reach(L, out, NITEMS_X(L) * 4, "out"))
    return;
  for (size_t i = 0; i < NITEMS_X(L); i++)
    ((uint32_t *)(uintptr_t)out)[i] = g[(i % L->block[0]) % 64];
}

static void k_read_ctor(launch_t *L) {
  uint64_t out = PARAM(L, 0, uint64_t);
  uint32_t *g = (uint32_t *)global_of(L, "ctor_var", 256);
  if (!g || !reach(L, out, (size_t)L->block[0] * 4, "out"))
    return;
  for (uint32_t t = 0; t < L->block[0]; t++)
    ((uint32_t *)(uintptr_t)out)[t] = g[t % 64] + t;
}

static void k_sequence(launch_t *L) {
  uint32_t idx = PARAM(L, 0, uint32_t);
  uint64_t io = PARAM(L, 1, uint64_t);
  if (!reach(L, io, ((size_t)idx + 1) * 4, "inout"))
    return;
  uint32_t *p = (uint32_t *)(uintptr_t)io;
  p[idx] = idx == 0 ? 0 : idx == 1 ? 1 : p[idx - 1] + p[idx - 2];
}

static void k_foo(launch_t *L) {
  uint64_t out = PARAM(L, 0, uint64_t);
  if (!reach(L, out, (size_t)L->block[0] * 4, "out"))
    return;
  for (uint32_t t = 0; t < L->block[0]; t++)
    ((uint32_t *)(uintptr_t)out)[t] = t;
}

static void k_noargs(launch_t *L) { (void)L; }

static void k_early_exit(launch_t *L) {
  uint64_t out = PARAM(L, 0, uint64_t);
  if (!reach(L, out, NITEMS_X(L) * 4, "out"))
    return;
  for (size_t g = 0; g < NITEMS_X(L); g += 2)
    ((uint32_t *)(uintptr_t)out)[g] = 7;
}

static void k_spin(launch_t *L) {
  uint64_t iters = PARAM(L, 0, uint64_t), out = PARAM(L, 1, uint64_t);
  if (!reach(L, out, 8, "out"))
    return;
  volatile uint64_t acc = 0;
  for (uint64_t i = 0; i < iters; i++)
    acc = acc * 6364136223846793005ull + 1442695040888963407ull;
  *(uint64_t *)(uintptr_t)out = acc | 1;
}

/* Device functions the ctor/dtor kernels call (the constructors of kernels.c). */
static void f_ctor_a(launch_t *L) {
  uint32_t *g = (uint32_t *)global_of(L, "ctor_var", 256);
  for (int i = 0; g && i < 64; i++)
    g[i] = 40;
}
static void f_ctor_b(launch_t *L) {
  uint32_t *g = (uint32_t *)global_of(L, "ctor_var", 256);
  for (int i = 0; g && i < 64; i++)
    g[i] *= 2;
}
static void f_ctor_c(launch_t *L) {
  uint32_t *g = (uint32_t *)global_of(L, "ctor_var", 256);
  for (int i = 0; g && i < 64; i++)
    g[i] += 20;
}

/* ffi-tests/device/ctors.c */
static void f_ctor_first(launch_t *L) {
  uint32_t *seed = (uint32_t *)global_of(L, "ctor_seed", 4), *out = (uint32_t *)global_of(L, "ctor_out", 256);
  for (uint32_t i = 0; seed && out && i < 64; i++)
    out[i] = *seed + i;
}
static void f_ctor_second(launch_t *L) {
  uint32_t *seed = (uint32_t *)global_of(L, "ctor_seed", 4), *out = (uint32_t *)global_of(L, "ctor_out", 256);
  for (uint32_t i = 0; seed && out && i < 64; i++)
    out[i] *= *seed;
}
static void k_read_ctor_out(launch_t *L) {
  uint64_t out = PARAM(L, 0, uint64_t);
  uint32_t *g = (uint32_t *)global_of(L, "ctor_out", 256);
  if (!g || !reach(L, out, (size_t)L->block[0] * 4, "out"))
    return;
  for (uint32_t t = 0; t < L->block[0]; t++)
    ((uint32_t *)(uintptr_t)out)[t] = g[t % 64];
}

static const struct {
  const char *name;
  kern_fn fn;
} DEVICE_FUNCS[] = {{"ctor_a", f_ctor_a},         {"ctor_b", f_ctor_b},          {"ctor_c", f_ctor_c},
                    {"ctor_first", f_ctor_first}, {"ctor_second", f_ctor_second}};

/* nvptx$device$init/fini: call every function pointer in [start, end), as the PTX LLVM emits does. */
static void walk_array(launch_t *L, const char *start_sym, const char *end_sym) {
  uint8_t *sp = global_of(L, start_sym, 8), *ep = global_of(L, end_sym, 8);
  if (!sp || !ep)
    return;
  uint64_t start, end;
  memcpy(&start, sp, 8);
  memcpy(&end, ep, 8);
  if (start == end)
    return;
  if (end < start || (end - start) % 8 || !reach(L, start, end - start, start_sym))
    return;
  for (uint64_t p = start; p < end; p += 8) {
    uint64_t fa = *(uint64_t *)(uintptr_t)p;
    func_t *callee = NULL;
    for (int i = 0; i < L->mod->nfuncs; i++)
      if (L->mod->funcs[i].addr == fa)
        callee = &L->mod->funcs[i];
    if (!callee) {
      L->fault = 1;
      snprintf(L->why, sizeof L->why, "%s: entry %#llx of the table is not a function of the module", L->f->name,
               (unsigned long long)fa);
      return;
    }
    kern_fn fn = NULL;
    for (size_t i = 0; i < sizeof DEVICE_FUNCS / sizeof DEVICE_FUNCS[0]; i++)
      if (!strcmp(DEVICE_FUNCS[i].name, callee->name))
        fn = DEVICE_FUNCS[i].fn;
    if (!fn) {
      BUMP(unsupported_kernels);
      note("%s calls device function '%s', which the fake does not emulate (skipped)", L->f->name, callee->name);
      continue;
    }
    fn(L);
  }
}
static void k_init(launch_t *L) { walk_array(L, "__init_array_start", "__init_array_end"); }
static void k_fini(launch_t *L) { walk_array(L, "__fini_array_start", "__fini_array_end"); }

/* Emulated kernels (ffi-tests/device/kernels.c and ctors.c) with the parameter sizes their PTX declares (a mismatch is NOT_SUPPORTED). */
static const struct {
  const char *name;
  kern_fn fn;
  int nparams;
  size_t sizes[4];
} KERNELS[] = {
    {"saxpy", k_saxpy, 4, {4, 8, 8, 4}},     {"reduce", k_reduce, 2, {8, 8}},
    {"coords2d", k_coords2d, 1, {8}},        {"coords3d", k_coords3d, 1, {8}},
    {"dynshared", k_dynshared, 1, {8}},      {"atomics", k_atomics, 3, {8, 8, 8}},
    {"structarg", k_structarg, 4, {1, 40, 2, 8}}, {"divergent", k_divergent, 1, {8}},
    {"write_global", k_write_global, 0, {0}}, {"read_global", k_read_global, 1, {8}},
    {"read_ctor", k_read_ctor, 1, {8}},      {"sequence", k_sequence, 2, {4, 8}},
    {"foo", k_foo, 1, {8}},                  {"noargs", k_noargs, 0, {0}},
    {"early_exit", k_early_exit, 1, {8}},    {"spin", k_spin, 2, {8, 8}},
    {"nvptx$device$init", k_init, 0, {0}},   {"nvptx$device$fini", k_fini, 0, {0}},
    {"read_ctor_out", k_read_ctor_out, 1, {8}},
};

static void run_op(stream_t *s, op_t *o) {
  switch (o->type) {
  case OP_COPY:
    memmove((void *)o->dst, (void *)o->src, o->n);
    break;
  case OP_SET:
    for (size_t r = 0; r < o->height; r++) {
      uint8_t *row = (uint8_t *)o->dst + r * o->pitch;
      for (size_t i = 0; i < o->width; i++) {
        if (o->elem == 1)
          row[i] = (uint8_t)o->value;
        else if (o->elem == 2) {
          uint16_t v = (uint16_t)o->value;
          memcpy(row + 2 * i, &v, 2);
        } else
          memcpy(row + 4 * i, &o->value, 4);
      }
    }
    break;
  case OP_LAUNCH: {
    launch_t *L = o->launch;
    pthread_mutex_lock(&s->mu);
    int skip = s->error != 0;
    pthread_mutex_unlock(&s->mu);
    if (!skip && !L->mod->unloaded) {
      o->kernel(L);
      BUMP(launches);
    }
    if (L->mod->unloaded && !skip) {
      L->fault = 1;
      snprintf(L->why, sizeof L->why, "%s: its module was unloaded before the kernel ran", L->f->name);
    }
    if (L->fault) {
      BUMP(kernel_faults);
      note("VIOLATION: kernel fault: %s (stream error CUDA_ERROR_ILLEGAL_ADDRESS)", L->why);
      pthread_mutex_lock(&s->mu);
      s->error = CUDA_ERROR_ILLEGAL_ADDRESS;
      pthread_mutex_unlock(&s->mu);
    }
    free(L->params);
    free(L);
    break;
  }
  case OP_HOSTFN:
    t_in_cb = 1;
    o->fn(o->data);
    t_in_cb = 0;
    BUMP(host_fns);
    break;
  case OP_RECORD:
    pthread_mutex_lock(&EV);
    if (o->ev->completed < o->gen)
      o->ev->completed = o->gen;
    pthread_cond_broadcast(&EVC);
    pthread_mutex_unlock(&EV);
    break;
  case OP_WAIT:
    pthread_mutex_lock(&EV);
    while (o->ev->completed < o->gen)
      pthread_cond_wait(&EVC, &EV);
    pthread_mutex_unlock(&EV);
    break;
  }
}

static CUresult bad_launch(func_t *f, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  BUMP(bad_launches);
  note("cuLaunchKernel('%s'): %s (CUDA_ERROR_INVALID_VALUE)", f->name, buf);
  return CUDA_ERROR_INVALID_VALUE;
}

API CUresult cuLaunchKernel(CUfunction h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shmem, CUstream sh, void **kernel_params, void **extra) {
  ENTER(1);
  func_t *f = lookup("cuLaunchKernel", K_FUNC, h, 0);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (f->mod->ctx != t_cur)
    return wrong_ctx("cuLaunchKernel", f->mod->ctx);
  stream_t *s;
  CUresult r = get_stream("cuLaunchKernel", sh, &s);
  if (r)
    return r;
  /* dims and shared memory against the device's limits */
  if (!gx || !gy || !gz || !bx || !by || !bz)
    return bad_launch(f, "a zero grid or block dimension");
  if (gx > 2147483647u || gy > 65535 || gz > 65535)
    return bad_launch(f, "grid %ux%ux%u exceeds 2147483647x65535x65535", gx, gy, gz);
  if (bx > 1024 || by > 1024 || bz > 64 || (uint64_t)bx * by * bz > 1024)
    return bad_launch(f, "block %ux%ux%u exceeds 1024x1024x64 / 1024 threads", bx, by, bz);
  if (f->maxntid[0] && (uint64_t)bx * by * bz > (uint64_t)f->maxntid[0] * f->maxntid[1] * f->maxntid[2])
    return bad_launch(f, "block %ux%ux%u exceeds the kernel's .maxntid %d,%d,%d", bx, by, bz, f->maxntid[0],
                      f->maxntid[1], f->maxntid[2]);
  if ((int)shmem > f->max_dyn_shared)
    return bad_launch(f, "%u bytes of dynamic shared memory; the function allows %d (%zu static; raise "
                         "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES beyond 48 KiB)",
                      shmem, f->max_dyn_shared, f->static_shared);
  /* arguments */
  uint8_t *params = calloc(1, f->param_block ? f->param_block : 1);
  if (kernel_params && extra) {
    free(params);
    return bad_launch(f, "both kernelParams and extra");
  }
  if (extra) {
    void *buf = NULL;
    size_t *size = NULL;
    for (int i = 0; extra[i] != NULL; i += 2) {
      if (extra[i] == (void *)1)
        buf = extra[i + 1];
      else if (extra[i] == (void *)2)
        size = extra[i + 1];
      else {
        free(params);
        return bad_launch(f, "unknown extra option %p", extra[i]);
      }
    }
    if (!buf || !size) {
      free(params);
      return bad_launch(f, "extra without BUFFER_POINTER and BUFFER_SIZE");
    }
    if (*size != f->param_block) {
      free(params);
      return bad_launch(f, "argument buffer of %zu bytes; the kernel's parameters take %zu", *size, f->param_block);
    }
    memcpy(params, buf, f->param_block);
  } else if (kernel_params) {
    for (int i = 0; i < f->nparams; i++)
      memcpy(params + f->params[i].off, kernel_params[i], f->params[i].size);
  } else if (f->nparams) {
    free(params);
    return bad_launch(f, "%d parameters and no arguments", f->nparams);
  }
  /* the emulation */
  kern_fn fn = NULL;
  for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
    if (!strcmp(KERNELS[i].name, f->name)) {
      int same = KERNELS[i].nparams == f->nparams;
      for (int k = 0; same && k < f->nparams; k++)
        same = KERNELS[i].sizes[k] == f->params[k].size;
      if (!same) {
        free(params);
        BUMP(unsupported_kernels);
        note("cuLaunchKernel('%s'): its PTX parameters differ from the emulated kernel's (CUDA_ERROR_NOT_SUPPORTED)",
             f->name);
        return CUDA_ERROR_NOT_SUPPORTED;
      }
      fn = KERNELS[i].fn;
    }
  if (!fn) {
    free(params);
    BUMP(unsupported_kernels);
    note("cuLaunchKernel('%s'): the fake driver does not emulate this kernel (CUDA_ERROR_NOT_SUPPORTED)", f->name);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  launch_t *L = calloc(1, sizeof *L);
  *L = (launch_t){f, f->mod, {gx, gy, gz}, {bx, by, bz}, shmem, params, 0, ""};
  op_t *o = calloc(1, sizeof *o);
  o->type = OP_LAUNCH;
  o->launch = L;
  o->kernel = fn;
  enqueue(s, o);
  return CUDA_SUCCESS;
}
