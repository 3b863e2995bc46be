#ifndef FINGERSEAL_CCURL_SHIM_H
#define FINGERSEAL_CCURL_SHIM_H
#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

/* libcurl is loaded when the first request is made, not at start-up: linked, it costs every
 * fingerseal and fingerseal-scan process about 9 ms of loading some 40 libraries (TLS,
 * Kerberos, LDAP, SSH...) that only a sign-in or a refresh needs. The usual dlopen pattern
 * (systemd does the same for its optional libraries); the headers still type every call. */
struct fs_curl_api {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    CURLcode (*easy_perform)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
};

/* Function-local statics: Swift emits a header's inline functions, not its global variables. */
struct fs_curl_state { struct fs_curl_api api; int ok; };
static inline struct fs_curl_state *fs_curl_state(void) {
    static struct fs_curl_state state;
    return &state;
}

static inline void fs_curl_load_once(void) {
    void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    struct fs_curl_api api = {
        (CURLcode (*)(long))dlsym(lib, "curl_global_init"),
        (CURL *(*)(void))dlsym(lib, "curl_easy_init"),
        (void (*)(CURL *))dlsym(lib, "curl_easy_cleanup"),
        (CURLcode (*)(CURL *))dlsym(lib, "curl_easy_perform"),
        (const char *(*)(CURLcode))dlsym(lib, "curl_easy_strerror"),
        (CURLcode (*)(CURL *, CURLoption, ...))dlsym(lib, "curl_easy_setopt"),
        (CURLcode (*)(CURL *, CURLINFO, ...))dlsym(lib, "curl_easy_getinfo"),
        (struct curl_slist *(*)(struct curl_slist *, const char *))dlsym(lib, "curl_slist_append"),
        (void (*)(struct curl_slist *))dlsym(lib, "curl_slist_free_all"),
    };
    if (!api.global_init || !api.easy_init || !api.easy_cleanup || !api.easy_perform || !api.easy_strerror
        || !api.easy_setopt || !api.easy_getinfo || !api.slist_append || !api.slist_free_all) return;
    fs_curl_state()->api = api;
    fs_curl_state()->ok = 1;
}

/* 1 once libcurl is loaded (thread-safe); 0 when it is missing or incomplete. */
static inline int fs_curl_load(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fs_curl_load_once);
    return fs_curl_state()->ok;
}
#define fs_curl_loaded (fs_curl_state()->api)

static inline CURLcode fs_curl_global_init(long flags) {
    return fs_curl_load() ? fs_curl_loaded.global_init(flags) : CURLE_FAILED_INIT;
}
static inline CURL *fs_curl_easy_init(void) { return fs_curl_load() ? fs_curl_loaded.easy_init() : NULL; }
static inline void fs_curl_easy_cleanup(CURL *h) { if (h && fs_curl_load()) fs_curl_loaded.easy_cleanup(h); }
static inline CURLcode fs_curl_easy_perform(CURL *h) { return fs_curl_load() ? fs_curl_loaded.easy_perform(h) : CURLE_FAILED_INIT; }
static inline const char *fs_curl_easy_strerror(CURLcode c) { return fs_curl_load() ? fs_curl_loaded.easy_strerror(c) : NULL; }
static inline struct curl_slist *fs_curl_slist_append(struct curl_slist *l, const char *s) {
    return fs_curl_load() ? fs_curl_loaded.slist_append(l, s) : NULL;
}
static inline void fs_curl_slist_free_all(struct curl_slist *l) { if (l && fs_curl_load()) fs_curl_loaded.slist_free_all(l); }
/* Wipes every line of a header list, then frees it: curl_slist_append keeps a strdup'ed copy
 * of each line (an Authorization header among them), and curl_slist_free_all frees them
 * without wiping (lib/slist.c). */
static inline void fs_curl_slist_wipe_free_all(struct curl_slist *l) {
    for (struct curl_slist *item = l; item; item = item->next) {
        if (item->data) explicit_bzero(item->data, strlen(item->data));
    }
    fs_curl_slist_free_all(l);
}

/* curl_easy_setopt and curl_easy_getinfo are variadic; these typed shims are
 * the only way Swift reaches them. */
static inline CURLcode fs_curl_setopt_long(CURL *h, CURLoption o, long v) {
    return fs_curl_load() ? fs_curl_loaded.easy_setopt(h, o, v) : CURLE_FAILED_INIT;
}
static inline CURLcode fs_curl_setopt_ptr(CURL *h, CURLoption o, const void *v) {
    return fs_curl_load() ? fs_curl_loaded.easy_setopt(h, o, v) : CURLE_FAILED_INIT;
}
static inline CURLcode fs_curl_setopt_off(CURL *h, CURLoption o, curl_off_t v) {
    return fs_curl_load() ? fs_curl_loaded.easy_setopt(h, o, v) : CURLE_FAILED_INIT;
}
static inline CURLcode fs_curl_setopt_write(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
    return fs_curl_load() ? fs_curl_loaded.easy_setopt(h, CURLOPT_WRITEFUNCTION, f) : CURLE_FAILED_INIT;
}
static inline CURLcode fs_curl_setopt_header(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) {
    return fs_curl_load() ? fs_curl_loaded.easy_setopt(h, CURLOPT_HEADERFUNCTION, f) : CURLE_FAILED_INIT;
}
static inline CURLcode fs_curl_getinfo_long(CURL *h, CURLINFO i, long *v) {
    return fs_curl_load() ? fs_curl_loaded.easy_getinfo(h, i, v) : CURLE_FAILED_INIT;
}
#endif
