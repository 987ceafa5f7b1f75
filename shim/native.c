/* The native backend: loads vendor ICD libraries itself and unloads them.
 *
 * The system ICD loader never unloads a vendor, so the shim finds vendors
 * the way the loader does (the .icd files of the folders in
 * CRANE_VENDORS_DIR, default /etc/crane/vendors.d:/etc/OpenCL/vendors, or
 * the paths in CRANE_VENDOR_LIBS) and dlopens them itself.
 *
 * dlclose() alone does not unload an OpenCL implementation: PoCL pulls in
 * LLVM and libstdc++ (whose unique symbols pin them) and keeps worker
 * threads; NVIDIA's library keeps threads and device files open.  A reload
 * in the same link-map namespace then gets the old copy back with its
 * state.  Unload therefore also closes the device files and unmaps the
 * device memory the vendor left behind: that is what keeps a GPU driver
 * from unloading.  With CRANE_VENDOR_NAMESPACE=new every load goes into a
 * fresh namespace (dlmopen LM_ID_NEWLM), which initialises the vendor from
 * scratch (glibc offers 16, so about 15 loads per process); it is opt-in
 * because the vendor then brings its own C library, and PoCL threads that
 * ran program callbacks have corrupted the heap that way.
 *
 * Loads are not free: NVIDIA's libnvidia-opencl.so.1 gives no platform
 * after 127 loads in one process (issue 21).  So an unload may keep the
 * libraries open, every object released (CRANE_VENDOR_UNLOAD): "always"
 * closes them at every re-home off the vendor, "never" keeps them for the
 * process's life (the GPU's driver then cannot be unloaded while the
 * program runs), and "auto" (the default) keeps them unless the switch
 * gives the GPU up (a migration's prepare, a park: shim.gpu_leaves) while
 * the vendor holds a device file or device mapping, or every load is to
 * start afresh (CRANE_VENDOR_NAMESPACE=new).  A kept vendor's next load
 * only asks it for its platforms again.  The test hooks "dlopen" and
 * "platforms" make a load fail at either step (docs/fault.md).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "exit_hold.h"
#include "proto/log.h"
#include "shim.h"

#define MAX_VENDORS 8
#define MAX_FDS 4096

typedef cl_int(CL_API_CALL *icd_get_platforms_fn)(cl_uint, cl_platform_id *,
                                                   cl_uint *);
typedef void *(CL_API_CALL *get_ext_fn)(const char *);

struct vendor {
    char path[PATH_MAX];
    void *handle;
    get_ext_fn get_ext;
};

static struct native {
    struct vendor vendors[MAX_VENDORS];
    unsigned n_vendors;
    cl_platform_id *platforms;
    cl_uint n_platforms;
    unsigned char fd_before[MAX_FDS / 8];  /* fds open before the load */
    unsigned loads;              /* libraries opened (dlopen) so far */
    unsigned reuses;             /* loads that found the vendors kept */
    bool loaded;                 /* load() succeeded, no unload() since */
    bool kept;                   /* unloaded but the libraries kept open:
                                    a load only asks for platforms again */
    bool namespaces_exhausted;
} nat;

/* A vendor library named by an .icd file or CRANE_VENDOR_LIBS, once: the
 * same library in two folders (a diverted .icd and a copy) loads once. */
static void add_vendor(const char *lib)
{
    char *self_path = NULL;
    Dl_info self;

    if (nat.n_vendors == MAX_VENDORS || !*lib)
        return;
    /* Never load the shim as its own vendor (crane-run lists it for the
     * system ICD loader, crane.icd for every program). */
    if (dladdr((void *)add_vendor, &self) && self.dli_fname)
        self_path = realpath(self.dli_fname, NULL);
    char *lib_path = realpath(lib, NULL);
    bool skip = (self_path && lib_path && strcmp(self_path, lib_path) == 0) ||
                strstr(lib, "libcrane");
    for (unsigned v = 0; !skip && v < nat.n_vendors; v++)
        skip = strcmp(nat.vendors[v].path, lib) == 0 ||
               (lib_path && strcmp(nat.vendors[v].path, lib_path) == 0);
    free(self_path);
    free(lib_path);
    if (!skip)
        snprintf(nat.vendors[nat.n_vendors++].path, PATH_MAX, "%s", lib);
}

