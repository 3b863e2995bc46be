#ifndef FINGERSEAL_CSYSTEMD_SHIM_H
#define FINGERSEAL_CSYSTEMD_SHIM_H
/* libsystemd: socket activation and readiness (sd-daemon), the caller's login session
 * (sd-login), and D-Bus (sd-bus) for fprintd and logind. FprintdKit uses only sd-bus's
 * non-variadic calls (append_basic/read_basic/enter_container), so no shims are needed. */
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#include <systemd/sd-bus.h>
#endif
