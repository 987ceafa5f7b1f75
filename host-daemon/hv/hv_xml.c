/* What crane-hostd reads from libvirt's domain and device XML (libxml2). */
#include "hv_xml.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xpath.h>

/*
 * The XML comes from libvirt, but a domain's XML also carries what its
 * owner wrote, so it is read defensively: bounded in size (and by
 * libxml2's default depth and text limits, no XML_PARSE_HUGE), no network,
 * no DTD (so no entities to expand), every value length-checked before it
 * is copied, and names given by the caller compared in C rather than
 * pasted into an XPath expression.
 */

/* At most this many nodes of one selection are looked at. */
#define NODES_MAX 4096

struct hv_xml {
    xmlDocPtr doc;
};

struct pci_addr {
    unsigned long domain, bus, slot, function;
};

static pthread_once_t libxml_once = PTHREAD_ONCE_INIT;

/* libxml2 wants its globals set up once before threads use it. */
static void init_libxml(void)
{
    xmlInitParser();
}

/* Parses XML into *OUT with any root; 0 or -errno. */
static int parse(const char *xml, xmlDocPtr *out)
{
    const xmlError *err;
    xmlDocPtr doc;
    size_t len;

    if (xml == NULL)
        return -EINVAL;
    len = strnlen(xml, HV_XML_MAX + 1);
    if (len > HV_XML_MAX)
        return -E2BIG;
    pthread_once(&libxml_once, init_libxml);
    doc = xmlReadMemory(xml, (int)len, "crane.xml", NULL,
                        XML_PARSE_NONET | XML_PARSE_NOERROR |
                            XML_PARSE_NOWARNING);
    if (doc == NULL) {
        err = xmlGetLastError();
        return err != NULL && err->code == XML_ERR_NO_MEMORY ? -ENOMEM
                                                             : -EINVAL;
    }
    if (doc->intSubset != NULL || doc->extSubset != NULL ||
        xmlDocGetRootElement(doc) == NULL) {
        xmlFreeDoc(doc);
        return -EINVAL;
    }
    *out = doc;
    return 0;
}

int hv_xml_parse(const char *xml, struct hv_xml **out)
{
    struct hv_xml *parsed;
    xmlDocPtr doc;
    int rc;

    rc = parse(xml, &doc);
    if (rc < 0)
        return rc;
    if (!xmlStrEqual(xmlDocGetRootElement(doc)->name, BAD_CAST "domain")) {
        xmlFreeDoc(doc);
        return -EINVAL;
    }
    parsed = malloc(sizeof(*parsed));
    if (parsed == NULL) {
        xmlFreeDoc(doc);
        return -ENOMEM;
    }
    parsed->doc = doc;
    *out = parsed;
    return 0;
}

void hv_xml_free(struct hv_xml *parsed)
{
    if (parsed == NULL)
        return;
    xmlFreeDoc(parsed->doc);
    free(parsed);
}

/* --- small readers --------------------------------------------------------- */

/* The nodes a constant EXPR selects, or NULL when none (or no memory). */
static xmlXPathObjectPtr select_nodes(xmlDocPtr doc, const char *expr)
{
    xmlXPathContextPtr ctx;
    xmlXPathObjectPtr found;

    ctx = xmlXPathNewContext(doc);
    if (ctx == NULL)
        return NULL;
    found = xmlXPathEvalExpression(BAD_CAST expr, ctx);
    xmlXPathFreeContext(ctx);
    if (found != NULL &&
        (found->type != XPATH_NODESET || xmlXPathNodeSetIsEmpty(
                                             found->nodesetval))) {
        xmlXPathFreeObject(found);
        return NULL;
    }
    return found;
}

static int node_count(xmlXPathObjectPtr found)
{
    int n = found->nodesetval->nodeNr;

    return n < NODES_MAX ? n : NODES_MAX;
}

/* The first child element of PARENT called NAME, or NULL. */
static xmlNodePtr child_element(xmlNodePtr parent, const char *name)
{
    for (xmlNodePtr c = parent->children; c != NULL; c = c->next)
        if (c->type == XML_ELEMENT_NODE && xmlStrEqual(c->name, BAD_CAST name))
            return c;
    return NULL;
}

/* Whether S holds a control character (or DEL): never in a value we use,
 * and unsafe to log. */
