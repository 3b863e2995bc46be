#ifndef FINGERSEAL_CLINUX_SHIM_H
#define FINGERSEAL_CLINUX_SHIM_H
/* Linux headers that Glibc's Swift module leaves out. */
#include <sys/fsuid.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <pthread.h>
#include <time.h>

/* A GNU extension Glibc's module does not declare (it is built without _GNU_SOURCE). */
extern int pthread_timedjoin_np(pthread_t thread, void **result, const struct timespec *abstime);
#endif
