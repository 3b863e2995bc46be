/* A heap that never reuses memory, for the secret-canary helper only (never in the product):
 * free() keeps the block as it is and realloc() copies into a new one, so every ordinary copy
 * ever made of a secret is still in the process when it searches itself, unless its maker
 * wiped it. Without this, glibc hands a freed block to the next allocation of its size, which
 * usually overwrites it: a search would only find copies that happen to survive.
 *
 * Defined in the executable, these replace glibc's free and realloc for every library (glibc
 * supports replacing its allocator; malloc, calloc and the aligned allocations stay glibc's,
 * so sizes are glibc's malloc_usable_size). */
#include "canary_heap.h"
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t releases;

size_t canary_heap_releases(void) {
    return __atomic_load_n(&releases, __ATOMIC_RELAXED);
}

void free(void *block) {
    (void)block;
    __atomic_add_fetch(&releases, 1, __ATOMIC_RELAXED);
}

void *realloc(void *block, size_t size) {
    __atomic_add_fetch(&releases, 1, __ATOMIC_RELAXED);
    void *moved = malloc(size ? size : 1);
    if (moved && block) {
        size_t old = malloc_usable_size(block);
        memcpy(moved, block, old < size ? old : size);
    }
    return moved;
}

void *reallocarray(void *block, size_t count, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(count, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(block, total);
}
