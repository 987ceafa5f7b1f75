/* Expands every row of cl_api.def into RC_WHAT##REMOTE, ##LOCAL or
 * ##REFUSED(ret, name, params, reason): define RC_WHAT and those three,
 * then include this file (no include guard: it is meant to be included
 * once per expansion). */
#define SHIM_FWD(name, params, args, target, err, remote) \
    RC_ROW(RC_WHAT, cl_int, name, params, remote)
#define SHIM_ENQ(name, params, args, before, after, remote) \
    RC_ROW(RC_WHAT, cl_int, name, params, remote)
#define SHIM_MAP(name, params, args, memobj, before, remote) \
    RC_ROW(RC_WHAT, void *, name, params, remote)
#define SHIM_MANUAL(ret, name, params, remote) \
    RC_ROW(RC_WHAT, ret, name, params, remote)
#include "cl_api.def"
#undef SHIM_FWD
#undef SHIM_ENQ
#undef SHIM_MAP
#undef SHIM_MANUAL
