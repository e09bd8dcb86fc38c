/* The real CUDA table: libcudart loaded with dlopen on first use, its functions wrapped into
 * gcoll__cuda_ops_t, and the kernels of libgcoll_cuda.so (built by nvcc beside libgcoll.so) when
 * that library is found. No runtime, no driver or no visible GPU: no table, and every buffer
 * is host memory. The declarations below are the few parts of the CUDA runtime ABI gcoll uses,
 * so building needs no CUDA headers. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "cuda/cuda.h"
#include "cuda/rt_abi.h"

static const gcoll__cuda_ops_t *ops;
static const gcoll__cuda_ops_t *forced;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char why[256] = "off: built with CUDA=0";

void gcoll__cuda_set_ops(const gcoll__cuda_ops_t *o)
{
    forced = o;
}

#if GCOLL_HAVE_CUDA
static struct {
    int (*get_device_count)(int *);
    int (*pointer_attr)(struct gcoll__cuda_ptr_attr *, const void *);
    int (*get_last_error)(void);
    int (*set_device)(int);
    int (*stream_create)(void **, unsigned);
    int (*stream_destroy)(void *);
    int (*stream_wait_event)(void *, void *, unsigned);
    int (*event_create)(void **, unsigned);
    int (*event_destroy)(void *);
    int (*event_record)(void *, void *);
    int (*event_query)(void *);
    int (*event_sync)(void *);
    int (*memcpy_async)(void *, const void *, size_t, int, void *);
    int (*host_alloc)(void **, size_t, unsigned);
    int (*host_free)(void *);
    int (*dev_alloc)(void **, size_t);
    int (*dev_free)(void *);
    const char *(*error_string)(int);
    int (*ipc_get)(gcoll__cuda_ipc_handle_t *, void *);
    int (*ipc_open)(void **, gcoll__cuda_ipc_handle_t, unsigned);
    int (*ipc_close)(void *);
    int (*bus_id)(char *, int, int);
} rt;

/* Asking the runtime about a pointer creates a CUDA context (hundreds of MiB of GPU memory,
 * a fraction of a second) in a process that never used the GPU; a process that allocated device
 * memory through the runtime has an active primary context. So pointers are all host memory
 * until the driver reports one active (then forever: contexts outlive their buffers). */
static struct {
    int (*device_get)(int *, int);
    int (*primary_state)(int, unsigned *, int *);
    int (*address_range)(unsigned long long *, size_t *, unsigned long long);
    int (*pointer_attribute)(void *, int, unsigned long long);
} drv;
static int ndevices, ctx_seen;

static int context_active(void)
{
    if (__atomic_load_n(&ctx_seen, __ATOMIC_ACQUIRE))
        return 1;
    int seen = !drv.primary_state; /* no driver functions to ask: assume one */
    for (int i = 0; i < ndevices && !seen; i++) {
        int dev, active = 0;
        unsigned flags;
        seen = drv.device_get(&dev, i) != 0 || drv.primary_state(dev, &flags, &active) != 0 || active;
    }
    if (seen)
        __atomic_store_n(&ctx_seen, 1, __ATOMIC_RELEASE);
    return seen;
}

static int rt_is_device(const void *p, int *device)
{
    if (!context_active())
        return 0;
    struct gcoll__cuda_ptr_attr a;
    memset(&a, 0, sizeof(a));
    if (rt.pointer_attr(&a, p) != 0) {
        rt.get_last_error(); /* runtimes before 11 fail on plain host memory: clear the error */
        return 0;
    }
    *device = a.device;
    return a.type == 2 ? 1 : a.type == 3 ? 2 : 0; /* managed memory is staged like device memory */
}
static int rt_stream_create(void **s)
{
    return rt.stream_create(s, 1 /* cudaStreamNonBlocking */);
}
static int rt_stream_wait_event(void *s, void *e)
{
    return rt.stream_wait_event(s, e, 0);
}
static int rt_event_create(void **e)
{
    return rt.event_create(e, 2 /* cudaEventDisableTiming */);
}
static int rt_memcpy_async(void *d, const void *s, size_t n, void *st)
{
    return rt.memcpy_async(d, s, n, 4, st);
}
static int rt_host_alloc(void **p, size_t n)
{
    return rt.host_alloc(p, n, 1 /* cudaHostAllocPortable */);
}