/* Every DIR/\*.icd in name order: 0, or -errno when DIR cannot be read. */
static int scan_icd_dir(const char *dir)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0)
        return -errno;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(names[i]->d_name);
        if (len > 4 && strcmp(names[i]->d_name + len - 4, ".icd") == 0) {
            char file[PATH_MAX], line[PATH_MAX] = "";
            snprintf(file, sizeof(file), "%s/%s", dir, names[i]->d_name);
            FILE *f = fopen(file, "re");
            if (f) {
                if (fgets(line, sizeof(line), f))
                    line[strcspn(line, "\r\n")] = '\0';
                fclose(f);
                add_vendor(line);
            }
        }
        free(names[i]);
    }
    free(names);
    return 0;
}

static int find_vendors(char *tried, size_t tried_size)
{
    const char *libs = shim_config.vendor_libs;
    const char *dirs = shim_config.vendors_dir;
    int rc = -ENOENT;

    nat.n_vendors = 0;
    if (libs) {
        char *copy = strdup(libs), *save = NULL;
        if (!copy)
            return -ENOMEM;
        for (char *t = strtok_r(copy, ":", &save); t;
             t = strtok_r(NULL, ":", &save))
            add_vendor(t);
        free(copy);
        snprintf(tried, tried_size, "CRANE_VENDOR_LIBS=%s", libs);
        return 0;
    }
    /* CRANE_VENDORS_DIR: ':'-separated folders, each read if it exists
     * (crane's own /etc/crane/vendors.d holds the vendors' .icd files a
     * package took over; docs/packaging.md). */
    char *copy = strdup(dirs), *save = NULL;
    if (!copy)
        return -ENOMEM;
    tried[0] = '\0';
    for (char *d = strtok_r(copy, ":", &save); d;
         d = strtok_r(NULL, ":", &save)) {
        size_t used = strlen(tried);
        snprintf(tried + used, tried_size - used, "%s%s/*.icd",
                 used ? ", " : "", d);
        int r = scan_icd_dir(d);
        if (rc != 0)
            rc = r;  /* one folder read is enough */
    }
    free(copy);
    return rc;
}

static void snapshot_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;

    memset(nat.fd_before, 0, sizeof(nat.fd_before));
    if (!d)
        return;
    while ((e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (fd >= 0 && fd < MAX_FDS)
            nat.fd_before[fd / 8] |= (unsigned char)(1u << (fd % 8));
    }
    closedir(d);
}

static bool is_device_path(const char *p)
{
    static const char *const harmless[] = {"/dev/null", "/dev/zero",
                                           "/dev/urandom", "/dev/random",
                                           "/dev/tty", "/dev/pts/",
                                           "/dev/shm/", "/dev/ptmx"};
    if (strncmp(p, "/dev/", 5) != 0)
        return false;
    for (size_t i = 0; i < sizeof(harmless) / sizeof(harmless[0]); i++)
        if (strncmp(p, harmless[i], strlen(harmless[i])) == 0)
            return false;
    return true;
}

/* Device files the vendor opened and left open, closed if CLOSE; how
 * many.  The program's own fds were either open before the vendor loaded,
 * or are not device nodes. */
static unsigned vendor_device_fds(bool close_them)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int fds[256];
    unsigned n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)) && n < 256) {
        int fd = atoi(e->d_name);
        char link[64], target[PATH_MAX];
        struct stat st;
        if (fd < 0 || fd == dirfd(d) ||
            (fd < MAX_FDS && (nat.fd_before[fd / 8] & (1u << (fd % 8)))))
            continue;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t len = readlink(link, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) &&
            is_device_path(target))
            fds[n++] = fd;
    }
    closedir(d);
    for (unsigned i = 0; close_them && i < n; i++)
        close(fds[i]);
    return n;
}

/* Device memory mapped (by the vendor: the program maps none of its own
 * while it runs on a vendor), unmapped if UNMAP; how many spans. */
static unsigned device_memory(bool unmap)
{
    FILE *f = fopen("/proc/self/maps", "re");
    char line[PATH_MAX + 128];
    struct {
        uintptr_t lo, hi;
    } spans[256];
    unsigned n = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f) && n < 256) {
        uintptr_t lo, hi;
        char path[PATH_MAX] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &lo, &hi, path) >=
                2 &&
            is_device_path(path)) {
            spans[n].lo = lo;
            spans[n].hi = hi;
            n++;
        }
    }
    fclose(f);
    for (unsigned i = 0; unmap && i < n; i++)
        munmap((void *)spans[i].lo, spans[i].hi - spans[i].lo);
    return n;
}

