/* What crane-hostd reads from libvirt's domain and device XML (libxml2). */
#ifndef HD_HV_XML_H
#define HD_HV_XML_H

#include <stddef.h>

/* The largest XML accepted: libvirt's own RPC limit on a string. */
#define HV_XML_MAX (4u << 20)

/* A parsed <domain> document. */
struct hv_xml;

/*
 * Parses XML, which must be a <domain> element without a DTD.  Returns 0,
 * -E2BIG (over HV_XML_MAX), -EINVAL (malformed, another root, a DTD) or
 * -ENOMEM.  Thread-safe; each document belongs to one thread at a time.
 */
int hv_xml_parse(const char *xml, struct hv_xml **out);
void hv_xml_free(struct hv_xml *doc);

/* The domain's <name> into OUT (SIZE bytes).  -ENOENT: none;
 * -ENAMETOOLONG: does not fit; -EINVAL: empty or control characters. */
int hv_xml_name(const struct hv_xml *doc, char *out, size_t size);

/* The domain's <uuid>, canonical form (36 characters) into OUT.  -ENOENT:
 * none; -EINVAL: not a UUID. */
int hv_xml_uuid(const struct hv_xml *doc, char out[37]);

/*
 * The host path of the unix-socket channel whose virtio target is named
 * TARGET_NAME (/domain/devices/channel[@type='unix'][target/@name=NAME]
 * /source/@path) into OUT.  -ENOENT: no such channel or no path;
 * -ENAMETOOLONG: does not fit OUT; -EINVAL: not an absolute path or
 * control characters.
 */
int hv_xml_channel_path(const struct hv_xml *doc, const char *target_name,
                        char *out, size_t size);

/* 1 when a device directly under <devices> has <alias name='ALIAS'/>,
 * else 0. */
int hv_xml_has_alias(const struct hv_xml *doc, const char *alias);

/* 1 when <devices> has a <hostdev type='pci'> whose source address is PCI
 * ("0000:65:00.0" or "65:00.0", compared numerically), else 0; -EINVAL
 * when PCI is not a PCI address. */
int hv_xml_has_pci_hostdev(const struct hv_xml *doc, const char *pci);

/*
 * The alias of one device element (a pool entry's XML: <alias name='...'/>
 * directly under its root) into OUT.  -EINVAL: malformed, no alias, or an
 * alias that is not "ua-" and [A-Za-z0-9_-]; -ENAMETOOLONG: does not fit
 * OUT; -E2BIG: XML over HV_XML_MAX.
 */
int hv_xml_device_alias(const char *device_xml, char *out, size_t size);

#endif /* HD_HV_XML_H */