/* The allocation holding p (the driver's address range: IPC handles name whole allocations) and
 * its buffer id, which the driver never gives two allocations of one process. */
static int rt_ipc_export(const void *p, gcoll__cuda_ipc_handle_t *h, size_t *offset, unsigned long long *id)
{
    unsigned long long base = 0;
    size_t size = 0;
    if (drv.address_range(&base, &size, (unsigned long long)(uintptr_t)p) != 0 ||
        drv.pointer_attribute(id, 7 /* CU_POINTER_ATTRIBUTE_BUFFER_ID */, base) != 0)
        return 1; /* cudaErrorInvalidValue */
    *offset = (size_t)((uintptr_t)p - base);
    return rt.ipc_get(h, (void *)(uintptr_t)base);
}
static int rt_bus_id(int device, char *buf, int len)
{
    return rt.bus_id(buf, len, device);
}
static int rt_ipc_open(const gcoll__cuda_ipc_handle_t *h, void **base)
{
    return rt.ipc_open(base, *h, 1 /* cudaIpcMemLazyEnablePeerAccess */);
}

static gcoll__cuda_ops_t real = {
    .name = "cudart",
    .is_device = rt_is_device,
    .stream_create = rt_stream_create,
    .stream_wait_event = rt_stream_wait_event,
    .event_create = rt_event_create,
    .memcpy_async = rt_memcpy_async,
    .host_alloc = rt_host_alloc,
};

/* sym: the runtime's function name; every one is required. */
static int bind(void *h, void **slot, const char *sym)
{
    *slot = dlsym(h, sym);
    if (!*slot)
        snprintf(why, sizeof(why), "off: the runtime lacks %s", sym);
    return *slot != NULL;
}

