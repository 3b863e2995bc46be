#ifndef FINGERSEAL_CLINUX_SHIM_H
#define FINGERSEAL_CLINUX_SHIM_H
/* Linux headers that Glibc's Swift module leaves out. */
#include <sys/fsuid.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#endif
