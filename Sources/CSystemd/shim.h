#ifndef FINGERSEAL_CSYSTEMD_SHIM_H
#define FINGERSEAL_CSYSTEMD_SHIM_H
/* libsystemd: socket activation and readiness (sd-daemon), the caller's login session
 * (sd-login). */
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>
#endif
