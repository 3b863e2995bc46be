/*
 * fault-inject: an LD_PRELOAD library that fails chosen C library calls of the process under
 * test, so the tests can show what fingerseal does when memory, files or sockets fail at each
 * place it uses them (issue 24 §2). Not part of the product. Built by scripts/build-fault-inject.
 *
 * Configured by the environment of the process under test only:
 *   FAULT_CALL=GROUP[,GROUP...]  which calls may fail: malloc open read write fsync rename
 *                                socket connect sendmsg recvmsg poll, or "all". A group covers
 *                                the variants the code calls (open: open, open64, openat,
 *                                openat64; read: read, pread; write: write, pwrite, writev;
 *                                rename: rename, renameat, renameat2; sendmsg: send, sendto,
 *                                sendmsg; recvmsg: recv, recvfrom, recvmsg; poll: poll, ppoll;
 *                                malloc: malloc, calloc, realloc, posix_memalign, aligned_alloc)
 *   FAULT_NTH=N                  fail the Nth matching call (1-based)
 *   FAULT_PROBABILITY=P          fail each matching call with probability P (0..1), drawn from
 *   FAULT_SEED=S                 a generator seeded with S: the same seed, the same draws
 *   FAULT_SITE=HASH              fail the first matching call made at this site (the hash the
 *                                log names: the call and its callers, as object + offset)
 *   FAULT_ERRNO=NAME             the errno of the failure (EIO, ENOSPC, ENOMEM, EINTR, ...);
 *                                by default the harshest one the call can give (see below)
 *   FAULT_CALLER=TEXT            only calls with a caller, within the hashed frames, in an
 *                                object whose path contains TEXT (pam_fingerseal: the module,
 *                                not its host)
 *   FAULT_DEPTH=N                return addresses hashed into a site (default 8, at most 16)
 *   FAULT_LOG=PATH               appends "site GROUP SYMBOL HASH FRAMES" the first time each
 *                                site is seen, and "fail GROUP SYMBOL HASH ERRNO" per failure
 *   FAULT_CONTROL=PATH           a long-running process (the broker): nothing counts or fails
 *                                unless the file's armed word is set; each new generation
 *                                rereads the settings from the file (see struct control), so
 *                                one broker serves every run of a sweep, its start-up untouched
 *
 * Its own work never recurses into itself (a per-thread guard) and writes its log with raw
 * system calls. Allocation goes to glibc's __libc_* entry points: no dlsym before malloc works.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

enum group { G_MALLOC, G_OPEN, G_READ, G_WRITE, G_FSYNC, G_RENAME, G_SOCKET, G_CONNECT, G_SEND, G_RECV, G_POLL, G_COUNT };
static const char *const group_names[G_COUNT] = {
    "malloc", "open", "read", "write", "fsync", "rename", "socket", "connect", "sendmsg", "recvmsg", "poll",
};
/* The harshest failure each call can really give (the one code most often gets wrong). */
static const int default_errno[G_COUNT] = {
    ENOMEM, EIO, EIO, ENOSPC, EIO, EIO, EMFILE, ECONNREFUSED, ENOBUFS, ECONNRESET, ENOMEM,
};

/* The file a sweep driver shares with a long-running process (mapped MAP_SHARED). */
struct control {
    volatile uint32_t generation; /* bumped by the driver with new settings */
    volatile uint32_t armed;      /* nonzero: count and fail */
    volatile uint32_t calls;      /* matching calls seen while armed, this generation */
    volatile uint32_t faults;     /* failures injected, this generation */
    char reserved[48];
    char settings[4096 - 64];     /* "FAULT_CALL=write FAULT_SITE=... " as in the environment */
};

struct settings {
    unsigned groups;      /* bit per group */
    uint64_t nth;
    double probability;
    uint64_t seed;
    uint64_t site;
    int has_site;
    int error;            /* 0: the group's default */
    char caller[128];
    int depth;
};

