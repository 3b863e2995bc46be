#ifndef FINGERSEAL_CPAM_SHIM_H
#define FINGERSEAL_CPAM_SHIM_H
#include <security/pam_appl.h>
#include <security/pam_modules.h>
#include <security/pam_ext.h>
#include <security/pam_modutil.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

/* pam_syslog and pam_prompt are variadic; Swift cannot call them. These typed
 * shims pass the message through "%s" so it is never read as a format string. */
static inline void fs_pam_syslog(const pam_handle_t *pamh, int priority, const char *message) {
    pam_syslog(pamh, priority, "%s", message);
}

static inline int fs_pam_prompt(pam_handle_t *pamh, int style, char **response, const char *message) {
    return pam_prompt(pamh, style, response, "%s", message);
}

/* pam_get_item's out-parameter is `const void **`; typed accessors keep casts here. */
static inline int fs_pam_get_string_item(const pam_handle_t *pamh, int item, const char **value) {
    const void *raw = NULL;
    int rc = pam_get_item(pamh, item, &raw);
    *value = (const char *)raw;
    return rc;
}
#endif
