/* The remote connection's security, for its main stream and its lanes
 * alike: the TLS wrap of a tcp: socket and the answer to the proxy's
 * auth challenge (remote_conn_int.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "proto/log.h"
#include "remote_conn_int.h"

#include "proto/auth.h"
#include "proto/tls.h"

/* A tcp: proxy is spoken to through TLS (proto/tls.h): the handshake on
 * FD, then *OUT is the session on FD, whose records the thread using the
 * bytes makes and reads itself (proto/stream.h: no relay, so each lane's
 * crypto runs on the lane's own threads).  The credentials are made once
 * and kept (each session holds a reference).  Returns FD (OUT in clear
 * when there are no credentials), or a negative errno (FD closed). */
int shim_conn_tls_wrap(int fd, const struct crn_endpoint *ep,
                       const char *text, struct crn_stream *out)
{
    struct crn_tls *t;
    static struct crn_tls_config *cfg;
    static bool made;
    enum crn_tls_mode mode;
    char why[512] = "";
    int rc;

    if (!made) {
        if (crn_tls_mode_parse(shim_config.tls, &mode) < 0) {
            CRN_ERROR("remote: CRANE_TLS=%s: auto, x509, psk or none",
                      shim_config.tls);
            close(fd);
            return -EINVAL;
        }
        rc = crn_tls_config_new(mode, CRN_TLS_CLIENT, shim_config.pki_dir,
                                shim_config.auth_key, &cfg, why,
                                sizeof(why));
        if (rc < 0) {
            CRN_ERROR("remote: TLS to %s: %s", text, why);
            close(fd);
            return rc;
        }
        made = true;
        if (!cfg)
            CRN_WARN("remote: %s in clear: no TLS credentials (CRANE_TLS="
                     "%s, no PKI in %s and no CRANE_AUTH_KEY)", text,
                     shim_config.tls,
                     shim_config.pki_dir ? shim_config.pki_dir
                                         : CRN_TLS_PKI_DEFAULT);
    }
    out->fd = fd;
    out->tls = NULL;
    if (!cfg)
        return fd;
    rc = crn_tls_client(cfg, fd, ep->host,
                        (unsigned)shim_config.proxy_timeout_ms, &t, why,
                        sizeof(why));
    if (rc < 0) {
        CRN_ERROR("remote: %s: %s", text, why);
        close(fd);
        out->fd = -1;
        return rc;
    }
    out->tls = t;
    CRN_INFO("remote: TLS (%s) to %s",
             crn_tls_mode_name(crn_tls_config_mode(cfg)), text);
    return fd;
}

int shim_conn_auth_mac(const Crane__Challenge *ch, uint8_t mac[32])
{
    uint8_t *key = NULL;
    size_t key_len = 0;
    int rc;

    if (!shim_config.auth_key) {
        CRN_ERROR("remote: the proxy wants a key; set CRANE_AUTH_KEY=FILE "
                  "(or have crane-hostd send it with the prepare)");
        return -EACCES;
    }
    if ((rc = crn_auth_key_load(shim_config.auth_key, &key, &key_len)) < 0) {
        CRN_ERROR("remote: cannot read key file %s: %s",
                  shim_config.auth_key, strerror(-rc));
        return rc;
    }
    rc = crn_hmac_sha256(key, key_len, ch->nonce.data, ch->nonce.len, mac);
    free(key);
    return rc;
}
