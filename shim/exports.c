/* The generic entry points, the ICD dispatch table and the name table, all
 * expanded from cl_api.def, and the extension lookups that read it. */
#include <dlfcn.h>
#include <string.h>

#include "check.h"
#include "proto/log.h"
#include "config.h"
#include "entry.h"
#include "shim.h"

#define SHIM_MANUAL(ret, name, params, remote)

#define SHIM_FWD(name, params, args, target, err, remote)                       \
    SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL name params             \
    {                                                                   \
        if (!SHIM_LIVE(target))                                         \
            return err;                                                 \
        shim_enter();                                                   \
        void *real_ = R(target);                                        \
        cl_int ret_ = err;                                              \
        if (SHIM_LIKELY(real_ != NULL)) {                               \
            if (VENDOR(real_)->name)                                    \
                ret_ = VENDOR(real_)->name args;                        \
            else                                                        \
                ret_ = CL_INVALID_OPERATION;                            \
        }                                                               \
        shim_leave();                                                   \
        return ret_;                                                    \
    }

#define WAITLIST wl_.n, (const cl_event *)wl_.real
#define EVENT event ? &ev_ : NULL

#define SHIM_ENQ(name, params, args, before, after, remote)                     \
    SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL name params             \
    {                                                                   \
        if (!SHIM_LIVE(command_queue))                                  \
            return CL_INVALID_COMMAND_QUEUE;                            \
        struct shim_xlate wl_;                                          \
        cl_event ev_ = NULL;                                            \
        cl_int ret_;                                                    \
        shim_enter();                                                   \
        ret_ = shim_xlate_events(&wl_, event_wait_list,                 \
                                 num_events_in_wait_list);              \
        if (SHIM_LIKELY(ret_ == CL_SUCCESS)) {                          \
            void *real_ = R(command_queue);                             \
            before;                                                     \
            if (ret_ == CL_SUCCESS)                                     \
                ret_ = VENDOR(real_)->name ? VENDOR(real_)->name args   \
                                           : CL_INVALID_OPERATION;      \
            if (ret_ == CL_SUCCESS) {                                   \
                after;                                                  \
                if (event)                                              \
                    ret_ = shim_event_wrap(                             \
                        event, ev_, (struct shim_queue *)command_queue); \
            }                                                           \
            shim_xlate_done(&wl_);                                      \
        }                                                               \
        shim_leave();                                                   \
        return ret_;                                                    \
    }

#define SHIM_MAP(name, params, args, memobj, before, remote)                    \
    SHIM_EXPORT CL_API_ENTRY void *CL_API_CALL name params              \
    {                                                                   \
        struct shim_xlate wl_;                                          \
        cl_event ev_ = NULL;                                            \
        cl_int ret_ = CL_INVALID_COMMAND_QUEUE;                         \
        void *p_ = NULL;                                                \
        if (!SHIM_LIVE(command_queue))                                  \
            goto out_;                                                  \
        ret_ = CL_INVALID_MEM_OBJECT;                                   \
        if (!SHIM_LIVE(memobj))                                         \
            goto out_;                                                  \
        shim_enter();                                                   \
        ret_ = shim_xlate_events(&wl_, event_wait_list,                 \
                                 num_events_in_wait_list);              \
        if (SHIM_LIKELY(ret_ == CL_SUCCESS)) {                          \
            void *real_ = R(command_queue);                             \
            before;                                                     \
            if (ret_ == CL_SUCCESS)                                     \
                p_ = VENDOR(real_)->name args;                          \
            if (p_) {                                                   \
                shim_mem_mapped(memobj);                                \
                if (event)                                              \
                    ret_ = shim_event_wrap(                             \
                        event, ev_, (struct shim_queue *)command_queue); \
            }                                                           \
            shim_xlate_done(&wl_);                                      \
        }                                                               \
        shim_leave();                                                   \
    out_:                                                               \
        if (errcode_ret)                                                \
            *errcode_ret = ret_;                                        \
        return p_;                                                      \
    }

#define ASKED param_name, param_value_size, param_value, param_value_size_ret

#define SHIM_INFO(name, params, args, type, shadow, err, own, gated, after, \
                  remote)                                                   \
    SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL name params             \
    {                                                                   \
        struct type *o_ = shadow;                                       \
        const struct shim_info_ask ask_ = SHIM_INFO_ASK;                \
        cl_int ret_ = err;                                              \
        int note_ = 0;                                                  \
        (void)ask_;                                                     \
        (void)note_;                                                    \
        if (!o_ || own)                                                 \
            return ret_;                                                \
        shim_enter();                                                   \
        if (!(gated)) {                                                 \
            ret_ = VENDOR(o_->obj.real)->name args;                     \
            after;                                                      \
        }                                                               \
        shim_leave();                                                   \
        return ret_;                                                    \
    }

#include "cl_api.def"

#undef SHIM_FWD
#undef SHIM_ENQ
#undef SHIM_MAP
#undef SHIM_INFO
#undef SHIM_MANUAL

/* The table ICD loaders call through: every shim handle points here. */
#define SHIM_ROW(ret, name, params, remote) .name = name,
const struct _cl_icd_dispatch shim_icd_dispatch = {
#include "cl_api.def"
};

/* The store stamps every new shadow with the table, which it is handed
 * when the library loads, before any call can make a shadow: the table
 * names every entry point, so a store naming it would be tied to every
 * file above it (shim/README.md, "Layers").  libcrane.so is linked with
 * -z initfirst (Makefile), so this runs before any other library's
 * constructor, one of which might call OpenCL. */
__attribute__((constructor)) static void table_to_store(void)
{
    shim_store_set_dispatch(&shim_icd_dispatch);
}

/* Names for clGetExtensionFunctionAddress and for logs. */
struct shim_entry {
    const char *name;
    void *fn;
};

#undef SHIM_ROW
#define SHIM_ROW(ret, name, params, remote) {#name, (void *)name},
static const struct shim_entry shim_entries[] = {
#include "cl_api.def"
    {"clIcdGetPlatformIDsKHR", (void *)clIcdGetPlatformIDsKHR},
};
#undef SHIM_ROW

void *shim_lookup_entry(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof(shim_entries) / sizeof(shim_entries[0]);
         i++)
        if (strcmp(shim_entries[i].name, name) == 0)
            return shim_entries[i].fn;
    return NULL;
}

size_t shim_entry_count(void)
{
    return sizeof(shim_entries) / sizeof(shim_entries[0]);
}

/* Extension lookups return the shim's own functions for every entry point
 * it wraps; vendor extensions would receive shim handles they cannot read,
 * so they are not offered. */
SHIM_EXPORT CL_API_ENTRY void *CL_API_CALL
clGetExtensionFunctionAddress(const char *func_name)
{
    /* CRANE_DISABLE: the loader's handles are the vendors' (disabled.c). */
    if (shim_config_disabled())
        return func_name && strcmp(func_name, "clIcdGetPlatformIDsKHR") == 0
                   ? shim_lookup_entry(func_name)
                   : shim_disabled_extension(func_name);
    shim_init();
    /* The ICD loader's own queries take no handles: let them through. */
    if (func_name && strncmp(func_name, "clGetICDLoaderInfo", 18) == 0)
        return dlsym(RTLD_NEXT, func_name);
    return shim_lookup_entry(func_name);
}

SHIM_EXPORT CL_API_ENTRY void *CL_API_CALL
clGetExtensionFunctionAddressForPlatform(cl_platform_id platform,
                                         const char *func_name)
{
    if (!SHIM_AS(shim_platform, SHIM_PLATFORM, platform))
        return NULL;
    return shim_lookup_entry(func_name);
}