static bool has_control(const char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
            return true;
    return false;
}

/* Copies VALUE into OUT (SIZE bytes): 0, -ENOENT (NULL), -ENAMETOOLONG. */
static int copy_value(const xmlChar *value, char *out, size_t size)
{
    size_t len;

    if (value == NULL)
        return -ENOENT;
    len = strlen((const char *)value);
    if (len >= size)
        return -ENAMETOOLONG;
    memcpy(out, value, len + 1);
    return 0;
}

/* Copies NODE's attribute NAME into OUT; as copy_value. */
static int copy_attr(xmlNodePtr node, const char *name, char *out,
                     size_t size)
{
    xmlChar *value = xmlGetNoNsProp(node, BAD_CAST name);
    int rc = copy_value(value, out, size);

    xmlFree(value);
    return rc;
}

static bool attr_equals(xmlNodePtr node, const char *name, const char *want)
{
    xmlChar *value = xmlGetNoNsProp(node, BAD_CAST name);
    bool equal = value != NULL && strcmp((const char *)value, want) == 0;

    xmlFree(value);
    return equal;
}

/* Copies the text of the root's child element NAME into OUT. */
static int copy_root_text(const struct hv_xml *parsed, const char *name,
                          char *out, size_t size)
{
    xmlNodePtr node;
    xmlChar *text;
    int rc;

    node = child_element(xmlDocGetRootElement(parsed->doc), name);
    if (node == NULL)
        return -ENOENT;
    text = xmlNodeGetContent(node);
    if (text == NULL)
        return -ENOMEM;
    rc = copy_value(text, out, size);
    xmlFree(text);
    if (rc == 0 && (out[0] == '\0' || has_control(out)))
        rc = -EINVAL;
    return rc;
}

/* --- the domain ------------------------------------------------------------- */

int hv_xml_name(const struct hv_xml *parsed, char *out, size_t size)
{
    return copy_root_text(parsed, "name", out, size);
}

int hv_xml_uuid(const struct hv_xml *parsed, char out[37])
{
    int rc = copy_root_text(parsed, "uuid", out, 37);

    if (rc == -ENAMETOOLONG)
        return -EINVAL;
    if (rc < 0)
        return rc;
    if (strlen(out) != 36)
        return -EINVAL;
    for (int i = 0; i < 36; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;

        if (dash ? out[i] != '-' : !isxdigit((unsigned char)out[i]))
            return -EINVAL;
    }
    return 0;
}

int hv_xml_channel_path(const struct hv_xml *parsed, const char *target_name,
                        char *out, size_t size)
{
    xmlXPathObjectPtr found;
    int rc = -ENOENT;

    if (target_name == NULL || target_name[0] == '\0')
        return -EINVAL;
    found = select_nodes(parsed->doc,
                         "/domain/devices/channel[@type='unix']");
    if (found == NULL)
        return -ENOENT;
    for (int i = 0; i < node_count(found); i++) {
        xmlNodePtr channel = found->nodesetval->nodeTab[i];
        xmlNodePtr target = child_element(channel, "target");
        xmlNodePtr source;

        if (target == NULL || !attr_equals(target, "name", target_name))
            continue;
        source = child_element(channel, "source");
        rc = source != NULL ? copy_attr(source, "path", out, size) : -ENOENT;
        if (rc == 0 && (out[0] != '/' || has_control(out)))
            rc = -EINVAL;
        break;
    }
    xmlXPathFreeObject(found);
    return rc;
}

int hv_xml_has_alias(const struct hv_xml *parsed, const char *alias)
{
    xmlXPathObjectPtr found;
    int has = 0;

    if (alias == NULL || alias[0] == '\0')
        return -EINVAL;
    found = select_nodes(parsed->doc, "/domain/devices/*/alias");
    if (found == NULL)
        return 0;
    for (int i = 0; i < node_count(found) && !has; i++)
        has = attr_equals(found->nodesetval->nodeTab[i], "name", alias);
    xmlXPathFreeObject(found);
    return has;
}

/* --- PCI addresses ---------------------------------------------------------- */

