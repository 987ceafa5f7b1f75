/* Expands every row of cl_api.def into RC_WHAT##REMOTE, ##LOCAL or
 * ##REFUSED(ret, name, params, reason): define RC_WHAT and those three,
 * then include this file (no include guard: it is meant to be included
 * once per expansion). */
#define SHIM_ROW(ret, name, params, remote) \
    RC_ROW(RC_WHAT, ret, name, params, remote)
#include "cl_api.def"
#undef SHIM_ROW
