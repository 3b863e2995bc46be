#ifndef FINGERSEAL_CFPRINT_SHIM_H
#define FINGERSEAL_CFPRINT_SHIM_H
#include <libfprint-2/fprint.h>
#include <glib.h>
#include <gio/gio.h>

/* g_object_unref takes gpointer; a typed wrapper keeps Swift call sites honest. */
static inline void fs_g_object_unref(void *object) {
    if (object) g_object_unref(object);
}
#endif

#ifndef FINGERSEAL_CFPRINT_SHIM_TAKE
#define FINGERSEAL_CFPRINT_SHIM_TAKE
/* FpPrint is GInitiallyUnowned: fp_print_new hands out a floating reference. Make any
 * print we keep a plain owned reference, floating or not, without adding a second one. */
static inline FpPrint *fs_own_print(FpPrint *print) {
    if (print && g_object_is_floating(print)) g_object_ref_sink(print);
    return print;
}
static inline void *fs_g_object_ref(void *object) { return object ? g_object_ref(object) : NULL; }
static inline GPtrArray *fs_object_array_new(void) { return g_ptr_array_new_with_free_func(g_object_unref); }
static inline void fs_object_array_add(GPtrArray *array, void *object) { g_ptr_array_add(array, g_object_ref(object)); }
static inline void *fs_ptr_array_index(GPtrArray *array, guint index) { return g_ptr_array_index(array, index); }
static inline guint fs_ptr_array_length(GPtrArray *array) { return array->len; }
#endif

#ifndef FINGERSEAL_CFPRINT_SHIM_IDLE
#define FINGERSEAL_CFPRINT_SHIM_IDLE
/* Runs fn on whichever thread iterates the global default context (our worker). Unlike
 * g_main_context_invoke, never runs fn on the calling thread. */
static inline void fs_default_context_post(GSourceFunc fn, gpointer data) {
    GSource *source = g_idle_source_new();
    g_source_set_priority(source, G_PRIORITY_DEFAULT);
    g_source_set_callback(source, fn, data, NULL);
    g_source_attach(source, NULL);
    g_source_unref(source);
}
#endif

#ifndef FINGERSEAL_CFPRINT_SHIM_NOTIFY
#define FINGERSEAL_CFPRINT_SHIM_NOTIFY
/* "notify::finger-status" with a typed handler (GCallback is untyped in C). */
typedef void (*fs_notify_cb)(GObject *object, GParamSpec *spec, gpointer data);
static inline gulong fs_connect_finger_status(FpDevice *device, fs_notify_cb callback, gpointer data) {
    return g_signal_connect_data(device, "notify::finger-status", G_CALLBACK(callback), data, NULL, 0);
}
static inline void fs_disconnect(FpDevice *device, gulong handler) {
    if (handler) g_signal_handler_disconnect(device, handler);
}
#endif

#ifndef FINGERSEAL_CFPRINT_SHIM_LOG
#define FINGERSEAL_CFPRINT_SHIM_LOG
/* GLib's default log writer puts debug and info messages on standard output, so with
 * G_MESSAGES_DEBUG=all libfprint's and GLib's lines would mix into what a program prints
 * there. Every level goes to standard error instead (the journal, under systemd). */
static inline void fs_log_to_stderr(void) { g_log_writer_default_set_use_stderr(TRUE); }
#endif

#ifndef FINGERSEAL_CFPRINT_SHIM_THREAD_NAME
#define FINGERSEAL_CFPRINT_SHIM_THREAD_NAME
#include <sys/prctl.h>
/* prctl is variadic: Swift cannot call it. Names the calling thread (15 bytes at most). */
static inline void fs_name_this_thread(const char *name) { prctl(PR_SET_NAME, name, 0, 0, 0); }
#include <sys/syscall.h>
#include <unistd.h>
/* The calling thread's kernel id (glibc's gettid is hidden from Swift's Glibc module). */
static inline pid_t fs_thread_id(void) { return (pid_t)syscall(SYS_gettid); }
#endif

#ifndef FINGERSEAL_CFPRINT_SHIM_REMOVED
#define FINGERSEAL_CFPRINT_SHIM_REMOVED
/* FpDevice's "removed" property (libfprint sets it when the device is unplugged, while open
 * or not); g_object_get is variadic. */
static inline gboolean fs_device_removed(FpDevice *device) {
    gboolean removed = FALSE;
    g_object_get(device, "removed", &removed, NULL);
    return removed;
}
#endif
