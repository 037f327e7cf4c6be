/* workspace.c: the scratch buffers kernels allocate per call (the module
 * API's workspace_alloc / workspace_free), TVM's workspace pool.
 *
 * A kernel with an intermediate buffer too large for its stack (a Winograd
 * convolution's transformed tiles: 1.8 MB each for ResNet-50's first
 * stage) asks for it on every call. From malloc, a block that large comes
 * from fresh pages (mmap, or the heap top trimmed away after the last
 * free), and each page costs a fault and a clear: ResNet-50's layer-1
 * Winograd kernels ran at 1000 us instead of 210. The pool keeps freed
 * blocks and hands back the smallest that fits, so after the first run no
 * call touches new pages. It keeps at most POOL_KEEP blocks; a block
 * returned when it is full goes back to the system. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "runtime_internal.h"

#define POOL_KEEP 64
#define HEADER 64 /* the block's size, keeping the payload 64-byte aligned */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static void *g_free[POOL_KEEP]; /* block starts (headers) */
static int g_nfree;

static size_t block_size(void *block) {
    return *(size_t *)block;
}

void *kiln_workspace_alloc(size_t bytes) {
    if (bytes > SIZE_MAX - 2 * HEADER)
        return NULL;
    size_t need = (bytes + HEADER + 63) & ~(size_t)63;
    void *block = NULL;
    pthread_mutex_lock(&g_mu);
    int best = -1;
    for (int i = 0; i < g_nfree; i++) {
        size_t s = block_size(g_free[i]);
        if (s >= need && (best < 0 || s < block_size(g_free[best])))
            best = i;
    }
    if (best >= 0) {
        block = g_free[best];
        g_free[best] = g_free[--g_nfree];
    }
    pthread_mutex_unlock(&g_mu);
    if (!block) {
        block = aligned_alloc(64, need);
        if (!block)
            return NULL;
        *(size_t *)block = need;
    }
    return (char *)block + HEADER;
}

void kiln_workspace_free(void *p) {
    if (!p)
        return;
    void *block = (char *)p - HEADER;
    pthread_mutex_lock(&g_mu);
    if (g_nfree < POOL_KEEP) {
        g_free[g_nfree++] = block;
        block = NULL;
    }
    pthread_mutex_unlock(&g_mu);
    free(block);
}
