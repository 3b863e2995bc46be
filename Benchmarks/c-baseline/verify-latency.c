/*
 * verify-latency: C baseline for the verify-latency benchmark.
 *
 *   verify-latency virtual_device|virtual_image [runs]   (runs default 50)
 *
 * Drives libfprint-2's sync API directly on libfprint's virtual drivers and
 * prints one line:
 *   c-baseline <driver>: median X.XX ms, p95 Y.YY ms over N runs
 *
 * Latency = wall time of fp_device_verify_sync(), measured from just before the
 * main (libfprint) thread asks the helper thread to present the finger until
 * verify_sync returns with the result.
 *
 * Threads: ALL libfprint calls run on the main thread (the sync calls iterate
 * GLib's global default context). A helper thread plays the "finger": it talks
 * to the driver's unix socket, which libfprint creates in fp_device_open; this
 * program never creates it, it only connects.
 *
 * virtual_image needs the fixture payloads whorl.fpimg and
 * whorl_dx12_dy-8_rot10.fpimg: taken from $FIXTURES_DIR, else
 * ../shared/fixtures/prints, else /work/shared/fixtures/prints.
 *
 * Build (from the repo root):
 *   gcc -O2 -Wall -Wextra -o /tmp/verify-latency Benchmarks/c-baseline/verify-latency.c \
 *       $(pkg-config --cflags --libs libfprint-2) -lpthread
 */
#include <fprint.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define SOCKET_TIMEOUT_S  5    /* connect / send / recv on the driver socket */
#define HELPER_TIMEOUT_S  10   /* main thread waiting for the helper */
#define ACTION_TIMEOUT_S  30   /* any single libfprint sync call */
#define FINGER_ID         "fingerseal-bench-1"

typedef enum { DRV_DEVICE, DRV_IMAGE } Driver;

/* State shared between the main (libfprint) thread and the helper thread. */
static struct
{
  GMutex  lock;
  GCond   cond;
  /* Jobs: main posts, helper executes in order. */
  int     posted;
  int     finished;
  gboolean quit;
  gboolean helper_failed;
  /* Current job description. */
  const char *cmd;      /* virtual_device: command to send */
  const void *img;      /* virtual_image: payload to send */
  gsize       img_len;
  int         repeat;   /* how many times to send it */
  /* virtual_image: incremented on the main thread every time the device
   * starts waiting for a finger (finger-status gains FP_FINGER_STATUS_NEEDED). */
  int     needed_gen;
} S;

static Driver driver;
static char sock_path[PATH_MAX];
static int image_fd = -1; /* virtual_image: the one persistent connection */

static void
die (const char *fmt, ...) G_GNUC_PRINTF (1, 2) G_GNUC_NORETURN;

static void
die (const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  fputs ("verify-latency: ", stderr);
  vfprintf (stderr, fmt, ap);
  fputc ('\n', stderr);
  va_end (ap);
  if (sock_path[0])
    {
      unlink (sock_path);
      char *dir = g_path_get_dirname (sock_path);
      rmdir (dir);
      g_free (dir);
    }
  exit (1);
}

/* ---------------------------------------------------------------- sockets */

static int
connect_socket (void)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  struct timeval tv = { .tv_sec = SOCKET_TIMEOUT_S };
  int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

  if (fd < 0)
    return -1;
  /* SO_SNDTIMEO also bounds a blocking connect() on AF_UNIX. */
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  g_strlcpy (addr.sun_path, sock_path, sizeof addr.sun_path);
  if (connect (fd, (struct sockaddr *) &addr, sizeof addr) < 0)
    {
      int e = errno;
      close (fd);
      errno = e;
      return -1;
    }
  return fd;
}

