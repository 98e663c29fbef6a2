/* FNV-1a, the library's one byte hash: values every process must derive alike without talking
 * (a job id from a rank table, an emulated server's key from its namespace) and checksums of data
 * another process writes (a sub-communicator's mailbox). Not for anything adversarial. */
#ifndef OH_HASH_H
#define OH_HASH_H

#include <stddef.h>
#include <stdint.h>

#define OH_FNV1A_BASIS 0xcbf29ce484222325ull

/* h folded with the n bytes at p (start from OH_FNV1A_BASIS). */
static inline uint64_t oh_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#endif
