#ifndef FINGERSEAL_CLIBFUZZER_SHIM_H
#define FINGERSEAL_CLIBFUZZER_SHIM_H
#include <stddef.h>
#include <stdint.h>
/* libFuzzer's driver, for programs that keep their own main (clang's FuzzerInterface.h). */
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
#endif
