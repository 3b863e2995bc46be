/*
 * The module's memory when the C library has none (issue 24 §2).
 *
 * The Embedded Swift runtime allocates through posix_memalign and cannot fail softly: a class
 * instance or an array it cannot allocate is a trap, which would kill the PAM host (a login
 * manager, sudo). scripts/build-module links the module with --wrap=posix_memalign and
 * --wrap=free, so every allocation of the module's own code goes through here: when the C
 * library refuses, the allocation comes from a reserve in the module's .bss instead, and the
 * request goes on to its own bounded end (the broker answers, or the module falls back).
 *
 * The reserve is a bump region: offset and live count share one word, changed by compare and
 * swap (hosts may call PAM from several threads), and the region is reused from its start once
 * everything taken from it is freed. 256 KiB holds a whole exchange with the largest packet the
 * wire allows (64 KiB) several times over; untouched pages of .bss cost the host nothing.
 * Only the module's own references are wrapped: the host's malloc and free are never seen.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

int __real_posix_memalign(void **out, size_t alignment, size_t size);
void __real_free(void *pointer);

#define RESERVE_SIZE (256u * 1024u)

static _Alignas(64) unsigned char reserve[RESERVE_SIZE];
/* High 32 bits: allocations not yet freed. Low 32 bits: bytes used from the start. */
static uint64_t reserve_state;

static int in_reserve(const void *pointer) {
    uintptr_t at = (uintptr_t)pointer, start = (uintptr_t)reserve;
    return at >= start && at < start + RESERVE_SIZE;
}

static void *reserve_take(size_t alignment, size_t size) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096 || size > RESERVE_SIZE)
        return NULL;
    uint64_t seen = __atomic_load_n(&reserve_state, __ATOMIC_ACQUIRE);
    for (;;) {
        uint64_t used = seen & 0xffffffffu, live = seen >> 32;
        uintptr_t base = (uintptr_t)reserve;
        uint64_t start = ((base + used + alignment - 1) & ~(uintptr_t)(alignment - 1)) - base;
        if (start + size > RESERVE_SIZE || live == 0xffffffffu) return NULL;
        uint64_t next = ((live + 1) << 32) | (start + size);
        if (__atomic_compare_exchange_n(&reserve_state, &seen, next, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return reserve + start;
    }
}

static void reserve_give(void) {
    uint64_t seen = __atomic_load_n(&reserve_state, __ATOMIC_ACQUIRE);
    for (;;) {
        uint64_t live = (seen >> 32) - 1;
        /* The last one out resets the region. */
        uint64_t next = live == 0 ? 0 : (live << 32) | (seen & 0xffffffffu);
        if (__atomic_compare_exchange_n(&reserve_state, &seen, next, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
    }
}

int __wrap_posix_memalign(void **out, size_t alignment, size_t size) {
    int error = __real_posix_memalign(out, alignment, size);
    if (error == 0) return 0;
    void *taken = reserve_take(alignment < sizeof(void *) ? sizeof(void *) : alignment, size ? size : 1);
    if (taken == NULL) return error;
    *out = taken;
    return 0;
}

void __wrap_free(void *pointer) {
    if (pointer == NULL) return;
    if (in_reserve(pointer)) {
        reserve_give();
        return;
    }
    __real_free(pointer);
}
