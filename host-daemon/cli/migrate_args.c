/* crane-migrate's command line: options, virsh's spellings, --xml, usage. */
#include "migrate_cli.h"

#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/hostd.pb-c.h"
#include "proto/log.h"
#include "proto/report.h"
#include "proto/version.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "Usage: crane-migrate [OPTIONS] DOMAIN DESTURI [MIGRATEURI]\n"
    "\n"
    "Migrates DOMAIN, a running VM with a passthrough GPU, to DESTURI (a\n"
    "libvirt URI, as for virsh migrate) through the local crane-hostd: it\n"
    "takes the VM's OpenCL programs off the GPU, detaches the GPU, has\n"
    "libvirt migrate the VM, attaches a GPU at the destination and brings\n"
    "the programs back.  Each phase is printed as it happens; at the end\n"
    "every step, the programs' stoppage and the result.  MIGRATEURI is where\n"
    "the migration stream goes (default: libvirt's choice).\n"
    "\n"
    "options of virsh migrate (same meanings):\n"
    "  --live              live migration: programs go on through a proxy\n"
    "                      while the VM moves.  Without it the migration is\n"
    "                      stop-and-copy, as in virsh: the VM is paused while\n"
    "                      it moves and its programs are parked (their\n"
    "                      OpenCL calls wait) until it runs at the\n"
    "                      destination\n"
    "  --offline           stop-and-copy, said explicitly (the default).\n"
    "                      Unlike virsh's --offline the VM must be running:\n"
    "                      crane-migrate never moves a bare definition\n"
    "  --p2p               peer-to-peer migration (the source libvirtd talks\n"
    "                      to the destination's)\n"
    "  --persistent        persist the VM on the destination\n"
    "  --undefinesource    undefine the VM on the source\n"
    "  --timeout S         suspend the VM if live migration takes over S\n"
    "                      seconds (needs --live)\n"
    "  --verbose           print the migration's progress too, as virsh\n"
    "                      (Migration: [42.50 %] on stderr)\n"
    "  --xml FILE          the domain's XML for the destination, without its\n"
    "                      GPU (at most 64 KiB)\n"
    "  --domain NAME, --desturi URI, --migrateuri URI\n"
    "                      the operands named, in any place\n"
    "  --tls               encrypt the migration with libvirt's TLS and its\n"
    "                      PKI (/etc/pki/qemu); crane-hostd's migrate_tls\n"
    "                      may turn it on for every migration\n"
    "  --tls-destination HOST  the host name the destination's\n"
    "                      certificate carries\n"
    "  --copy-storage-all  copy the disks too (non-shared storage); without\n"
    "                      --copy-storage-all or --copy-storage-inc the\n"
    "                      disks must be on storage both hosts share\n"
    "  --copy-storage-inc  copy the disks' top images only (shared backing\n"
    "                      files)\n"
    "  --copy-storage-synchronous-writes  writes wait for both copies\n"
    "  --migrate-disks LIST  copy only these disk targets (vda,vdb)\n"
    "  --disks-port PORT, --disks-uri URI  where the disk copy goes\n"
    "  --auto-converge     slow the vCPUs down until the copy converges\n"
    "  --bandwidth MIB     limit the copy (memory and disks) to MIB MiB/s\n"
    "  --abort-on-error    cancel on a disk I/O error during the copy\n"
    "  --parallel          several connections for the memory\n"
    "  --parallel-connections N  how many (1 to 255; needs --parallel)\n"
    "  --zerocopy          send memory pages without copies (needs\n"
    "                      --parallel)\n"
    "  --compressed        compress repeatedly sent pages\n"
    "  --listen-address A  the address the destination listens on\n"
    "  --dname NAME        the VM's name at the destination\n"
    "  --tunnelled         the data through the libvirtd connection\n"
    "                      (needs --p2p)\n"
    "  --unsafe, --change-protection, --timeout-suspend  as in virsh\n"
    "  --postcopy and its kin, --suspend, --direct are refused with the\n"
    "  reason (post-copy: a failure after the switch loses the VM, and\n"
    "  neither a cancel nor a rollback can bring it back)\n"
    "\n"
    "crane's options:\n"
    "  --proxy ENDPOINT    the proxy programs use while remote (unix:PATH or\n"
    "                      tcp:HOST:PORT; default: the guest's own)\n"
    "  --peer ENDPOINT     the destination's crane-hostd, tcp:HOST:PORT\n"
    "                      (default: DESTURI's host, port 7410)\n"
    "  --connect ENDPOINT  the local crane-hostd (default $" MIG_CONNECT_ENV
    ",\n"
    "                      else " MIG_DEFAULT_CONNECT ")\n"
    "  --wait S            give up after S seconds without a message from\n"
    "                      crane-hostd (default 0: wait as long as the\n"
    "                      migration takes; a lost connection is always\n"
    "                      noticed)\n"
    "  --help              this text\n"
    "  --version           print \"crane-migrate VERSION\" and exit\n"
    "\n"
    "Ctrl-C (or SIGTERM) cancels the migration in whatever phase it is,\n"
    "with the full rollback: the VM runs on at the source, its GPU back,\n"
    "its programs back in passthrough (libvirt's job is aborted while it\n"
    "copies); the report follows and the exit status is 1.  A second\n"
    "Ctrl-C only stops watching (130, 143): the rollback goes on in\n"
    "crane-hostd.  `crane-hostctl cancel DOMAIN` cancels the same way.\n"
    "After the VM left the source a cancel is refused: it resumes there.\n"
    "\n"
    "--verbose prints libvirt's progress exactly as virsh does\n"
    "(\"\\rMigration: [42.50 %]\" on stderr); the end prints the job's\n"
    "figures as virsh domjobinfo does.\n"
    "\n"
    "Exit status:\n"
    "  0  moved; its programs are back on a GPU\n"
    "  1  failed and rolled back: the VM runs on at the source as before\n"
    "     (or nothing started: the --xml file cannot be read, or is too\n"
    "     big)\n"
    "  2  bad usage (an unknown option, a missing or malformed value)\n"
    "  3  no answer from crane-hostd (cannot connect, connection lost,\n"
    "     --wait expired, malformed reply): the migration may be running\n"
    "  4  moved, but the destination had no usable GPU: its programs run\n"
    "     remote until crane-hostd there attaches one (it does by itself)\n"
    "  5  failed and not fully restored: operator attention needed\n"
    "  6  moved, but programs died of a fault during it (steps \"lost\",\n"
    "     each with its reason; the result's error names them)\n"
    "  130, 143  interrupted twice by SIGINT, SIGTERM: stopped watching;\n"
    "     the cancel's rollback goes on in crane-hostd\n";


