#ifndef FINGERSEAL_CGTK_SHIM_H
#define FINGERSEAL_CGTK_SHIM_H
/* GTK 4 (Debian 12: 4.8) for PromptDialog. Typed static-inline shims for what Swift cannot
 * call: macros (g_signal_connect, type checks) and variadic functions (g_object_new,
 * gtk_accessible_update_property). */
#include <gtk/gtk.h>
#include <gdk/x11/gdkx.h>
#include <gdk/wayland/gdkwayland.h>
#include <glib-unix.h>
#include <string.h>

/* gtk_init_check is a macro (an ABI check around the real call). */
static inline gboolean fs_gtk_init_check(void) { return gtk_init_check(); }

/* Signal handlers, one typedef per C signature we connect (G_CALLBACK is untyped). */
typedef void (*fs_gtk_void_handler)(gpointer instance, gpointer data);
typedef gboolean (*fs_gtk_bool_handler)(gpointer instance, gpointer data);
/* "notify::PROPERTY": the instance, the property's GParamSpec, the data. */
typedef void (*fs_gtk_notify_handler)(gpointer instance, gpointer pspec, gpointer data);

static inline gulong fs_gtk_connect_void(gpointer instance, const char *signal, fs_gtk_void_handler handler, gpointer data) {
    return g_signal_connect_data(instance, signal, G_CALLBACK(handler), data, NULL, 0);
}
static inline gulong fs_gtk_connect_bool(gpointer instance, const char *signal, fs_gtk_bool_handler handler, gpointer data) {
    return g_signal_connect_data(instance, signal, G_CALLBACK(handler), data, NULL, 0);
}
static inline gulong fs_gtk_connect_notify(gpointer instance, const char *signal, fs_gtk_notify_handler handler, gpointer data) {
    return g_signal_connect_data(instance, signal, G_CALLBACK(handler), data, NULL, 0);
}
/* g_signal_handlers_disconnect_by_data is a macro. */
static inline void fs_gtk_disconnect_all(gpointer instance, gpointer data) {
    if (instance) g_signal_handlers_disconnect_matched(instance, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL, data);
}

/* The accessible role is a construct-only property: only g_object_new (variadic) sets it. */
static inline GtkWidget *fs_gtk_new_with_role(GType type, GtkAccessibleRole role) {
    return GTK_WIDGET(g_object_new(type, "accessible-role", role, NULL));
}

/* gtk_accessible_update_property and _reset_property take (property, value) pairs ending in -1. */
static inline void fs_gtk_accessible_set_string(gpointer accessible, GtkAccessibleProperty property, const char *value) {
    gtk_accessible_update_property(GTK_ACCESSIBLE(accessible), property, value, -1);
}
static inline void fs_gtk_accessible_set_bool(gpointer accessible, GtkAccessibleProperty property, gboolean value) {
    gtk_accessible_update_property(GTK_ACCESSIBLE(accessible), property, value, -1);
}
/* gtk_accessible_update_state is variadic too. */
static inline void fs_gtk_accessible_set_hidden(gpointer accessible, gboolean hidden) {
    gtk_accessible_update_state(GTK_ACCESSIBLE(accessible), GTK_ACCESSIBLE_STATE_HIDDEN, hidden, -1);
}
static inline void fs_gtk_accessible_reset(gpointer accessible, GtkAccessibleProperty property) {
    gtk_accessible_reset_property(GTK_ACCESSIBLE(accessible), property);
}
static inline void fs_gtk_accessible_reset_relation(gpointer accessible, GtkAccessibleRelation relation) {
    gtk_accessible_reset_relation(GTK_ACCESSIBLE(accessible), relation);
}

/* The secure (mlocked) buffer behind a GtkPasswordEntry: its GtkText delegate's buffer. NULL
 * when GTK changed its insides. */
static inline GtkEntryBuffer *fs_gtk_password_entry_buffer(GtkWidget *entry) {
    GtkEditable *delegate = gtk_editable_get_delegate(GTK_EDITABLE(entry));
    if (!delegate || !GTK_IS_TEXT(delegate)) return NULL;
    GtkEntryBuffer *buffer = gtk_text_get_buffer(GTK_TEXT(delegate));
    return (buffer && GTK_IS_PASSWORD_ENTRY_BUFFER(buffer)) ? buffer : NULL;
}
/* Not optimised away like a memset before free. */
static inline void fs_gtk_wipe(void *bytes, size_t count) {
    if (bytes && count) explicit_bzero(bytes, count);
}

/* A foreign parent (xdg-desktop-portal's parent_window). Each returns FALSE when the surface
 * is not on that backend. */
static inline gboolean fs_gtk_set_transient_for_x11(GdkSurface *surface, unsigned long parent) {
    if (!surface || !GDK_IS_X11_SURFACE(surface)) return FALSE;
    Display *display = gdk_x11_display_get_xdisplay(gdk_surface_get_display(surface));
    XSetTransientForHint(display, gdk_x11_surface_get_xid(surface), (Window)parent);
    return TRUE;
}
static inline gboolean fs_gtk_set_transient_for_wayland(GdkSurface *surface, const char *handle) {
    if (!surface || !GDK_IS_WAYLAND_TOPLEVEL(surface)) return FALSE;
    return gdk_wayland_toplevel_set_transient_for_exported(GDK_TOPLEVEL(surface), handle);
}
/* The surface's X11 window id, 0 on another backend. */
static inline unsigned long fs_gtk_x11_window(GdkSurface *surface) {
    return (surface && GDK_IS_X11_SURFACE(surface)) ? (unsigned long)gdk_x11_surface_get_xid(surface) : 0;
}
#endif
