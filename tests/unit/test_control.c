/* Unit tests of the control protocol's table (proto/control_ops.def). */
#include "runner.h"

#include "proto/control_ops.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The oneof cases of DESC that are not operations (the host's handshake,
 * a shim's Start): no row names them. */
static int not_an_op(const ProtobufCMessageDescriptor *desc, const char *f)
{
    if (desc == &crane__control__host_message__descriptor)
        return strcmp(f, "hello") == 0 || strcmp(f, "auth") == 0;
    return strcmp(f, "start") == 0;
}

/* Every oneof case of DESC is a row's (named as the field, HOST's or
 * SHIM's case as the row says) or no operation; returns how many were. */
static int oneof_rows(const ProtobufCMessageDescriptor *desc, int host)
{
    int n = 0;

    for (unsigned i = 0; i < desc->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[i];
        if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
            continue;
        if (not_an_op(desc, f->name)) {
            if (host)
                ASSERT_EQ(crn_control_op_of_host((int)f->id),
                          CRANE__CONTROL__OP__OP_NONE);
            continue;
        }
        const struct crn_control_op *row = NULL;
        for (size_t op = 0; op < 64 && !row; op++) {
            const struct crn_control_op *r = crn_control_op((int)op);
            if (r && strcmp(r->name, f->name) == 0)
                row = r;
        }
        if (!row)
            fprintf(stderr, "no row for %s.%s\n", desc->name, f->name);
        ASSERT(row != NULL);
        ASSERT_EQ((int)(host ? (int)row->host_case : (int)row->shim_case),
                  (int)f->id);
        n++;
    }
    return n;
}

/* One row per value of Op, named as the schema names it ("OP_PREPARE":
 * "prepare"), none more; every case of HostMessage's and DaemonMessage's
 * oneofs a row's or named as no operation; a row's hops are real cases. */
TEST(control_ops_rows)
{
    const ProtobufCEnumDescriptor *e = &crane__control__op__descriptor;
    char want[64];

    for (unsigned i = 0; i < e->n_values; i++) {
        const ProtobufCEnumValue *v = &e->values[i];
        size_t k = 0;
        for (const char *c = v->name + 3; *c && k + 1 < sizeof(want); c++)
            want[k++] = (char)tolower((unsigned char)*c);
        want[k] = '\0';
        ASSERT(strncmp(v->name, "OP_", 3) == 0);
        ASSERT(crn_control_op(v->value) != NULL);
        ASSERT_STR_EQ(crn_control_op_name(v->value), want);
    }
    ASSERT_EQ(crn_control_op_count(), (size_t)e->n_values);
    ASSERT(oneof_rows(&crane__control__host_message__descriptor, 1) >= 5);
    ASSERT(oneof_rows(&crane__control__daemon_message__descriptor, 0) >= 5);
    /* Rows of one hop only have no case on the other. */
    ASSERT_EQ(crn_control_op(CRANE__CONTROL__OP__OP_QUERY)->host_case,
              CRANE__CONTROL__HOST_MESSAGE__MSG__NOT_SET);
    ASSERT_EQ(crn_control_op(CRANE__CONTROL__OP__OP_STATUS)->shim_case,
              CRANE__CONTROL__DAEMON_MESSAGE__MSG__NOT_SET);
    /* cranectl's words: the host hop's rows only. */
    ASSERT_EQ(crn_control_op_by_name("prepare"),
              CRANE__CONTROL__OP__OP_PREPARE);
    ASSERT_EQ(crn_control_op_by_name("query"), CRANE__CONTROL__OP__OP_NONE);
    ASSERT_EQ(crn_control_op_by_name("none"), CRANE__CONTROL__OP__OP_NONE);
    ASSERT_EQ(crn_control_op_by_name(NULL), CRANE__CONTROL__OP__OP_NONE);
    ASSERT_STR_EQ(crn_control_op_name(1000), "?");
    ASSERT_STR_EQ(crn_control_op_name(-1), "?");
}