/* --- the command line -------------------------------------------------- */

/* A whole number of seconds, 1 .. UINT32_MAX. */
static int parse_timeout(const char *s, uint32_t *out)
{
    unsigned long long v;
    char *end;

    if (*s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end || v == 0 || v > UINT32_MAX)
        return -EINVAL;
    *out = (uint32_t)v;
    return 0;
}

/* Seconds, 0 .. MIG_MAX_WAIT, fractions allowed. */
static int parse_wait(const char *s, double *out)
{
    char *end;
    double v;

    if ((*s < '0' || *s > '9') && *s != '.')
        return -EINVAL;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || end == s || !(v >= 0 && v <= MIG_MAX_WAIT))
        return -EINVAL;
    *out = v;
    return 0;
}

/*
 * Reads --xml's FILE: text of 1 byte .. MIG_MAX_REQUEST (crane-hostd would
 * refuse a longer request anyway) without NUL bytes, into *OUT (freed by
 * the caller).  Returns 0, or -EINVAL after one line on stderr.
 */
static int read_xml(const char *path, char **out)
{
    size_t len = 0, cap = MIG_MAX_REQUEST + 1;
    const char *why = NULL;
    char *buf = NULL;
    ssize_t n;
    int fd, err = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        goto out;
    }
    /* One byte more than allowed tells a file that is too long. */
    if (!(buf = malloc(cap + 1))) {
        err = ENOMEM;
        goto out;
    }
    while (len < cap) {
        n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = errno;
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    if (len == 0)
        why = "is empty";
    else if (len > MIG_MAX_REQUEST)
        why = "is over 64 KiB";
    else if (memchr(buf, '\0', len))
        why = "holds NUL bytes: not XML text";
out:
    if (fd >= 0)
        close(fd);
    if (err)
        CRN_ERROR("cannot read --xml file '%s': %s", path,
                strerror(err));
    else if (why)
        CRN_ERROR("--xml file '%s' %s", path, why);
    if (err || why) {
        free(buf);
        return -EINVAL;
    }
    *out = buf;
    return 0;
}

