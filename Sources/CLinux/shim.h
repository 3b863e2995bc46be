#ifndef FINGERSEAL_CLINUX_SHIM_H
#define FINGERSEAL_CLINUX_SHIM_H
/* Linux headers that Glibc's Swift module leaves out. */
/* And the libc the PAM module uses, for its Embedded Swift build, which has no Glibc module:
 * in full Swift these headers belong to Glibc's module already and add nothing. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/vfs.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <pthread.h>
#include <time.h>

/* A GNU extension Glibc's module does not declare (it is built without _GNU_SOURCE). */
extern int pthread_timedjoin_np(pthread_t thread, void **result, const struct timespec *abstime);
extern int pipe2(int fds[2], int flags);
extern int memfd_create(const char *name, unsigned int flags);
#include <linux/memfd.h>
/* File sealing (linux/fcntl.h clashes with glibc's fcntl.h, so the values are restated). */
#define FS_F_ADD_SEALS 1033
#define FS_F_SEAL_SEAL 0x0001
#define FS_F_SEAL_SHRINK 0x0002
#define FS_F_SEAL_GROW 0x0004
#define FS_F_SEAL_WRITE 0x0008
#endif

#ifndef FINGERSEAL_CLINUX_SPAWN
#define FINGERSEAL_CLINUX_SPAWN
#include <spawn.h>
/* glibc 2.34+, declared only under _GNU_SOURCE: close every descriptor from `from` up in the
 * child, so a host's sockets never leak into a helper. */
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
#define FS_POSIX_SPAWN_SETSID 0x80
#endif

#ifndef FINGERSEAL_CLINUX_WIPE
#define FINGERSEAL_CLINUX_WIPE
#include <string.h>
#include <sys/socket.h>
/* explicit_bzero: a wipe the compiler may not remove as a dead store. */
static inline void fs_wipe(void *bytes, size_t count) {
    explicit_bzero(bytes, count);
}
/* SO_PEERPIDFD (Linux 6.5); the 6.1 kernel headers on the build machines lack it. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#define FS_SO_PEERPIDFD SO_PEERPIDFD
/* SO_PEERGROUPS (Linux 4.13): the peer's supplementary groups as they were at connect(). */
#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif
#define FS_SO_PEERGROUPS SO_PEERGROUPS
#include <sys/syscall.h>
#include <unistd.h>
#include <signal.h>
/* pidfd_send_signal has no glibc wrapper in Debian 12's glibc headers. */
static inline int fs_pidfd_send_signal(int pidfd, int sig) {
    return (int)syscall(424 /* SYS_pidfd_send_signal */, pidfd, sig, (void *)0, 0);
}
/* accept4 is declared only under _GNU_SOURCE. */
extern int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
/* struct ucred is declared only under _GNU_SOURCE. */
struct fs_ucred { int pid; unsigned int uid; unsigned int gid; };
#endif

#ifndef FINGERSEAL_CLINUX_SYSLOG
#define FINGERSEAL_CLINUX_SYSLOG
#include <syslog.h>
/* syslog is variadic; Swift cannot call it. The message goes through "%s", so it is never read
 * as a format string. */
static inline void fs_syslog(int priority, const char *message) {
    syslog(priority, "%s", message);
}
#endif

#ifndef FINGERSEAL_CLINUX_LOCALE
#define FINGERSEAL_CLINUX_LOCALE
#include <locale.h>
#include <libintl.h>
/* The locale masks and LC_GLOBAL_LOCALE are macros Swift cannot import. A thread's own
 * locale (uselocale), never setlocale: the broker serves many people at once, one per thread. */
static inline locale_t fs_newlocale(const char *name) {
    return newlocale(LC_ALL_MASK, name, (locale_t)0);
}
static inline locale_t fs_global_locale(void) { return LC_GLOBAL_LOCALE; }
#endif

#ifndef FINGERSEAL_CLINUX_SOCK_DIAG
#define FINGERSEAL_CLINUX_SOCK_DIAG
#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>
/* One exact inet_diag question (NETLINK_SOCK_DIAG): the message as the kernel reads it. */
struct fs_inet_diag_request {
    struct nlmsghdr header;
    struct inet_diag_req_v2 request;
};
/* INET_DIAG_NOCOOKIE is (~0U), which Swift does not import. */
static const unsigned int FS_INET_DIAG_NOCOOKIE = ~0U;
#endif
