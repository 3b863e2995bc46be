/* fuzz-pam's stand-in for a password module: PAM_AUTHTOK from the PAM environment's
   FUZZ_AUTHTOK (an application may set neither the item nor module data), so that the
   module's password_used and chauthtok paths have a password to hand over. Always PAM_IGNORE:
   the stack's verdict stays pam_fingerseal's. */
#include <stddef.h>
#include <security/pam_modules.h>

static int set_authtok(pam_handle_t *pamh) {
    const char *value = pam_getenv(pamh, "FUZZ_AUTHTOK");
    if (value != NULL) pam_set_item(pamh, PAM_AUTHTOK, value);
    return PAM_IGNORE;
}

int pam_sm_authenticate(pam_handle_t *pamh, int flags, int argc, const char **argv) { return set_authtok(pamh); }
int pam_sm_setcred(pam_handle_t *pamh, int flags, int argc, const char **argv) { return PAM_IGNORE; }
int pam_sm_chauthtok(pam_handle_t *pamh, int flags, int argc, const char **argv) { return set_authtok(pamh); }