/*
 * DOMAIN, DESTURI and MIGRATEURI, named (--domain, --desturi,
 * --migrateuri) or in this order as operands, as virsh takes them: the
 * operands fill what was not named.  -1 to go on, else the exit status.
 */
static int operands(int argc, char **argv, struct mig_opts *o)
{
    const char **slot[3] = {&o->named_domain, &o->named_desturi,
                            &o->named_migrateuri};
    Crane__Hostd__MigrateRequest *r = &o->req;
    int i = optind;

    for (size_t s = 0; s < 3 && i < argc; s++)
        if (!*slot[s])
            *slot[s] = argv[i++];
    if (i < argc)
        return crn_usage_error("unexpected argument '%s'", argv[i]);
    if (!o->named_domain || !o->named_desturi)
        return crn_usage_error("%s", !o->named_domain
                                         ? "DOMAIN and DESTURI are needed"
                                         : "DESTURI is needed");
    if (!*o->named_domain || !*o->named_desturi)
        return crn_usage_error("%s", "DOMAIN and DESTURI must not be empty");
    r->domain = (char *)o->named_domain;
    r->dest_uri = (char *)o->named_desturi;
    if (o->named_migrateuri)
        r->migrate_uri = (char *)o->named_migrateuri;
    return -1;
}

void mig_opts_free(struct mig_opts *o)
{
    free(o->xml);
    for (size_t i = 0; i < o->vopts.n_migrate_disks; i++)
        free(o->disks[i]);
}

/* Fills O from the command line.  Returns -1 to go on, else the exit
 * status (0 after --help, 2 for bad usage, 1 for an unusable --xml). */
enum { O_LIVE = 256, O_OFFLINE, O_P2P, O_PERSISTENT, O_UNDEFINE,
       O_TIMEOUT, O_VERBOSE, O_XML, O_PROXY, O_PEER, O_CONNECT, O_WAIT,
       O_HELP, O_VERSION };

/* An option getopt could not take: its message, exit status 2. */
static int bad_option(int opt, char **argv)
{
    if (opt == ':')
        return crn_usage_error("option '%s' needs a value", argv[optind - 1]);
    if (optopt > 0 && optopt < O_LIVE) {
        char s[3] = {'-', (char)optopt, '\0'};
        return crn_usage_error("unknown option '%s'", s);
    }
    if (optopt >= O_LIVE)
        return crn_usage_error("option '%s' takes no value",
                               argv[optind - 1]);
    return crn_usage_error("unknown option '%s'", argv[optind - 1]);
}

/* One of crane-migrate's own options (OPT, its VALUE) into O.  -1 to go
 * on, else the exit status. */
static int own_option(int opt, char *value, struct mig_opts *o,
                      const char **xml_path, char **argv)
{
    Crane__Hostd__MigrateRequest *r = &o->req;
    struct crn_endpoint ep;

    switch (opt) {
    case O_LIVE: r->live = true; break;
    case O_OFFLINE: o->offline = true; break;
    case O_P2P: r->p2p = true; break;
    case O_PERSISTENT: r->persistent = true; break;
    case O_UNDEFINE: r->undefine_source = true; break;
    case O_VERBOSE: r->verbose = true; break;
    case O_TIMEOUT:
        if (parse_timeout(value, &r->timeout_s) < 0)
            return crn_usage_error(
                "bad --timeout '%s' (whole seconds, 1 or more)", value);
        break;
    case O_XML: *xml_path = value; break;
    case O_PROXY:
        /* Port 0 is for listeners only: programs connect here. */
        if (crn_endpoint_parse(value, &ep) < 0 ||
            (ep.kind == CRN_EP_TCP && atoi(ep.port) == 0))
            return crn_usage_error("bad --proxy '%s' (unix:PATH or "
                                   "tcp:HOST:PORT)",
                                   value);
        r->proxy = value;
        break;
    case O_PEER:
        if (crn_endpoint_parse(value, &ep) < 0 || ep.kind != CRN_EP_TCP ||
            atoi(ep.port) == 0)
            return crn_usage_error("bad --peer '%s' (tcp:HOST:PORT)", value);
        r->peer = value;
        break;
    case O_CONNECT:
        o->connect = value;
        o->connect_from = "--connect";
        break;
    case O_WAIT:
        if (parse_wait(value, &o->wait) < 0)
            return crn_usage_error("bad --wait '%s' (seconds, 0 for no "
                                   "limit)",
                                   value);
        break;
    case O_HELP: fputs(usage, stdout); return MIG_EXIT_OK;
    case O_VERSION:
        crn_print_version("crane-migrate");
        return MIG_EXIT_OK;
    default:
        return bad_option(opt, argv);
    }
    return -1;
}