static unsigned count_vendor_mappings(void)
{
    FILE *f = fopen("/proc/self/maps", "re");
    char line[PATH_MAX + 128];
    unsigned n = 0;

    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        for (unsigned v = 0; v < nat.n_vendors; v++) {
            const char *base = strrchr(nat.vendors[v].path, '/');
            base = base ? base + 1 : nat.vendors[v].path;
            if (strstr(line, base))
                n++;
        }
    fclose(f);
    return n;
}

/* VD's library opened, in a fresh namespace where asked (LMID: the one
 * this load opened, shared by its vendors). */
static void open_vendor(struct vendor *vd, Lmid_t *lmid)
{
    bool fresh_namespace = !shim_config.base_namespace;

    if (shim_fault_at("dlopen") < 0) {
        CRN_WARN("native: cannot load OpenCL vendor %s: the test hook",
                 vd->path);
        return;
    }
    /* Before the vendor's own exit handlers (shim_exit_hold_rearm). */
    shim_exit_hold_rearm();
    if (shim_exit_begun()) {
        CRN_INFO("native: %s not loaded: the program is exiting", vd->path);
        return;
    }
    if (fresh_namespace && !nat.namespaces_exhausted) {
        vd->handle = dlmopen(*lmid, vd->path, RTLD_NOW | RTLD_LOCAL);
        if (vd->handle && *lmid == LM_ID_NEWLM)
            dlinfo(vd->handle, RTLD_DI_LMID, lmid);
        if (!vd->handle && *lmid == LM_ID_NEWLM) {
            /* glibc has at most 16 namespaces, and each needs static
             * TLS (crane-run raises both through GLIBC_TUNABLES). */
            CRN_WARN("native: no fresh namespace for %s (%s); from now "
                     "on the vendor is reopened in the main namespace, "
                     "where it may not reinitialise",
                     vd->path, dlerror());
            nat.namespaces_exhausted = true;
        }
    }
    if (!vd->handle && (!fresh_namespace || nat.namespaces_exhausted))
        vd->handle = dlopen(vd->path, RTLD_NOW | RTLD_LOCAL);
    if (!vd->handle) {
        CRN_WARN("native: cannot load OpenCL vendor %s: %s", vd->path,
                 dlerror());
        return;
    }
    nat.loads++;
    vd->get_ext = (get_ext_fn)dlsym(vd->handle,
                                    "clGetExtensionFunctionAddress");
}

static void close_vendor(struct vendor *vd)
{
    if (vd->handle && dlclose(vd->handle) != 0)
        CRN_WARN("native: dlclose(%s): %s", vd->path, dlerror());
    vd->handle = NULL;
    vd->get_ext = NULL;
}

/* VD's platforms appended to the list: 0, -ENOENT when it offers none
 * (it is closed then), -ENOMEM. */
static int vendor_platforms(struct vendor *vd)
{
    icd_get_platforms_fn get_platforms = NULL;
    cl_uint n = 0;

    if (vd->get_ext)
        get_platforms = (icd_get_platforms_fn)vd->get_ext(
            "clIcdGetPlatformIDsKHR");
    if (!get_platforms)
        get_platforms = (icd_get_platforms_fn)dlsym(vd->handle,
                                                    "clIcdGetPlatformIDsKHR");
    if (shim_fault_at("platforms") < 0 || !get_platforms ||
        get_platforms(0, NULL, &n) != CL_SUCCESS || n == 0) {
        CRN_WARN("native: %s is not a usable OpenCL ICD (no platforms, "
                 "load #%u of it)", vd->path, nat.loads);
        close_vendor(vd);
        return -ENOENT;
    }
    cl_platform_id *all = realloc(
        nat.platforms, (nat.n_platforms + n) * sizeof(cl_platform_id));
    if (!all)
        return -ENOMEM;
    nat.platforms = all;
    if (get_platforms(n, nat.platforms + nat.n_platforms, NULL) ==
        CL_SUCCESS)
        nat.n_platforms += n;
    return 0;
}

