#ifndef FINGERSEAL_CMICROHTTPD_SHIM_H
#define FINGERSEAL_CMICROHTTPD_SHIM_H
#include <netinet/in.h>
#include <microhttpd.h>

/* MHD_start_daemon and MHD_get_daemon_info are variadic; these typed shims are the only way
 * Swift reaches them. */

/* A daemon on exactly `address`, with a completion callback and bounds on connections. */
static inline struct MHD_Daemon *fs_mhd_start(unsigned int flags, const struct sockaddr_in *address,
                                              MHD_AccessHandlerCallback handler,
                                              MHD_RequestCompletedCallback completed, void *context,
                                              unsigned int connectionLimit, unsigned int timeoutSeconds) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, context,
                            MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)address,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, context,
                            MHD_OPTION_CONNECTION_LIMIT, connectionLimit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeoutSeconds,
                            MHD_OPTION_END);
}

/* The port the daemon listens on; 0 if MHD cannot say. */
static inline uint16_t fs_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}
#endif
