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
/* renameat2 (glibc 2.28) is declared only under _GNU_SOURCE; RENAME_NOREPLACE from
 * linux/fs.h: the rename fails with EEXIST instead of replacing the target. */
extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);
#define FS_RENAME_NOREPLACE 1
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
/* pidfd_open has no glibc wrapper in Debian 12's glibc headers either: a descriptor that
   becomes readable when the process ends (a bounded wait for a child with poll). */
static inline int fs_pidfd_open(int pid) {
    return (int)syscall(434 /* SYS_pidfd_open */, pid, 0);
}

/* pidfd_send_signal has no glibc wrapper in Debian 12's glibc headers. */
static inline int fs_pidfd_send_signal(int pidfd, int sig) {
    return (int)syscall(424 /* SYS_pidfd_send_signal */, pidfd, sig, (void *)0, 0);
}
/* PIDFD_GET_INFO (Linux 6.13): a process's credentials read through its pidfd, so from that
 * very process, without a /proc file to open and parse. The first published layout (64
 * bytes), which every kernel that has the call accepts; Debian 12's headers lack it. */
#include <stdint.h>
#include <sys/ioctl.h>
struct fs_pidfd_info {
    uint64_t mask;
    uint64_t cgroupid;
    uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
    int32_t exit_code;
};
/* The real uid of the process `pidfd` refers to; -1 with errno set (ENOTTY, EINVAL: a kernel
 * without the call; ESRCH: the process is gone). */
static inline int fs_pidfd_real_uid(int pidfd, unsigned int *uid) {
    struct fs_pidfd_info info;
    memset(&info, 0, sizeof info);
    if (ioctl(pidfd, _IOWR(0xFF, 11, struct fs_pidfd_info), &info) != 0) return -1;
    /* PIDFD_INFO_CREDS: the kernel says the credentials are filled in. */
    if ((info.mask & 2) == 0) { errno = ENOTTY; return -1; }
    *uid = info.ruid;
    return 0;
}
/* One serving thread's wait for a connection: its own epoll set holding the listening socket
 * with EPOLLEXCLUSIVE (Linux 4.5: a connection wakes one waiting thread, not every idle one)
 * and the stop event (which wakes them all). -1 with errno set when it cannot be made. */
#include <sys/epoll.h>
static inline int fs_epoll_for_accept(int listener, int stop) {
    int set = epoll_create1(EPOLL_CLOEXEC);
    if (set < 0) return -1;
    struct epoll_event connection = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data = { .fd = listener } };
    struct epoll_event stopped = { .events = EPOLLIN, .data = { .fd = stop } };
    if (epoll_ctl(set, EPOLL_CTL_ADD, listener, &connection) != 0 || epoll_ctl(set, EPOLL_CTL_ADD, stop, &stopped) != 0) {
        int saved = errno;
        close(set);
        errno = saved;
        return -1;
    }
    return set;
}
/* Waits up to `milliseconds` (-1: no limit) on such a set: 1 with the ready descriptor in
 * `*ready`, 0 on time out, -1 with errno set. */
static inline int fs_epoll_wait_one(int set, int milliseconds, int *ready) {
    struct epoll_event event;
    int count = epoll_wait(set, &event, 1, milliseconds);
    if (count == 1) *ready = event.data.fd;
    return count;
}
/* A parked thread leaves nothing of the work it did in its stack below its current frame:
 * `fs_stack_low` once, when the thread starts (pthread_getattr_np costs a sched_getaffinity),
 * then `fs_scrub_stack_below` each time it parks. The pages within `keep` bytes below the
 * frame that are resident (mincore: the ones the last request touched) are zeroed and stay,
 * so the next request of ordinary depth takes no page faults for them; everything deeper is
 * given back to the kernel, as glibc does for a thread that ends (it reads as zeros when
 * touched again). The 16 KiB nearest the frame stay as they are (this call's own frames;
 * glibc keeps PTHREAD_STACK_MIN too). */
#include <pthread.h>
#include <sys/mman.h>
extern int pthread_getattr_np(pthread_t thread, pthread_attr_t *attributes);
/* The lowest address of the calling thread's stack, page aligned; 0 when it cannot be told. */
static inline uintptr_t fs_stack_low(void) {
    pthread_attr_t attributes;
    void *base = 0;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
    int rc = pthread_attr_getstack(&attributes, &base, &size);
    pthread_attr_destroy(&attributes);
    if (rc != 0) return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    return ((uintptr_t)base + page - 1) & ~(page - 1);
}
enum { FS_STACK_SCRUB_KEEP_MAX = 1 << 20 };
static inline void fs_scrub_stack_below(uintptr_t low, size_t keep) {
    if (low == 0) return;
    char here = 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t current = (uintptr_t)(volatile char *)&here;
    if (current < low + 16384 + page) return;
    uintptr_t high = (current - 16384) & ~(page - 1);
    if (keep > FS_STACK_SCRUB_KEEP_MAX) keep = FS_STACK_SCRUB_KEEP_MAX;
    uintptr_t kept = high - low > keep ? high - (keep & ~(page - 1)) : low;
    if (kept > low) madvise((void *)low, kept - low, MADV_DONTNEED);
    unsigned char resident[FS_STACK_SCRUB_KEEP_MAX / 4096];
    size_t pages = (high - kept) / page;
    if (pages > sizeof resident) pages = sizeof resident;
    if (pages == 0) return;
    if (mincore((void *)kept, pages * page, resident) != 0) {
        explicit_bzero((void *)kept, high - kept);
        return;
    }
    for (size_t index = 0; index < pages; index++) {
        if (resident[index] & 1) explicit_bzero((void *)(kept + index * page), page);
    }
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

#ifndef FINGERSEAL_CLINUX_DUMPABLE
#define FINGERSEAL_CLINUX_DUMPABLE
#include <sys/prctl.h>
/* prctl is variadic; Swift cannot call it. Not dumpable: no core file, and other processes of
 * the same user can neither ptrace this one nor read its memory (/proc/PID/mem, environ). */
static inline int fs_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
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

#ifndef FINGERSEAL_CLINUX_SHADOW
#define FINGERSEAL_CLINUX_SHADOW
/* The broker notices a changed password entry (the keyring's sealed copy). */
#include <shadow.h>
#endif