/* What the options say together, and the XML file read.  -1 or the exit
 * status. */
static int check_opts(struct mig_opts *o, const char *xml_path)
{
    Crane__Hostd__MigrateRequest *r = &o->req;
    struct crn_endpoint ep;
    int rc;

    if ((rc = mig_virsh_check(o)) >= 0)
        return rc;
    if (r->live && o->offline)
        return crn_usage_error("%s", "--live and --offline exclude each other");
    if (r->timeout_s && !r->live)
        return crn_usage_error("%s", "--timeout needs --live");
    if (crn_endpoint_parse(o->connect, &ep) < 0) {
        CRN_ERROR("bad endpoint '%s' for crane-hostd "
                        "(from %s): unix:PATH or tcp:HOST:PORT (see "
                        "--help)",
                o->connect, o->connect_from);
        return MIG_EXIT_USAGE;
    }
    if (xml_path) {
        if (read_xml(xml_path, &o->xml) < 0)
            return MIG_EXIT_FAILURE;
        r->dest_xml = o->xml;
    }
    return -1;
}

int mig_parse_args(int argc, char **argv, struct mig_opts *o)
{
    static const struct option opts[] = {
        {"live", no_argument, NULL, O_LIVE},
        {"offline", no_argument, NULL, O_OFFLINE},
        {"p2p", no_argument, NULL, O_P2P},
        {"persistent", no_argument, NULL, O_PERSISTENT},
        {"undefinesource", no_argument, NULL, O_UNDEFINE},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"verbose", no_argument, NULL, O_VERBOSE},
        {"xml", required_argument, NULL, O_XML},
        {"proxy", required_argument, NULL, O_PROXY},
        {"peer", required_argument, NULL, O_PEER},
        {"connect", required_argument, NULL, O_CONNECT},
        {"wait", required_argument, NULL, O_WAIT},
        {"help", no_argument, NULL, O_HELP},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    struct option all[sizeof(opts) / sizeof(opts[0]) + 40];
    const char *xml_path = NULL;
    size_t nall = 0;
    int opt, rc;

    for (size_t i = 0; opts[i].name; i++)
        all[nall++] = opts[i];
    for (size_t i = 0; mig_virsh_options[i].name; i++)
        all[nall++] = mig_virsh_options[i];
    all[nall] = opts[sizeof(opts) / sizeof(opts[0]) - 1];
    crane__hostd__migrate_options__init(&o->vopts);

    o->connect = getenv(MIG_CONNECT_ENV);
    o->connect_from = "$" MIG_CONNECT_ENV;
    if (!o->connect || !*o->connect) {
        o->connect = MIG_DEFAULT_CONNECT;
        o->connect_from = "the default";
    }
    opterr = 0;
    /* ":" reports a missing value apart; options may follow DOMAIN, as in
     * virsh, and "--" ends them. */
    while ((opt = getopt_long(argc, argv, ":", all, NULL)) != -1) {
        if (opt >= MIG_VIRSH_BASE)
            rc = mig_virsh_option(opt, optarg, o);
        else
            rc = own_option(opt, optarg, o, &xml_path, argv);
        if (rc >= 0)
            return rc;
    }
    if ((rc = operands(argc, argv, o)) >= 0)
        return rc;
    return check_opts(o, xml_path);
}

