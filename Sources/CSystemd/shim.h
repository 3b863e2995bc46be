#ifndef FINGERSEAL_CSYSTEMD_SHIM_H
#define FINGERSEAL_CSYSTEMD_SHIM_H
/* libsystemd: socket activation and readiness (sd-daemon), the journal (sd-journal), the caller's login session
 * (sd-login), and D-Bus (sd-bus) for fprintd and logind. FprintdKit uses only sd-bus's
 * non-variadic calls (append_basic/read_basic/enter_container), so no shims are needed. */
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#include <systemd/sd-bus.h>
/* sd-journal: only sd_journal_sendv, which takes an iovec array (the variadic send is not used). */
#include <systemd/sd-journal.h>
#endif
