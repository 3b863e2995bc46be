/*
 * replay-check: prove the umockdev replay recipes in UMOCKDEV.md.
 *
 *   replay-check capture OUT.pgm        (vfs5011 capture.ioctl)
 *   replay-check synaptics [--no-suspend] (synaptics custom.pcapng)
 *
 * Must run under umockdev-run with FP_DEVICE_EMULATION=1 and
 * FP_DRIVERS_WHITELIST=<driver>; see UMOCKDEV.md for the exact commands.
 * Exits 0 on success, 1 on any failure.
 *
 * Build:
 *   gcc -O2 -Wall -Wextra -o /tmp/replay-check Benchmarks/c-baseline/replay-check.c \
 *       $(pkg-config --cflags --libs libfprint-2)
 */
#include <fprint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gint64 t0;

static double
elapsed_ms (void)
{
  return (g_get_monotonic_time () - t0) / 1000.0;
}

static int
fail (const char *what, GError *error)
{
  fprintf (stderr, "replay-check: %s failed: %s\n", what,
           error ? error->message : "(no error)");
  return 1;
}

static FpDevice *
first_device (FpContext *ctx, const char *want_driver)
{
  GPtrArray *devices = fp_context_get_devices (ctx);

  if (!devices || devices->len == 0)
    {
      fprintf (stderr, "replay-check: no device found\n");
      return NULL;
    }
  FpDevice *dev = g_ptr_array_index (devices, 0);
  if (g_strcmp0 (fp_device_get_driver (dev), want_driver) != 0)
    {
      fprintf (stderr, "replay-check: first device has driver %s, expected %s\n",
               fp_device_get_driver (dev), want_driver);
      return NULL;
    }
  return g_object_ref (dev);
}

/* ---- vfs5011: open, capture (wait_for_finger = TRUE), close ---- */

static int
do_capture (FpContext *ctx, const char *out_path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(FpDevice) dev = first_device (ctx, "vfs5011");
  g_autoptr(FpImage) img = NULL;

  if (!dev)
    return 1;
  if (!fp_device_has_feature (dev, FP_DEVICE_FEATURE_CAPTURE))
    return fail ("feature check (capture)", NULL);

  if (!fp_device_open_sync (dev, NULL, &error))
    return fail ("open", error);
  fprintf (stderr, "replay-check: opened at %.1f ms\n", elapsed_ms ());

  img = fp_device_capture_sync (dev, TRUE, NULL, &error);
  if (!img)
    return fail ("capture", error);
  fprintf (stderr, "replay-check: captured at %.1f ms\n", elapsed_ms ());

  if (!fp_device_close_sync (dev, NULL, &error))
    return fail ("close", error);

  gsize len = 0;
  const guchar *data = fp_image_get_data (img, &len);
  guint w = fp_image_get_width (img), h = fp_image_get_height (img);
  if (len != (gsize) w * h)
    {
      fprintf (stderr, "replay-check: image data %zu bytes, expected %u*%u\n", len, w, h);
      return 1;
    }

  FILE *f = fopen (out_path, "wb");
  if (!f)
    {
      perror (out_path);
      return 1;
    }
  fprintf (f, "P5\n%u %u\n255\n", w, h);
  if (fwrite (data, 1, len, f) != len || fclose (f) != 0)
    {
      perror (out_path);
      return 1;
    }
  printf ("capture ok: %ux%u written to %s (%.1f ms)\n", w, h, out_path, elapsed_ms ());
  return 0;
}

/* ---- synaptics: open, clear storage, enroll, verify (+suspend/resume), delete, close ---- */

static int progress_calls, progress_retries;

static void
enroll_progress (FpDevice *dev, gint completed_stages, FpPrint *print,
                 gpointer user_data, GError *error)
{
  (void) print;
  (void) user_data;
  progress_calls++;
  if (error)
    progress_retries++;
  fprintf (stderr, "replay-check: enroll progress %d (finger-status 0x%x)%s%s\n",
           completed_stages, fp_device_get_finger_status (dev),
           error ? " retry: " : "", error ? error->message : "");
}

static gboolean suspend_ok = TRUE;