static struct settings current;
static struct control *control;
static uint32_t seen_generation;
static int log_fd = -1;
static uint64_t call_count;
static uint64_t random_state;
static int site_fired;
static int ready;
static __thread int busy __attribute__((tls_model("initial-exec")));

/* Sites already logged this generation: open addressing over their hashes. */
#define SEEN_SLOTS 65536
static uint64_t seen_sites[SEEN_SLOTS];

static int spin;
static void take(void) { while (__atomic_exchange_n(&spin, 1, __ATOMIC_ACQUIRE)) {} }
static void give(void) { __atomic_store_n(&spin, 0, __ATOMIC_RELEASE); }

static uint64_t fnv(uint64_t hash, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    for (size_t i = 0; i < count; i++) { hash ^= p[i]; hash *= 0x100000001b3ULL; }
    return hash;
}

static void raw_write(const char *text, size_t count) {
    if (log_fd >= 0) syscall(SYS_write, log_fd, text, count);
}

static size_t append(char *buffer, size_t at, size_t size, const char *text) {
    while (*text && at + 1 < size) buffer[at++] = *text++;
    buffer[at] = 0;
    return at;
}

static size_t append_hex(char *buffer, size_t at, size_t size, uint64_t value) {
    char digits[17];
    for (int i = 15; i >= 0; i--) { digits[i] = "0123456789abcdef"[value & 15]; value >>= 4; }
    digits[16] = 0;
    return append(buffer, at, size, digits);
}

static size_t append_decimal(char *buffer, size_t at, size_t size, long value) {
    char digits[24];
    int i = 23;
    digits[i] = 0;
    int negative = value < 0;
    unsigned long magnitude = negative ? -(unsigned long)value : (unsigned long)value;
    do { digits[--i] = '0' + magnitude % 10; magnitude /= 10; } while (magnitude && i > 1);
    if (negative) digits[--i] = '-';
    return append(buffer, at, size, digits + i);
}

static const struct { const char *name; int value; } errno_names[] = {
    {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"ENOMEM", ENOMEM}, {"EINTR", EINTR}, {"EMFILE", EMFILE},
    {"ENFILE", ENFILE}, {"EACCES", EACCES}, {"ECONNREFUSED", ECONNREFUSED}, {"ECONNRESET", ECONNRESET},
    {"ENOBUFS", ENOBUFS}, {"EPIPE", EPIPE}, {"EAGAIN", EAGAIN}, {"EDQUOT", EDQUOT}, {"EROFS", EROFS},
};

static const char *errno_name(int value) {
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
        if (errno_names[i].value == value) return errno_names[i].name;
    return "E?";
}

/* Parses "KEY=VALUE KEY=VALUE" (space or NUL separated, as the control file holds them) or
 * one environment value at a time; no allocation. */
static void apply(struct settings *s, const char *key, size_t key_length, const char *value, size_t length) {
    char text[160];
    if (length >= sizeof text) length = sizeof text - 1;
    memcpy(text, value, length);
    text[length] = 0;
#define KEY(name) (key_length == sizeof(name) - 1 && memcmp(key, name, key_length) == 0)
    if (KEY("FAULT_CALL")) {
        s->groups = 0;
        for (char *part = text; *part;) {
            char *end = part;
            while (*end && *end != ',') end++;
            size_t n = end - part;
            if (n == 3 && memcmp(part, "all", 3) == 0) s->groups = (1u << G_COUNT) - 1;
            for (int g = 0; g < G_COUNT; g++)
                if (strlen(group_names[g]) == n && memcmp(part, group_names[g], n) == 0) s->groups |= 1u << g;
            part = *end ? end + 1 : end;
        }
    } else if (KEY("FAULT_NTH")) {
        s->nth = strtoull(text, NULL, 10);
    } else if (KEY("FAULT_PROBABILITY")) {
        s->probability = strtod(text, NULL);
    } else if (KEY("FAULT_SEED")) {
        s->seed = strtoull(text, NULL, 0);
    } else if (KEY("FAULT_SITE")) {
        s->site = strtoull(text, NULL, 16);
        s->has_site = 1;
    } else if (KEY("FAULT_ERRNO")) {
        s->error = atoi(text);
        for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
            if (strcmp(text, errno_names[i].name) == 0) s->error = errno_names[i].value;
    } else if (KEY("FAULT_CALLER")) {
        memcpy(s->caller, text, length + 1 < sizeof s->caller ? length + 1 : sizeof s->caller);
        s->caller[sizeof s->caller - 1] = 0;
    } else if (KEY("FAULT_DEPTH")) {
        s->depth = atoi(text);
        if (s->depth < 1) s->depth = 1;
        if (s->depth > 16) s->depth = 16;
    }
#undef KEY
}

