#ifndef FINGERSEAL_CSODIUM_SHIM_H
#define FINGERSEAL_CSODIUM_SHIM_H
#include <sodium.h>
#endif
