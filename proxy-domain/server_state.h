/* crane-proxy's server as its connections see it: options, bounds, the
 * role's hooks, the state, the tenants kept across connects. */
#ifndef PX_SERVER_STATE_H
#define PX_SERVER_STATE_H

#include "devices.h"
#include "tenant.h"

#include "proto/endpoint.h"
#include "proto/listen.h"
#include "proto/tls.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct px_conn;
struct px_preauth;
struct px_server;

/* Bounds on what one peer can hold (main.c sets the defaults, --help and
 * README.md say them); 0 means no bound. */
struct px_limits {
    uint64_t handshake_ms;       /* Hello to Welcome */
    uint64_t idle_ms;            /* a ready connection that sends nothing */
    uint64_t max_unauth;         /* connections in their handshake */
    uint64_t max_unauth_peer;    /* of them, from one peer */
    uint64_t max_peer_conns;     /* ready connections of one peer */
    uint64_t max_objects;        /* objects of one tenant */
    uint64_t max_queued;         /* bytes queued per connection, each way */
    uint64_t release_ms;         /* a tenant's release, past which the
                                    supervisor kills its worker */
    uint64_t max_call_ms;        /* one call of a tenant (not a build) */
};

/* One process serving every tenant, a supervisor handing each tenant to
 * a worker process of its own (supervisor.c), or such a worker (worker.c). */
enum px_role {
    PX_ROLE_SINGLE,
    PX_ROLE_SUPERVISOR,
    PX_ROLE_WORKER,
};

/* What a role does where the connection side reaches it: supervisor.c's
 * and worker.c's tables, set by px_super_init and px_worker_init (NULL in
 * one process).  Through it the connection files call up to the role
 * without naming it: the lifecycle runs one way down (README.md,
 * "Layers").  A NULL hook does nothing. */
struct px_role_ops {
    /* Supervisor: C finished its handshake (PX_CONN_HANDOFF): its stream
     * and what it read past the handshake go to a worker. */
    void (*handoff)(struct px_conn *c);
    /* Supervisor: workers that hold a tenant of PEER. */
    size_t (*peer_tenants)(struct px_server *srv, const char *peer);
    /* SIGUSR1 (supervisor: the workers' sum) and the stop. */
    void (*stats)(struct px_server *srv);
    void (*stop)(struct px_server *srv);
    /* Worker: tenant T lives here (made, not resumed), is being released,
     * or must end (WHY; killed if still there AFTER_MS from now). */
    void (*tenant)(struct px_server *srv, struct px_tenant *t);
    void (*gone)(struct px_server *srv, struct px_tenant *t);
    void (*ending)(struct px_server *srv, const char *why,
                   uint64_t after_ms);
    /* Worker: C carries its tenant's calls now, or closes (WHY). */
    void (*watch)(struct px_conn *c);
    void (*unwatch)(struct px_conn *c, const char *why);
    /* Worker: a connection or tenant went; stops once none is left. */
    void (*idle)(struct px_server *srv);
};

/* Calls SRV's role's HOOK with the arguments that follow, if it has one. */
#define PX_ROLE_CALL(srv, hook, ...)                                         \
    do {                                                                     \
        const struct px_role_ops *ops_ = (srv)->role_ops;                    \
        if (ops_ && ops_->hook)                                              \
            ops_->hook(__VA_ARGS__);                                         \
    } while (0)

/* What main() decides. */
struct px_options {
    enum px_role role;
    char **argv;                 /* main's, for starting workers */
    const char *listen;          /* endpoint text */
    const char *device;          /* --device spec */
    const char *auth_key;        /* key file, or NULL */
    enum crn_tls_mode tls_mode;  /* --tls: a tcp: endpoint's TLS */
    const char *pki_dir;         /* --pki-dir, NULL: /etc/pki */
    uint64_t quota;              /* bytes per tenant, 0: none */
    uint64_t grace_ms;           /* 0: release at disconnect */
    struct px_limits limits;
    bool no_shm;                 /* --no-shm: bulk always on the stream */
    const char *shm_dir;         /* --shm-dir: areas clients name */
    const char *shm_pci;         /* --shm-pci: PCI devices' folder whose
                                    ivshmem BARs hold clients' areas */
    unsigned spares;             /* --spares: idle workers kept ready */
    unsigned max_lanes;          /* --max-lanes: extra bulk streams per
                                    TCP connection (0: none) */
};

/* Everything lives on one loop thread; only px_conn's queues and the
 * tenants' locked fields are touched by other threads. */
struct px_server {
    uv_loop_t *loop;
    struct crn_endpoint ep;
    union crn_listener lis;      /* proto/listen.h */
    bool listening;
    bool created_socket;         /* unlink ep.path at the end */
    uv_signal_t sig_int, sig_term, sig_usr1;
    const struct px_devices *devs;
    struct crn_tls_config *tls;  /* a tcp: endpoint's TLS, NULL: none */
    uint8_t *key;                /* --auth-key bytes, or NULL */
    size_t key_len;
    uint64_t quota;
    uint64_t grace_ms;
    struct px_limits limits;
    bool no_shm;
    const char *shm_dir;
    const char *shm_pci;
    unsigned spares;             /* idle workers kept ready (supervisor) */
    unsigned max_lanes;          /* lanes per TCP connection (lanes.c) */
    bool inline_waits;           /* small device waits on the loop thread */
    /* After input or a reply the loop polls without sleeping for spin_ns
     * (CRANE_PROXY_SPIN_US): the client's next call is then seen without
     * a wake-up.  The idle handle is active while it spins. */
    uv_idle_t spin;
    uint64_t spin_ns, spin_until;
    enum px_role role;
    struct px_super *super;      /* PX_ROLE_SUPERVISOR: its workers */
    struct px_worker *worker;    /* PX_ROLE_WORKER: its supervisor */
    const struct px_role_ops *role_ops;
    /* A connection waiting to resume a tenant gets it once the tenant's
     * old connection let go (handshake.c's px_handshake_welcome, set by
     * px_server_init: the server state calls no connection file). */
    void (*welcome)(struct px_conn *c, struct px_tenant *t, bool resumed);
    /* Connections in their handshake, TLS's included (preauth.c). */
    struct px_preauth *preauth;
    size_t preauth_count;
    uint64_t preauth_order;
    struct px_conn *conns;       /* every open connection */
    struct px_tenant *tenants;   /* every tenant not being torn down */
    uint64_t next_tenant;
    uint64_t next_conn;
    size_t tearing_down;         /* tenants whose teardown is running */
    bool stopping;
};

/* Something came in or went out: the loop spins a while (spin_ns). */
void px_server_active(struct px_server *srv);

/* Tenants (loop thread). */
struct px_tenant *px_server_new_tenant(struct px_server *srv);
/* The live tenant whose token is TOKEN (LEN bytes), or NULL. */
struct px_tenant *px_server_find_tenant(struct px_server *srv,
                                        const uint8_t *token, size_t len);
/* A connection let go of T: hand it to a resuming connection, keep it for
 * --grace, or tear it down. */
void px_server_tenant_released(struct px_server *srv, struct px_tenant *t);

/* At the stop: tenants kept for --grace are torn down now; those of
 * connections whose work still runs go when it ends. */
void px_server_release_detached(struct px_server *srv);

#endif /* PX_SERVER_STATE_H */
