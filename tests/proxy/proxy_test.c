/* Integration tests of crane-proxy on PoCL: `proxy_test NAME` runs one (the
 * cases in proxy_test/, by concern). */
#include "proxy_test/cases.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct {
    const char *name;
    int (*fn)(void);
} tests[] = {
    {"failed-event", test_failed_event},
    {"basic", test_basic},
    {"small-read", test_small_read},
    {"handshake", test_handshake},
    {"auth", test_auth},
    {"info-order", test_info_and_order},
    {"concurrent", test_concurrent},
    {"isolation", test_isolation},
    {"ids", test_ids},
    {"malformed", test_malformed},
    {"killed", test_killed},
    {"quota", test_quota},
    {"grace", test_grace},
    {"events", test_events},
    {"stop", test_stop},
    {"tcp", test_tcp},
    {"lanes", test_lanes},
    {"lockout", test_lockout},
    {"handshake-timeout", test_handshake_timeout},
    {"idle-timeout", test_idle_timeout},
    {"peer-connections", test_peer_connections},
    {"max-objects", test_max_objects},
    {"crash-isolation", test_crash_isolation},
    {"single-process", test_single_process},
    {"spares", test_spares},
    {"build-options", test_build_options},
};

int main(int argc, char **argv)
{
    size_t n = sizeof(tests) / sizeof(tests[0]);

    signal(SIGPIPE, SIG_IGN);
    srandom((unsigned)getpid());
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            puts(tests[i].name);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: proxy_test --list | NAME\n");
        return 2;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(argv[1], tests[i].name) == 0)
            return tests[i].fn();
    fprintf(stderr, "proxy_test: no test named '%s'\n", argv[1]);
    return 2;
}
