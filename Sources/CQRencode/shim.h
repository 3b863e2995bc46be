#ifndef FINGERSEAL_CQRENCODE_SHIM_H
#define FINGERSEAL_CQRENCODE_SHIM_H
#include <qrencode.h>
#endif
