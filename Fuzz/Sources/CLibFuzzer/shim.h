#ifndef FINGERSEAL_CLIBFUZZER_SHIM_H
#define FINGERSEAL_CLIBFUZZER_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include <dlfcn.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/types.h>
/* libFuzzer's driver, for programs that keep their own main (clang's FuzzerInterface.h). */
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
/* The effective uid of the calling thread alone (the raw system call: glibc's seteuid changes
   every thread's). A socketpair made meanwhile carries it as its peer's SO_PEERCRED uid. */
static inline int fuzz_thread_seteuid(uid_t uid) { return (int)syscall(SYS_setresuid, (uid_t)-1, uid, (uid_t)-1); }
#endif
