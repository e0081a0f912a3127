#ifndef CFUZZERDRIVER_H
#define CFUZZERDRIVER_H
#include <stddef.h>
#include <stdint.h>

// Why this exists: SwiftPM links every Linux executable with `--defsym main=<Module>_main`,
// so libFuzzer's own main() never runs. The Swift entry point instead hands control to
// libFuzzer through its documented driver entry (compiler-rt FuzzerInterface.h).
int LLVMFuzzerRunDriver(int *argc, char ***argv,
                        int (*UserCb)(const uint8_t *Data, size_t Size));

#endif
