/* A migration test program that reaches OpenCL only through dlopen: it
 * loads cl_worker built as a shared object (build/tests/guest/
 * cl_worker.so, its main renamed cl_worker_main) with RTLD_LOCAL, so
 * libOpenCL comes in with it and never joins the program's global scope,
 * as with plugins and Python extensions.
 *
 *   dlopen_worker CL_WORKER_SO [cl_worker's arguments...]
 *
 * Exit status and output: cl_worker's; 2 when the object cannot be loaded.
 */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*main_fn)(int, char **);

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: dlopen_worker CL_WORKER_SO [ARGS...]\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL dlopen_worker: %s\n", dlerror());
        return 2;
    }
    main_fn worker_main = (main_fn)dlsym(h, "cl_worker_main");
    if (!worker_main) {
        fprintf(stderr, "FAIL dlopen_worker: no cl_worker_main in %s\n",
                argv[1]);
        return 2;
    }
    /* cl_worker sees its own name first, then its arguments. */
    argv[1] = argv[0];
    return worker_main(argc - 1, argv + 1);
}