/* The kernels' library, beside the libgcoll that holds this code (or on the loader's path). */
static void load_kernels(void)
{
    Dl_info info;
    void *h = NULL;
    if (dladdr((void *)gcoll__cuda_get, &info) && info.dli_fname) {
        char path[4096];
        const char *slash = strrchr(info.dli_fname, '/');
        int dir = slash ? (int)(slash - info.dli_fname) : 0;
        snprintf(path, sizeof(path), "%.*s%slibgcoll_cuda.so", dir, info.dli_fname, slash ? "/" : "");
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (!h)
        h = dlopen("libgcoll_cuda.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        GCOLL_LOG(GCOLL_LOG_INFO, "CUDA: no libgcoll_cuda.so (%s): device reductions unavailable", dlerror());
        return;
    }
    *(void **)&real.reduce = dlsym(h, "gcoll_cuda_kernel_reduce");
    *(void **)&real.reduce_multi = dlsym(h, "gcoll_cuda_kernel_reduce_multi");
    *(void **)&real.adasum_dots = dlsym(h, "gcoll_cuda_kernel_adasum_dots");
    *(void **)&real.scaled_add = dlsym(h, "gcoll_cuda_kernel_scaled_add");
    *(void **)&real.convert = dlsym(h, "gcoll_cuda_kernel_convert");
}

static const gcoll__cuda_ops_t *load_real(void)
{
    static const char *const names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !h; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, sizeof(why), "off: no CUDA runtime (libcudart.so.13/12/11) found");
        return NULL;
    }
    int ok = bind(h, (void **)&rt.get_device_count, "cudaGetDeviceCount") &&
        bind(h, (void **)&rt.pointer_attr, "cudaPointerGetAttributes") &&
        bind(h, (void **)&rt.get_last_error, "cudaGetLastError") && bind(h, (void **)&rt.set_device, "cudaSetDevice") &&
        bind(h, (void **)&rt.stream_create, "cudaStreamCreateWithFlags") &&
        bind(h, (void **)&rt.stream_destroy, "cudaStreamDestroy") &&
        bind(h, (void **)&rt.stream_wait_event, "cudaStreamWaitEvent") &&
        bind(h, (void **)&rt.event_create, "cudaEventCreateWithFlags") &&
        bind(h, (void **)&rt.event_destroy, "cudaEventDestroy") &&
        bind(h, (void **)&rt.event_record, "cudaEventRecord") && bind(h, (void **)&rt.event_query, "cudaEventQuery") &&
        bind(h, (void **)&rt.event_sync, "cudaEventSynchronize") &&
        bind(h, (void **)&rt.memcpy_async, "cudaMemcpyAsync") && bind(h, (void **)&rt.host_alloc, "cudaHostAlloc") &&
        bind(h, (void **)&rt.host_free, "cudaFreeHost") && bind(h, (void **)&rt.dev_alloc, "cudaMalloc") &&
        bind(h, (void **)&rt.dev_free, "cudaFree") && bind(h, (void **)&rt.error_string, "cudaGetErrorString");
    int n = 0, err = ok ? rt.get_device_count(&n) : 0;
    if (!ok || err || n <= 0) {
        if (ok)
            snprintf(why, sizeof(why), "off: %s", err ? rt.error_string(err) : "no GPU visible");
        return NULL; /* left loaded: unloading would turn what the runtime allocated into leaks */
    }
    ndevices = n;
    void *d = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); /* the driver the runtime just loaded */
    if (d &&
        (!(*(void **)&drv.device_get = dlsym(d, "cuDeviceGet")) ||
         !(*(void **)&drv.primary_state = dlsym(d, "cuDevicePrimaryCtxGetState"))))
        drv.primary_state = NULL;
    /* IPC is optional: without any of these, device buffers of one host take the staged path */
    if (d && (*(void **)&drv.address_range = dlsym(d, "cuMemGetAddressRange_v2")) &&
        (*(void **)&drv.pointer_attribute = dlsym(d, "cuPointerGetAttribute")) &&
        (*(void **)&rt.ipc_get = dlsym(h, "cudaIpcGetMemHandle")) &&
        (*(void **)&rt.ipc_open = dlsym(h, "cudaIpcOpenMemHandle")) &&
        (*(void **)&rt.ipc_close = dlsym(h, "cudaIpcCloseMemHandle"))) {
        real.ipc_export = rt_ipc_export;
        real.ipc_open = rt_ipc_open;
        real.ipc_close = rt.ipc_close;
    }
    if ((*(void **)&rt.bus_id = dlsym(h, "cudaDeviceGetPCIBusId")))
        real.bus_id = rt_bus_id;
    real.set_device = rt.set_device;
    real.stream_destroy = rt.stream_destroy;
    real.event_destroy = rt.event_destroy;
    real.event_record = rt.event_record;
    real.event_query = rt.event_query;
    real.event_sync = rt.event_sync;
    real.host_free = rt.host_free;
    real.dev_alloc = rt.dev_alloc;
    real.dev_free = rt.dev_free;
    real.error_string = rt.error_string;
    load_kernels();
    snprintf(why, sizeof(why), "on: %d GPU%s; device reductions %s; CUDA IPC %s", n, n == 1 ? "" : "s",
             real.reduce ? "from libgcoll_cuda.so" : "missing (no libgcoll_cuda.so)",
             real.ipc_export ? "available" : "missing (the driver or runtime lacks it)");
    return &real;
}
#endif

static void load(void)
{
#if GCOLL_HAVE_CUDA
    ops = forced ? forced : load_real();
#else
    ops = forced;
#endif
    if (forced)
        snprintf(why, sizeof(why), "on: the %s table (a test's)", forced->name);
    GCOLL_LOG(GCOLL_LOG_INFO, "CUDA %s", why);
}

gcoll_status_t gcoll__cuda_fail(int err, const char *what)
{
    return gcoll__error(GCOLL_ERR_SYSTEM, "CUDA %s failed: %s", what, gcoll__cuda_get()->error_string(err));
}

gcoll_status_t gcoll__cuda_ready(void *event, int *done)
{
    int e = gcoll__cuda_get()->event_query(event);
    if (e && e != GCOLL_CUDA_NOT_READY)
        return gcoll__cuda_fail(e, "event query");
    *done = !e;
    return GCOLL_SUCCESS;
}

const char *gcoll__cuda_describe(void)
{
    gcoll__cuda_get();
    return why;
}

const gcoll__cuda_ops_t *gcoll__cuda_get(void)
{
    pthread_once(&once, load);
    return ops;
}