static int native_load(void)
{
    char tried[PATH_MAX + 64] = "the vendors kept loaded";
    Lmid_t lmid = LM_ID_NEWLM;
    bool kept = nat.kept;
    int rc;

    /* Loaded ahead of a switch back from the proxy (prewarm.c). */
    if (nat.loaded)
        return 0;
    if (!kept) {
        rc = find_vendors(tried, sizeof(tried));
        if (rc < 0) {
            CRN_ERROR("native: cannot list OpenCL vendors in %s: %s", tried,
                      strerror(-rc));
            return rc;
        }
        if (nat.n_vendors == 0) {
            CRN_ERROR("native: no OpenCL vendor library found (tried %s)",
                      tried);
            return -ENOENT;
        }
        snapshot_fds();
    }
    nat.kept = false;
    free(nat.platforms);
    nat.platforms = NULL;
    nat.n_platforms = 0;
    for (unsigned v = 0; v < nat.n_vendors; v++) {
        struct vendor *vd = &nat.vendors[v];
        if (!vd->handle)
            open_vendor(vd, &lmid);
        if (vd->handle && vendor_platforms(vd) == -ENOMEM)
            return -ENOMEM;
    }
    if (nat.n_platforms == 0) {
        CRN_ERROR("native: no OpenCL platform could be loaded (tried %s)",
                  tried);
        return -ENOENT;
    }
    nat.loaded = true;
    if (kept)
        nat.reuses++;
    CRN_INFO("native: %u platform(s) from %u vendor(s), %s (%u load(s) of "
             "a library so far, %u re-home(s) kept it loaded)",
             nat.n_platforms, nat.n_vendors,
             kept ? "kept loaded" : "loaded", nat.loads, nat.reuses);
    return 0;
}

/* Whether this unload keeps the vendors loaded (CRANE_VENDOR_UNLOAD; see
 * the top of this file).  AUTO unloads only where keeping would hold the
 * GPU: the switch gives it up and the vendor holds a device file or a
 * device mapping; or where every load is to start afresh (a new
 * namespace per load). */
static bool keep_loaded(void)
{
    switch (shim_config.vendor_unload) {
    case SHIM_UNLOAD_ALWAYS:
        return false;
    case SHIM_UNLOAD_NEVER:
        return true;
    case SHIM_UNLOAD_AUTO:
        break;
    }
    if (!shim_config.base_namespace)
        return false;
    if (!shim.gpu_leaves)
        return true;
    return vendor_device_fds(false) == 0 && device_memory(false) == 0;
}

static int native_unload(void)
{
    bool keep = keep_loaded();

    nat.loaded = false;
    free(nat.platforms);
    nat.platforms = NULL;
    nat.n_platforms = 0;
    if (keep) {
        nat.kept = true;
        CRN_INFO("native: every object released, the vendor kept loaded "
                 "(%u device fd(s) it holds stay open)",
                 vendor_device_fds(false));
        return 0;
    }
    nat.kept = false;
    for (unsigned v = 0; v < nat.n_vendors; v++)
        close_vendor(&nat.vendors[v]);

    unsigned fds = vendor_device_fds(true);
    unsigned maps = device_memory(true);
    unsigned code = count_vendor_mappings();
    CRN_INFO("native: unloaded; closed %u device fd(s), unmapped %u device "
             "mapping(s); %u code mapping(s) of the old copy remain",
             fds, maps, code);
    return 0;
}

static int native_platforms(cl_platform_id **out, cl_uint *n)
{
    *out = nat.platforms;
    *n = nat.n_platforms;
    return nat.n_platforms ? 0 : -ENOENT;
}

static void *native_extension(cl_platform_id real, const char *name)
{
    if (real && VENDOR(real)->clGetExtensionFunctionAddressForPlatform)
        return VENDOR(real)->clGetExtensionFunctionAddressForPlatform(real,
                                                                      name);
    for (unsigned v = 0; v < nat.n_vendors; v++)
        if (nat.vendors[v].get_ext)
            return nat.vendors[v].get_ext(name);
    return NULL;
}

const struct shim_backend_ops shim_native_ops = {
    .name = "native",
    .side = SHIM_SIDE_VENDOR,
    .load = native_load,
    .unload = native_unload,
    .platforms = native_platforms,
    .extension = native_extension,
    .prewarm = shim_prewarm_native,
};
SHIM_BACKEND_REGISTER(shim_native_ops);