static gboolean
suspend_resume_cb (gpointer user_data)
{
  FpDevice *dev = user_data;
  g_autoptr(GError) error = NULL;

  if (!fp_device_suspend_sync (dev, NULL, &error))
    {
      fprintf (stderr, "replay-check: suspend failed: %s\n", error->message);
      suspend_ok = FALSE;
      return G_SOURCE_REMOVE;
    }
  if (!fp_device_resume_sync (dev, NULL, &error))
    {
      fprintf (stderr, "replay-check: resume failed: %s\n", error->message);
      suspend_ok = FALSE;
    }
  fprintf (stderr, "replay-check: suspend/resume done at %.1f ms\n", elapsed_ms ());
  return G_SOURCE_REMOVE;
}

static int
do_synaptics (FpContext *ctx, gboolean with_suspend)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(FpDevice) dev = first_device (ctx, "synaptics");
  FpPrint *template = NULL; /* floating ref, consumed by enroll */
  g_autoptr(FpPrint) enrolled = NULL;
  g_autoptr(FpPrint) scanned = NULL;
  gboolean match = FALSE;

  if (!dev)
    return 1;
  if (fp_device_has_feature (dev, FP_DEVICE_FEATURE_CAPTURE) ||
      !fp_device_has_feature (dev, FP_DEVICE_FEATURE_IDENTIFY) ||
      !fp_device_has_feature (dev, FP_DEVICE_FEATURE_VERIFY) ||
      fp_device_has_feature (dev, FP_DEVICE_FEATURE_DUPLICATES_CHECK) ||
      !fp_device_has_feature (dev, FP_DEVICE_FEATURE_STORAGE) ||
      !fp_device_has_feature (dev, FP_DEVICE_FEATURE_STORAGE_DELETE) ||
      !fp_device_has_feature (dev, FP_DEVICE_FEATURE_STORAGE_CLEAR))
    return fail ("feature check", NULL);

  if (!fp_device_open_sync (dev, NULL, &error))
    return fail ("open", error);
  if (!fp_device_clear_storage_sync (dev, NULL, &error))
    return fail ("clear_storage", error);

  /* Bare template: no finger, no username, no enroll date, no description.
   * The driver derives the on-chip user id from these, and the recording
   * contains exactly "FP1-00000000-0-00000000-nobody".
   * fp_print_new returns a FLOATING reference (FpPrint is GInitiallyUnowned);
   * enroll sinks it and returns the very same object (+1 ref), so the
   * template must NOT be unreffed separately. */
  template = fp_print_new (dev);
  enrolled = fp_device_enroll_sync (dev, template, NULL, enroll_progress, NULL, &error);
  if (!enrolled)
    return fail ("enroll", error);
  fprintf (stderr, "replay-check: enrolled '%s' after %d progress calls (%d retries) at %.1f ms\n",
           fp_print_get_description (enrolled), progress_calls, progress_retries, elapsed_ms ());

  /* The recording contains a suspend/resume cycle during verify: queue it
   * as a high-priority idle so it runs inside verify_sync's loop iteration. */
  if (with_suspend)
    g_idle_add_full (G_PRIORITY_HIGH, suspend_resume_cb, dev, NULL);
  if (!fp_device_verify_sync (dev, enrolled, NULL, NULL, NULL, &match, &scanned, &error))
    return fail ("verify", error);
  if (!match || !suspend_ok)
    {
      fprintf (stderr, "replay-check: verify did not match (match=%d suspend_ok=%d)\n",
               match, suspend_ok);
      return 1;
    }

  if (!fp_device_delete_print_sync (dev, enrolled, NULL, &error))
    return fail ("delete_print", error);
  if (!fp_device_close_sync (dev, NULL, &error))
    return fail ("close", error);

  printf ("synaptics ok: enroll (%d progress, %d retry), verify match, delete (%.1f ms)\n",
          progress_calls, progress_retries, elapsed_ms ());
  return 0;
}

int
main (int argc, char **argv)
{
  g_autoptr(FpContext) ctx = NULL;
  int rc;

  t0 = g_get_monotonic_time ();
  if (argc == 3 && strcmp (argv[1], "capture") == 0)
    {
      ctx = fp_context_new ();
      rc = do_capture (ctx, argv[2]);
    }
  else if ((argc == 2 || argc == 3) && strcmp (argv[1], "synaptics") == 0)
    {
      gboolean with_suspend = !(argc == 3 && strcmp (argv[2], "--no-suspend") == 0);
      ctx = fp_context_new ();
      rc = do_synaptics (ctx, with_suspend);
    }
  else
    {
      fprintf (stderr, "usage: %s capture OUT.pgm | synaptics [--no-suspend]\n", argv[0]);
      return 2;
    }
  return rc;
}
