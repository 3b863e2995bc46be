#ifndef FINGERSEAL_CMICROHTTPD_SHIM_H
#define FINGERSEAL_CMICROHTTPD_SHIM_H
#include <netinet/in.h>
#include <microhttpd.h>
#include <dlfcn.h>
#include <pthread.h>

/* libmicrohttpd (and the GnuTLS it brings) is loaded only by the browser sign-in, not at
 * every start of the CLI (about 3 ms). The headers still type every call. */
struct fs_mhd_api {
    struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                       MHD_AccessHandlerCallback, void *, ...);
    const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType, ...);
    void (*stop_daemon)(struct MHD_Daemon *);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
    void (*destroy_response)(struct MHD_Response *);
    enum MHD_Result (*add_response_header)(struct MHD_Response *, const char *, const char *);
    enum MHD_Result (*queue_response)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    int (*get_connection_values)(struct MHD_Connection *, enum MHD_ValueKind, MHD_KeyValueIterator, void *);
    const union MHD_ConnectionInfo *(*get_connection_info)(struct MHD_Connection *, enum MHD_ConnectionInfoType, ...);
};

/* Function-local statics: Swift emits a header's inline functions, not its global variables. */
struct fs_mhd_state { struct fs_mhd_api api; int ok; };
static inline struct fs_mhd_state *fs_mhd_state(void) {
    static struct fs_mhd_state state;
    return &state;
}

static inline void fs_mhd_load_once(void) {
    void *lib = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    struct fs_mhd_api api;
    *(void **)&api.start_daemon = dlsym(lib, "MHD_start_daemon");
    *(void **)&api.get_daemon_info = dlsym(lib, "MHD_get_daemon_info");
    *(void **)&api.stop_daemon = dlsym(lib, "MHD_stop_daemon");
    *(void **)&api.create_response_from_buffer = dlsym(lib, "MHD_create_response_from_buffer");
    *(void **)&api.destroy_response = dlsym(lib, "MHD_destroy_response");
    *(void **)&api.add_response_header = dlsym(lib, "MHD_add_response_header");
    *(void **)&api.queue_response = dlsym(lib, "MHD_queue_response");
    *(void **)&api.get_connection_values = dlsym(lib, "MHD_get_connection_values");
    *(void **)&api.get_connection_info = dlsym(lib, "MHD_get_connection_info");
    if (!api.start_daemon || !api.get_daemon_info || !api.stop_daemon || !api.create_response_from_buffer
        || !api.destroy_response || !api.add_response_header || !api.queue_response || !api.get_connection_values
        || !api.get_connection_info) return;
    fs_mhd_state()->api = api;
    fs_mhd_state()->ok = 1;
}

/* 1 once libmicrohttpd is loaded (thread-safe); 0 when it is missing or incomplete. */
static inline int fs_mhd_load(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fs_mhd_load_once);
    return fs_mhd_state()->ok;
}

/* MHD_start_daemon, MHD_get_daemon_info and MHD_get_connection_info are variadic; these typed
 * shims are the only way Swift reaches them. */

/* Each connection's memory pool (its read buffer, where the redirect's code arrives) is made
 * larger than 32 KiB, which makes libmicrohttpd mmap it and munmap it when the connection
 * closes (memorypool.c), instead of malloc/free: nothing of the request stays in the heap. */
#define FS_MHD_CONNECTION_MEMORY (64 * 1024)

/* A daemon on exactly `address`, with a completion callback and bounds on connections; NULL
 * when it cannot start (or libmicrohttpd is missing). */
static inline struct MHD_Daemon *fs_mhd_start(unsigned int flags, const struct sockaddr_in *address,
                                              MHD_AccessHandlerCallback handler,
                                              MHD_RequestCompletedCallback completed, void *context,
                                              unsigned int connectionLimit, unsigned int timeoutSeconds) {
    if (!fs_mhd_load()) return NULL;
    return fs_mhd_state()->api.start_daemon(flags, 0, NULL, NULL, handler, context,
                                            MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)address,
                                            MHD_OPTION_NOTIFY_COMPLETED, completed, context,
                                            MHD_OPTION_CONNECTION_LIMIT, connectionLimit,
                                            MHD_OPTION_CONNECTION_TIMEOUT, timeoutSeconds,
                                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)FS_MHD_CONNECTION_MEMORY,
                                            MHD_OPTION_END);
}

/* A connection's socket, for asking the kernel about both of its ends; -1 when MHD cannot say. */
static inline int fs_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        fs_mhd_state()->api.get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/* The port the daemon listens on; 0 if MHD cannot say. */
static inline uint16_t fs_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = fs_mhd_state()->api.get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/* The rest are only reached through a daemon fs_mhd_start made, so the library is loaded. */
static inline void fs_MHD_stop_daemon(struct MHD_Daemon *d) { fs_mhd_state()->api.stop_daemon(d); }
static inline struct MHD_Response *fs_MHD_create_response_from_buffer(size_t size, void *buffer, enum MHD_ResponseMemoryMode mode) {
    return fs_mhd_state()->api.create_response_from_buffer(size, buffer, mode);
}
static inline void fs_MHD_destroy_response(struct MHD_Response *r) { fs_mhd_state()->api.destroy_response(r); }
static inline enum MHD_Result fs_MHD_add_response_header(struct MHD_Response *r, const char *name, const char *value) {
    return fs_mhd_state()->api.add_response_header(r, name, value);
}
static inline enum MHD_Result fs_MHD_queue_response(struct MHD_Connection *c, unsigned int status, struct MHD_Response *r) {
    return fs_mhd_state()->api.queue_response(c, status, r);
}
static inline int fs_MHD_get_connection_values(struct MHD_Connection *c, enum MHD_ValueKind kind,
                                               MHD_KeyValueIterator iterator, void *context) {
    return fs_mhd_state()->api.get_connection_values(c, kind, iterator, context);
}
#endif
