#ifndef FINGERSEAL_CANARY_HEAP_H
#define FINGERSEAL_CANARY_HEAP_H
#include <stddef.h>

/* How many times free and realloc were called in this process since it started: more than
 * zero once the interposition works (every library's free comes here). */
size_t canary_heap_releases(void);
#endif
