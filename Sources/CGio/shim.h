#ifndef FINGERSEAL_CGIO_SHIM_H
#define FINGERSEAL_CGIO_SHIM_H
/* GIO's D-Bus (GDBus) and GLib's main loop, for the session agent. Typed shims for what Swift
 * cannot call: variadic GVariant constructors and macros. */
#include <glib.h>
#include <glib-unix.h>
#include <gio/gio.h>
#include <gio/gunixfdlist.h>

static inline void fs_gio_unref(void *object) {
    if (object) g_object_unref(object);
}

/* GVariant builders without varargs, one per type the agent's interface uses. */
static inline GVariant *fs_variant_string(const char *value) { return g_variant_new_string(value); }
static inline GVariant *fs_variant_object_path(const char *value) { return g_variant_new_object_path(value); }
static inline GVariant *fs_variant_bool(int value) { return g_variant_new_boolean(value ? TRUE : FALSE); }
static inline GVariant *fs_variant_uint32(guint32 value) { return g_variant_new_uint32(value); }
static inline GVariant *fs_variant_int32(gint32 value) { return g_variant_new_int32(value); }
static inline GVariant *fs_variant_int64(gint64 value) { return g_variant_new_int64(value); }
static inline GVariant *fs_variant_uint64(guint64 value) { return g_variant_new_uint64(value); }
static inline GVariant *fs_variant_handle(gint32 value) { return g_variant_new_handle(value); }
static inline GVariant *fs_variant_boxed(GVariant *value) { return g_variant_new_variant(value); }
static inline GVariant *fs_variant_dict_entry(GVariant *key, GVariant *value) { return g_variant_new_dict_entry(key, value); }
static inline GVariant *fs_variant_array(const char *element_type, GVariant *const *children, gsize count) {
    return g_variant_new_array(G_VARIANT_TYPE(element_type), children, count);
}
static inline GVariant *fs_variant_tuple(GVariant *const *children, gsize count) { return g_variant_new_tuple(children, count); }
static inline GVariant *fs_variant_bytes(const void *bytes, gsize count) {
    return g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, bytes, count, 1);
}

/* The type string of a value ("s", "a{sv}", ...): owned by the value. */
static inline const char *fs_variant_type(GVariant *value) { return g_variant_get_type_string(value); }

/* Readers of basic values. */
static inline const char *fs_variant_get_string(GVariant *value) { return g_variant_get_string(value, NULL); }
static inline gint32 fs_variant_get_handle(GVariant *value) { return g_variant_get_handle(value); }

/* The main loop's cross-thread hand-over: `fn` runs on the thread that iterates the default
 * context (the agent's main thread), never on the caller's. */
static inline void fs_main_post(GSourceFunc fn, gpointer data) {
    GSource *source = g_idle_source_new();
    g_source_set_priority(source, G_PRIORITY_DEFAULT);
    g_source_set_callback(source, fn, data, NULL);
    g_source_attach(source, NULL);
    g_source_unref(source);
}

/* The connection's "closed" signal (the bus went away), which Swift cannot connect by name. */
typedef void (*fs_closed_callback)(GDBusConnection *connection, gboolean remote_peer_vanished, GError *error, gpointer data);
static inline gulong fs_connection_when_closed(GDBusConnection *connection, fs_closed_callback callback, gpointer data) {
    return g_signal_connect(connection, "closed", G_CALLBACK(callback), data);
}

/* Reading a GError's parts, then freeing it. */
static inline const char *fs_error_message(GError *error) { return error ? error->message : ""; }
#endif