/* Reads 1 to MAX_DIGITS hex digits at *P, advancing it. */
static int read_hex(const char **p, int max_digits, unsigned long *out)
{
    unsigned long v = 0;
    int n = 0;

    for (; n < max_digits && isxdigit((unsigned char)**p); n++, (*p)++)
        v = v * 16 + (unsigned long)(isdigit((unsigned char)**p)
                                         ? **p - '0'
                                         : tolower((unsigned char)**p) - 'a' +
                                               10);
    if (n == 0)
        return -EINVAL;
    *out = v;
    return 0;
}

/* Parses "DDDD:BB:SS.F" (domain optional) as in sysfs and lspci -D. */
static int parse_pci_text(const char *s, struct pci_addr *a)
{
    const char *p = s;
    int colons = 0;

    for (const char *c = s; *c != '\0'; c++)
        colons += *c == ':';
    a->domain = 0;
    if (colons == 2) {
        if (read_hex(&p, 8, &a->domain) < 0 || *p++ != ':')
            return -EINVAL;
    } else if (colons != 1) {
        return -EINVAL;
    }
    if (read_hex(&p, 2, &a->bus) < 0 || *p++ != ':' ||
        read_hex(&p, 2, &a->slot) < 0 || *p++ != '.' ||
        read_hex(&p, 1, &a->function) < 0 || *p != '\0')
        return -EINVAL;
    return a->slot <= 0x1f && a->function <= 7 ? 0 : -EINVAL;
}

/* Reads NODE's attribute NAME as libvirt writes numbers ("0x65", or
 * decimal), at most MAX; ABSENT when it is missing. */
static int read_number_attr(xmlNodePtr node, const char *name,
                            unsigned long max, unsigned long absent,
                            unsigned long *out)
{
    char text[24];
    char *end;
    int rc;

    rc = copy_attr(node, name, text, sizeof(text));
    if (rc == -ENOENT) {
        *out = absent;
        return 0;
    }
    if (rc < 0 || !isdigit((unsigned char)text[0]))
        return -EINVAL;
    errno = 0;
    *out = strtoul(text, &end, 0);
    if (errno != 0 || *end != '\0' || *out > max)
        return -EINVAL;
    return 0;
}

static int parse_pci_element(xmlNodePtr address, struct pci_addr *a)
{
    if (read_number_attr(address, "domain", 0xffffffff, 0, &a->domain) < 0 ||
        read_number_attr(address, "bus", 0xff, ULONG_MAX, &a->bus) < 0 ||
        read_number_attr(address, "slot", 0x1f, ULONG_MAX, &a->slot) < 0 ||
        read_number_attr(address, "function", 7, ULONG_MAX, &a->function) <
            0 ||
        a->bus == ULONG_MAX || a->slot == ULONG_MAX ||
        a->function == ULONG_MAX)
        return -EINVAL;
    return 0;
}

int hv_xml_has_pci_hostdev(const struct hv_xml *parsed, const char *pci)
{
    struct pci_addr want, got;
    xmlXPathObjectPtr found;
    int has = 0;

    if (pci == NULL || parse_pci_text(pci, &want) < 0)
        return -EINVAL;
    found = select_nodes(parsed->doc,
                         "/domain/devices/hostdev[@type='pci']/source/address");
    if (found == NULL)
        return 0;
    for (int i = 0; i < node_count(found) && !has; i++)
        has = parse_pci_element(found->nodesetval->nodeTab[i], &got) == 0 &&
              got.domain == want.domain && got.bus == want.bus &&
              got.slot == want.slot && got.function == want.function;
    xmlXPathFreeObject(found);
    return has;
}

/* --- pool entries ----------------------------------------------------------- */

/* libvirt's rule for user aliases, which it keeps across hotplug. */
static bool is_user_alias(const char *alias)
{
    if (strncmp(alias, "ua-", 3) != 0 || alias[3] == '\0')
        return false;
    for (const char *c = alias + 3; *c != '\0'; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-')
            return false;
    return true;
}

int hv_xml_device_alias(const char *device_xml, char *out, size_t size)
{
    xmlNodePtr alias;
    xmlDocPtr doc;
    int rc;

    rc = parse(device_xml, &doc);
    if (rc < 0)
        return rc;
    alias = child_element(xmlDocGetRootElement(doc), "alias");
    rc = alias != NULL ? copy_attr(alias, "name", out, size) : -EINVAL;
    if (rc == -ENOENT || (rc == 0 && !is_user_alias(out)))
        rc = -EINVAL;
    xmlFreeDoc(doc);
    return rc;
}