static gboolean
send_all (int fd, const void *buf, gsize len)
{
  const char *p = buf;

  while (len > 0)
    {
      ssize_t n = send (fd, p, len, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE; /* includes EAGAIN = SO_SNDTIMEO expired */
      p += n;
      len -= n;
    }
  return TRUE;
}

/* virtual_device: ONE command per connection, no newline. The driver closes
 * the connection after it has read and queued (or executed) the command, so
 * EOF = "taken". Never open the next connection before EOF: a new connection
 * makes the driver drop the previous one, losing its command. */
static gboolean
send_device_command (const char *cmd)
{
  char buf[256];
  ssize_t n;
  int fd = connect_socket ();

  if (fd < 0)
    {
      fprintf (stderr, "verify-latency: connect %s: %s\n", sock_path, strerror (errno));
      return FALSE;
    }
  if (!send_all (fd, cmd, strlen (cmd)))
    {
      fprintf (stderr, "verify-latency: send '%s': %s\n", cmd, strerror (errno));
      close (fd);
      return FALSE;
    }
  while ((n = recv (fd, buf, sizeof buf, 0)) > 0)
    ; /* LIST would answer here; everything else answers nothing */
  if (n < 0)
    {
      fprintf (stderr, "verify-latency: waiting for EOF after '%s': %s\n", cmd,
               errno == EAGAIN ? "timed out" : strerror (errno));
      close (fd);
      return FALSE;
    }
  close (fd);
  return TRUE;
}

/* ---------------------------------------------------------------- helper thread */

static gpointer
helper_main (gpointer data)
{
  (void) data;
  int seen_gen = 0;

  g_mutex_lock (&S.lock);
  for (;;)
    {
      while (!S.quit && S.finished == S.posted)
        g_cond_wait (&S.cond, &S.lock);
      if (S.quit)
        break;

      gboolean ok = TRUE;
      for (int i = 0; ok && i < S.repeat; i++)
        {
          if (driver == DRV_DEVICE)
            {
              const char *cmd = S.cmd;
              g_mutex_unlock (&S.lock);
              ok = send_device_command (cmd);
              g_mutex_lock (&S.lock);
            }
          else
            {
              /* Only present the next image when the device waits for a
               * finger; an image arriving in any other state is dropped by
               * libfprint (g_return_if_fail in image_captured). */
              gint64 end = g_get_monotonic_time () + HELPER_TIMEOUT_S * G_TIME_SPAN_SECOND;
              while (!S.quit && S.needed_gen <= seen_gen)
                if (!g_cond_wait_until (&S.cond, &S.lock, end))
                  break;
              if (S.quit || S.needed_gen <= seen_gen)
                {
                  fprintf (stderr, "verify-latency: device never asked for a finger\n");
                  ok = FALSE;
                  break;
                }
              seen_gen = S.needed_gen;
              const void *img = S.img;
              gsize len = S.img_len;
              g_mutex_unlock (&S.lock);
              ok = send_all (image_fd, img, len);
              if (!ok)
                fprintf (stderr, "verify-latency: sending image: %s\n", strerror (errno));
              g_mutex_lock (&S.lock);
            }
        }
      if (!ok)
        S.helper_failed = TRUE;
      S.finished++;
      g_cond_broadcast (&S.cond);
    }
  g_mutex_unlock (&S.lock);
  return NULL;
}

/* Main thread: hand a job to the helper (returns immediately). */
static void
post_job (const char *cmd, const void *img, gsize img_len, int repeat)
{
  g_mutex_lock (&S.lock);
  S.cmd = cmd;
  S.img = img;
  S.img_len = img_len;
  S.repeat = repeat;
  S.posted++;
  g_cond_broadcast (&S.cond);
  g_mutex_unlock (&S.lock);
}

/* Main thread: wait (bounded) until the helper finished every posted job. */
static void
wait_jobs (void)
{
  gint64 end = g_get_monotonic_time () + HELPER_TIMEOUT_S * G_TIME_SPAN_SECOND;

  g_mutex_lock (&S.lock);
  while (S.finished != S.posted)
    if (!g_cond_wait_until (&S.cond, &S.lock, end))
      break;
  gboolean ok = S.finished == S.posted && !S.helper_failed;
  g_mutex_unlock (&S.lock);
  if (!ok)
    die ("helper thread failed or timed out");
}

/* ---------------------------------------------------------------- libfprint side */

static void
finger_status_changed (GObject *obj, GParamSpec *pspec, gpointer data)
{
  static gboolean was_needed = FALSE;
  gboolean needed = (fp_device_get_finger_status (FP_DEVICE (obj)) & FP_FINGER_STATUS_NEEDED) != 0;

  (void) pspec;
  (void) data;
  if (needed && !was_needed)
    {
      g_mutex_lock (&S.lock);
      S.needed_gen++;
      g_cond_broadcast (&S.cond);
      g_mutex_unlock (&S.lock);
    }
  was_needed = needed;
}

static gboolean
cancel_on_timeout (gpointer data)
{
  fprintf (stderr, "verify-latency: libfprint action took over %d s, cancelling\n", ACTION_TIMEOUT_S);
  g_cancellable_cancel (G_CANCELLABLE (data));
  return G_SOURCE_REMOVE;
}

/* A cancellable that cancels itself after ACTION_TIMEOUT_S; the timeout fires
 * because every *_sync call iterates the default main context. */
static GCancellable *
bounded_cancellable (guint *source_id)
{
  GCancellable *c = g_cancellable_new ();

  *source_id = g_timeout_add_seconds_full (G_PRIORITY_DEFAULT, ACTION_TIMEOUT_S,
                                           cancel_on_timeout, g_object_ref (c), g_object_unref);
  return c;
}

static void
enroll_progress (FpDevice *dev, gint stage, FpPrint *print, gpointer user_data, GError *error)
{
  (void) dev;
  (void) print;
  (void) user_data;
  if (error)
    fprintf (stderr, "verify-latency: enroll stage %d retry: %s\n", stage, error->message);
}

static gchar *
load_fixture (const char *name, gsize *len)
{
  const char *dirs[] = { g_getenv ("FIXTURES_DIR"), "../shared/fixtures/prints",
                         "/work/shared/fixtures/prints" };
  GError *error = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (dirs); i++)
    {
      if (!dirs[i])
        continue;
      g_autofree char *path = g_build_filename (dirs[i], name, NULL);
      gchar *data = NULL;
      if (g_file_get_contents (path, &data, len, &error))
        {
          gint32 hdr[2];
          memcpy (hdr, data, sizeof hdr);
          if (*len < sizeof hdr || (gsize) hdr[0] * hdr[1] + sizeof hdr != *len)
            die ("%s is not an fpimg payload", path);
          return data;
        }
      g_clear_error (&error);
    }
  die ("fixture %s not found (set FIXTURES_DIR)", name);
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

int
main (int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  const char *drv_name;
  int runs = 50;

  if (argc < 2 || argc > 3 ||
      (strcmp (argv[1], "virtual_device") != 0 && strcmp (argv[1], "virtual_image") != 0))
    {
      fprintf (stderr, "usage: %s virtual_device|virtual_image [runs]\n", argv[0]);
      return 2;
    }
  drv_name = argv[1];
  driver = strcmp (drv_name, "virtual_device") == 0 ? DRV_DEVICE : DRV_IMAGE;
  if (argc == 3)
    {
      char *end;
      long v = strtol (argv[2], &end, 10);
      if (*end || v < 1 || v > 100000)
        {
          fprintf (stderr, "verify-latency: runs must be 1..100000\n");
          return 2;
        }
      runs = (int) v;
    }

  gsize enroll_len = 0, probe_len = 0;
  g_autofree gchar *enroll_img = NULL, *probe_img = NULL;
  if (driver == DRV_IMAGE)
    {
      enroll_img = load_fixture ("whorl.fpimg", &enroll_len);
      probe_img = load_fixture ("whorl_dx12_dy-8_rot10.fpimg", &probe_len);
    }

  /* Socket path in a private temp dir; libfprint creates the socket itself. */
  g_autofree char *dir = g_dir_make_tmp ("verify-latency-XXXXXX", &error);
  if (!dir)
    die ("mkdtemp: %s", error->message);
  g_snprintf (sock_path, sizeof sock_path, "%s/%s.socket", dir, drv_name);
  g_setenv (driver == DRV_DEVICE ? "FP_VIRTUAL_DEVICE" : "FP_VIRTUAL_IMAGE", sock_path, TRUE);
  g_setenv ("FP_DRIVERS_WHITELIST", drv_name, TRUE); /* skip USB probing */

  g_mutex_init (&S.lock);
  g_cond_init (&S.cond);

  g_autoptr(FpContext) ctx = fp_context_new ();
  GPtrArray *devices = fp_context_get_devices (ctx);
  FpDevice *dev = NULL;
  for (guint i = 0; devices && i < devices->len; i++)
    if (g_strcmp0 (fp_device_get_driver (g_ptr_array_index (devices, i)), drv_name) == 0)
      dev = g_ptr_array_index (devices, i);
  if (!dev)
    die ("no %s device (is the driver built into libfprint?)", drv_name);
  g_signal_connect (dev, "notify::finger-status", G_CALLBACK (finger_status_changed), NULL);

  guint tid;
  g_autoptr(GCancellable) oc = bounded_cancellable (&tid);
  if (!fp_device_open_sync (dev, oc, &error))
    die ("open: %s", error->message);
  g_source_remove (tid);

  /* The socket must exist once open returned; poll (bounded) anyway. */
  struct stat st;
  for (int i = 0; stat (sock_path, &st) != 0 || !S_ISSOCK (st.st_mode); i++)
    {
      if (i >= 500)
        die ("socket %s did not appear within 5 s", sock_path);
      g_usleep (10000);
    }

  if (driver == DRV_IMAGE)
    {
      /* One persistent connection for all images. */
      image_fd = connect_socket ();
      if (image_fd < 0)
        die ("connect %s: %s", sock_path, strerror (errno));
    }

  GThread *helper = g_thread_new ("finger", helper_main, NULL);

  /* ---- enroll: 5 stages = 5 scans of the same finger ---- */
  int stages = fp_device_get_nr_enroll_stages (dev);
  g_autofree char *scan_cmd = g_strdup ("SCAN " FINGER_ID);
  if (driver == DRV_DEVICE)
    post_job (scan_cmd, NULL, 0, stages);
  else
    post_job (NULL, enroll_img, enroll_len, stages);

  g_autoptr(GCancellable) ec = bounded_cancellable (&tid);
  /* fp_print_new returns a floating ref: enroll sinks it and returns the
   * same object, so only the result is owned here. */
  g_autoptr(FpPrint) enrolled = fp_device_enroll_sync (dev, fp_print_new (dev), ec,
                                                       enroll_progress, NULL, &error);
  g_source_remove (tid);
  if (!enrolled)
    die ("enroll: %s", error->message);
  wait_jobs ();

  /* ---- verify N times ---- */
  double *ms = g_new (double, runs);
  int mismatches = 0;
  for (int r = 0; r < runs; r++)
    {
      gboolean match = FALSE;
      g_autoptr(FpPrint) scanned = NULL;
      g_autoptr(GCancellable) vc = bounded_cancellable (&tid);

      gint64 t0 = g_get_monotonic_time ();
      if (driver == DRV_DEVICE)
        post_job (scan_cmd, NULL, 0, 1);
      else
        post_job (NULL, probe_img, probe_len, 1);
      gboolean ok = fp_device_verify_sync (dev, enrolled, vc, NULL, NULL, &match, &scanned, &error);
      gint64 t1 = g_get_monotonic_time ();
      g_source_remove (tid);
      if (!ok)
        die ("verify run %d: %s", r + 1, error->message);
      if (!match)
        mismatches++;
      ms[r] = (t1 - t0) / 1000.0;
      wait_jobs ();
    }

  g_mutex_lock (&S.lock);
  S.quit = TRUE;
  g_cond_broadcast (&S.cond);
  g_mutex_unlock (&S.lock);
  g_thread_join (helper);

  if (image_fd >= 0)
    close (image_fd);
  g_autoptr(GCancellable) cc = bounded_cancellable (&tid);
  if (!fp_device_close_sync (dev, cc, &error))
    die ("close: %s", error->message);
  g_source_remove (tid);
  unlink (sock_path);
  rmdir (dir);

  if (mismatches)
    {
      fprintf (stderr, "verify-latency: %d of %d verifies did not match\n", mismatches, runs);
      g_free (ms);
      return 1;
    }

  qsort (ms, runs, sizeof *ms, cmp_double);
  double median = runs % 2 ? ms[runs / 2] : (ms[runs / 2 - 1] + ms[runs / 2]) / 2;
  int p95i = (int) ((95 * runs + 99) / 100) - 1; /* nearest-rank */
  if (p95i < 0)
    p95i = 0;
  printf ("c-baseline %s: median %.2f ms, p95 %.2f ms over %d runs\n",
          drv_name, median, ms[p95i], runs);
  g_free (ms);
  return 0;
}