static void parse_line(struct settings *s, const char *line) {
    while (*line) {
        while (*line == ' ' || *line == '\n') line++;
        const char *start = line;
        while (*line && *line != ' ' && *line != '\n') line++;
        const char *equals = memchr(start, '=', line - start);
        if (equals) apply(s, start, equals - start, equals + 1, line - equals - 1);
    }
}

static void defaults(struct settings *s) {
    memset(s, 0, sizeof *s);
    s->depth = 8;
}

static void restart_counting(void) {
    call_count = 0;
    site_fired = 0;
    random_state = current.seed ? current.seed : 0x9e3779b97f4a7c15ULL;
    memset(seen_sites, 0, sizeof seen_sites);
}

__attribute__((constructor)) static void start(void) {
    busy = 1;
    defaults(&current);
    static const char *const keys[] = {"FAULT_CALL", "FAULT_NTH", "FAULT_PROBABILITY", "FAULT_SEED", "FAULT_SITE",
                                       "FAULT_ERRNO", "FAULT_CALLER", "FAULT_DEPTH"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *value = getenv(keys[i]);
        if (value) apply(&current, keys[i], strlen(keys[i]), value, strlen(value));
    }
    const char *log_path = getenv("FAULT_LOG");
    if (log_path) log_fd = (int)syscall(SYS_openat, AT_FDCWD, log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    const char *control_path = getenv("FAULT_CONTROL");
    if (control_path) {
        int fd = (int)syscall(SYS_openat, AT_FDCWD, control_path, O_RDWR | O_CLOEXEC, 0);
        if (fd >= 0) {
            void *mapped = mmap(NULL, sizeof(struct control), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (mapped != MAP_FAILED) control = mapped;
            syscall(SYS_close, fd);
        }
    }
    restart_counting();
    /* backtrace() loads libgcc_s on first use, which allocates: done now, not inside a hook. */
    void *frames[4];
    backtrace(frames, 4);
    ready = 1;
    busy = 0;
}

/*
 * Return address -> object, cached: dladdr walks the object's whole symbol table for every
 * frame (libswiftCore's and Foundation's are large), which made an armed broker's request take
 * seconds. The cache is emptied whenever an object is loaded or unloaded (dl_iterate_phdr's
 * counters), so an address never keeps the name of an object that is gone. One per thread:
 * no lock of ours is held around the loader's own (dlopen allocates under them).
 */
#define OBJECT_CACHE 1024
struct cached_object {
    uintptr_t address;
    uintptr_t base;
    char path[80];  /* the path's last 79 bytes: the file name, and enough to match FAULT_CALLER */
};
static __thread struct cached_object object_cache[OBJECT_CACHE] __attribute__((tls_model("initial-exec")));
/* The loader's counters the cache was filled under, plus one (zero: never filled). */
static __thread unsigned long long cache_adds __attribute__((tls_model("initial-exec")));
static __thread unsigned long long cache_subs __attribute__((tls_model("initial-exec")));

static int loaded_counts(struct dl_phdr_info *info, size_t size, void *data) {
    unsigned long long *counts = data;
    if (size < offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) return 1;
    counts[0] = info->dlpi_adds;
    counts[1] = info->dlpi_subs;
    return 1;
}

/* The object holding `address` (its path's tail and load base); NULL when none. The slot is
 * this thread's, valid until the next lookup. */
static const struct cached_object *object_of(uintptr_t address) {
    struct cached_object *slot = &object_cache[(address >> 2) & (OBJECT_CACHE - 1)];
    if (slot->address != address) {
        Dl_info info;
        slot->address = address;
        slot->path[0] = 0;
        if (dladdr((void *)address, &info) && info.dli_fname) {
            size_t length = strlen(info.dli_fname);
            const char *tail = length >= sizeof slot->path ? info.dli_fname + length - (sizeof slot->path - 1) : info.dli_fname;
            memcpy(slot->path, tail, strlen(tail) + 1);
            slot->base = (uintptr_t)info.dli_fbase;
        }
    }
    return slot->path[0] ? slot : NULL;
}

/* The site of the current call: its callers (object + offset, stable across runs and ASLR). */
static uint64_t site_of(char *frames_text, size_t size, int *caller_matches) {
    void *frames[20];
    int depth = current.depth;
    int count = backtrace(frames, depth + 2);
    uint64_t hash = 0xcbf29ce484222325ULL;
    size_t at = 0;
    if (frames_text) frames_text[0] = 0;
    *caller_matches = current.caller[0] == 0;
    unsigned long long counts[2] = {0, 0};
    dl_iterate_phdr(loaded_counts, counts);
    if (counts[0] + 1 != cache_adds || counts[1] + 1 != cache_subs) {
        memset(object_cache, 0, sizeof object_cache);
        cache_adds = counts[0] + 1;
        cache_subs = counts[1] + 1;
    }
    /* frames[0] is site_of, frames[1] the hook: the callers start at 2. */
    for (int i = 2; i < count; i++) {
        uintptr_t address = (uintptr_t)frames[i];
        const char *name = "?";
        uintptr_t offset = address;
        const struct cached_object *object = object_of(address);
        if (object) {
            name = strrchr(object->path, '/') ? strrchr(object->path, '/') + 1 : object->path;
            offset = address - object->base;
            if (current.caller[0] && strstr(object->path, current.caller)) *caller_matches = 1;
        }
        hash = fnv(hash, name, strlen(name));
        hash = fnv(hash, &offset, sizeof offset);
        if (frames_text) {
            at = append(frames_text, at, size, " ");
            at = append(frames_text, at, size, name);
            at = append(frames_text, at, size, "+");
            at = append_hex(frames_text, at, size, offset);
        }
    }
    return hash;
}

static int first_sight(uint64_t key) {
    if (key == 0) key = 1;
    for (uint64_t i = 0; i < SEEN_SLOTS; i++) {
        uint64_t *slot = &seen_sites[(key + i) & (SEEN_SLOTS - 1)];
        if (*slot == key) return 0;
        if (*slot == 0) { *slot = key; return 1; }
    }
    return 0;
}

static uint64_t next_random(void) {
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return random_state;
}

/* "KIND GROUP SYMBOL HASH": how each log line starts. */
static size_t log_head(char *line, size_t size, const char *kind, enum group group, const char *symbol, uint64_t site) {
    size_t at = append(line, 0, size, kind);
    at = append(line, at, size, group_names[group]);
    at = append(line, at, size, " ");
    at = append(line, at, size, symbol);
    at = append(line, at, size, " ");
    return append_hex(line, at, size, site);
}

/* Decides whether this call fails; returns the errno to fail with, or 0. */
static int should_fail(enum group group, const char *symbol) {
    if (!ready || busy) return 0;
    if (control) {
        if (!control->armed) return 0;
        uint32_t generation = __atomic_load_n(&control->generation, __ATOMIC_ACQUIRE);
        if (generation != seen_generation) {
            take();
            if (generation != seen_generation) {
                busy = 1;
                struct settings fresh;
                defaults(&fresh);
                char copy[sizeof control->settings];
                memcpy(copy, (const char *)control->settings, sizeof copy);
                copy[sizeof copy - 1] = 0;
                parse_line(&fresh, copy);
                current = fresh;
                restart_counting();
                seen_generation = generation;
                busy = 0;
            }
            give();
        }
    }
    if (!(current.groups & (1u << group))) return 0;
    int saved = errno;
    busy = 1;
    int wanted_site = current.has_site || log_fd >= 0 || current.caller[0];
    char frames_text[1024];
    int caller_matches = 1;
    uint64_t site = 0;
    if (wanted_site) {
        site = site_of(log_fd >= 0 ? frames_text : NULL, sizeof frames_text, &caller_matches);
        site = fnv(site, group_names[group], strlen(group_names[group]));
    }
    int error = 0;
    if (caller_matches) {
        take();
        uint64_t number = ++call_count;
        if (control) __atomic_add_fetch(&control->calls, 1, __ATOMIC_RELAXED);
        if (log_fd >= 0 && first_sight(site)) {
            char line[1400];
            size_t at = log_head(line, sizeof line, "site ", group, symbol, site);
            at = append(line, at, sizeof line, frames_text);
            at = append(line, at, sizeof line, "\n");
            raw_write(line, at);
        }
        int fail = 0;
        if (current.nth && number == current.nth) fail = 1;
        if (current.has_site && !site_fired && site == current.site) { fail = 1; site_fired = 1; }
        if (current.probability > 0 && (double)(next_random() >> 11) / 9007199254740992.0 < current.probability) fail = 1;
        if (fail) {
            error = current.error ? current.error : default_errno[group];
            if (control) __atomic_add_fetch(&control->faults, 1, __ATOMIC_RELAXED);
            char line[200];
            size_t at = log_head(line, sizeof line, "fail ", group, symbol, site);
            at = append(line, at, sizeof line, " ");
            at = append(line, at, sizeof line, errno_name(error));
            at = append(line, at, sizeof line, " call ");
            at = append_decimal(line, at, sizeof line, (long)number);
            at = append(line, at, sizeof line, "\n");
            raw_write(line, at);
        }
        give();
    }
    busy = 0;
    errno = saved;
    return error;
}

/* The next definition (libc's); dlsym may allocate, which must not count or fail. */
#define NEXT(name)                                                           \
    static __typeof__(&name) real_##name;                                                       \
    if (!real_##name) {                                                            \
        int was_busy = busy;                                                       \
        busy = 1;                                                                  \
        real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name);                               \
        busy = was_busy;                                                           \
    }

/* Allocation: glibc's own entry points, so no dlsym (which allocates) is needed. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t size) {
    int error = should_fail(G_MALLOC, "malloc");
    if (error) { errno = error; return NULL; }
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    int error = should_fail(G_MALLOC, "calloc");
    if (error) { errno = error; return NULL; }
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    int error = should_fail(G_MALLOC, "realloc");
    if (error) { errno = error; return NULL; }
    return __libc_realloc(pointer, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    int error = should_fail(G_MALLOC, "posix_memalign");
    if (error) return error;
    if (alignment < sizeof(void *) || (alignment & (alignment - 1))) return EINVAL;
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    int error = should_fail(G_MALLOC, "aligned_alloc");
    if (error) { errno = error; return NULL; }
    return __libc_memalign(alignment, size);
}

/* The open family: the mode is read only when the flags say it is there. */
static mode_t mode_from(int flags, va_list arguments) {
    return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? (mode_t)va_arg(arguments, int) : 0;
}

#define OPEN_HOOK(name)                                                            \
    int name(const char *path, int flags, ...) {                                   \
        va_list arguments;                                                         \
        va_start(arguments, flags);                                                \
        mode_t mode = mode_from(flags, arguments);                                 \
        va_end(arguments);                                                         \
        int error = should_fail(G_OPEN, #name);                                    \
        if (error) { errno = error; return -1; }                                   \
        NEXT(name);                               \
        return real_##name(path, flags, mode);                                     \
    }
OPEN_HOOK(open)
OPEN_HOOK(open64)

#define OPENAT_HOOK(name)                                                          \
    int name(int directory, const char *path, int flags, ...) {                    \
        va_list arguments;                                                         \
        va_start(arguments, flags);                                                \
        mode_t mode = mode_from(flags, arguments);                                 \
        va_end(arguments);                                                         \
        int error = should_fail(G_OPEN, #name);                                    \
        if (error) { errno = error; return -1; }                                   \
        NEXT(name);                          \
        return real_##name(directory, path, flags, mode);                          \
    }
OPENAT_HOOK(openat)
OPENAT_HOOK(openat64)

/* The plain calls: fail with -1 and the errno, or pass every argument on. */
#define HOOK(group, result, name, parameters, arguments)                           \
    result name parameters {                                                       \
        int error = should_fail(group, #name);                                     \
        if (error) { errno = error; return (result)-1; }                           \
        NEXT(name);                                         \
        return real_##name arguments;                                              \
    }

HOOK(G_READ, ssize_t, read, (int fd, void *buffer, size_t count), (fd, buffer, count))
HOOK(G_READ, ssize_t, pread, (int fd, void *buffer, size_t count, off_t offset), (fd, buffer, count, offset))
HOOK(G_READ, ssize_t, pread64, (int fd, void *buffer, size_t count, off_t offset), (fd, buffer, count, offset))
HOOK(G_WRITE, ssize_t, write, (int fd, const void *buffer, size_t count), (fd, buffer, count))
HOOK(G_WRITE, ssize_t, pwrite, (int fd, const void *buffer, size_t count, off_t offset), (fd, buffer, count, offset))
HOOK(G_WRITE, ssize_t, pwrite64, (int fd, const void *buffer, size_t count, off_t offset), (fd, buffer, count, offset))
HOOK(G_WRITE, ssize_t, writev, (int fd, const struct iovec *vector, int count), (fd, vector, count))
HOOK(G_FSYNC, int, fsync, (int fd), (fd))
HOOK(G_FSYNC, int, fdatasync, (int fd), (fd))
HOOK(G_RENAME, int, rename, (const char *from, const char *to), (from, to))
HOOK(G_RENAME, int, renameat, (int from_directory, const char *from, int to_directory, const char *to),
     (from_directory, from, to_directory, to))
HOOK(G_RENAME, int, renameat2, (int from_directory, const char *from, int to_directory, const char *to, unsigned flags),
     (from_directory, from, to_directory, to, flags))
HOOK(G_SOCKET, int, socket, (int domain, int type, int protocol), (domain, type, protocol))
HOOK(G_SOCKET, int, socketpair, (int domain, int type, int protocol, int pair[2]), (domain, type, protocol, pair))
HOOK(G_CONNECT, int, connect, (int fd, const struct sockaddr *address, socklen_t length), (fd, address, length))
HOOK(G_SEND, ssize_t, send, (int fd, const void *buffer, size_t count, int flags), (fd, buffer, count, flags))
HOOK(G_SEND, ssize_t, sendto, (int fd, const void *buffer, size_t count, int flags, const struct sockaddr *to, socklen_t length),
     (fd, buffer, count, flags, to, length))
HOOK(G_SEND, ssize_t, sendmsg, (int fd, const struct msghdr *message, int flags), (fd, message, flags))
HOOK(G_RECV, ssize_t, recv, (int fd, void *buffer, size_t count, int flags), (fd, buffer, count, flags))
HOOK(G_RECV, ssize_t, recvfrom, (int fd, void *buffer, size_t count, int flags, struct sockaddr *from, socklen_t *length),
     (fd, buffer, count, flags, from, length))
HOOK(G_RECV, ssize_t, recvmsg, (int fd, struct msghdr *message, int flags), (fd, message, flags))
HOOK(G_POLL, int, poll, (struct pollfd *fds, nfds_t count, int timeout), (fds, count, timeout))
HOOK(G_POLL, int, ppoll, (struct pollfd *fds, nfds_t count, const struct timespec *timeout, const sigset_t *mask),
     (fds, count, timeout, mask))
