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
