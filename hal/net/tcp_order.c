/* Receive-side bookkeeping by write number (seq) on a TCP link: the fragments of split writes,
 * and the order of notifies. A link with several sockets may land its writes in any order; a
 * write's notify fires only once it and every earlier write of the link landed, so a signal sent
 * after data never overtakes the data on another socket (what a plan's "copy, then signal" needs;
 * with one socket writes land in order and nothing waits here). */
#include <stdlib.h>

#include "hal/net/tcp_internal.h"

/* Open addressing, at most half full, deletion by backward shift. */
tcp_asm *tcp_seqtab_get(tcp_seqtab *t, uint64_t seq, int create)
{
    if (create && t->n * 2 >= t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        tcp_asm *v = calloc(cap, sizeof *v);
        if (!v)
            return NULL;
        for (uint32_t i = 0; i < t->cap; i++)
            if (t->v[i].used) {
                uint32_t j = (uint32_t)t->v[i].seq & (cap - 1);
                while (v[j].used)
                    j = (j + 1) & (cap - 1);
                v[j] = t->v[i];
            }
        free(t->v);
        t->v = v;
        t->cap = cap;
    }
    if (!t->cap)
        return NULL;
    uint32_t j = (uint32_t)seq & (t->cap - 1);
    while (t->v[j].used && t->v[j].seq != seq)
        j = (j + 1) & (t->cap - 1);
    if (t->v[j].used)
        return &t->v[j];
    if (!create)
        return NULL;
    t->v[j] = (tcp_asm){seq, 0, 1};
    t->n++;
    return &t->v[j];
}

void tcp_seqtab_del(tcp_seqtab *t, tcp_asm *e)
{
    uint32_t j = (uint32_t)(e - t->v);
    t->v[j].used = 0;
    t->n--;
    for (uint32_t k = (j + 1) & (t->cap - 1); t->v[k].used; k = (k + 1) & (t->cap - 1)) {
        tcp_asm m = t->v[k];
        t->v[k].used = 0;
        uint32_t h = (uint32_t)m.seq & (t->cap - 1);
        while (t->v[h].used)
            h = (h + 1) & (t->cap - 1);
        t->v[h] = m;
    }
}

void tcp_seqtab_free(tcp_seqtab *t)
{
    free(t->v);
    *t = (tcp_seqtab){0};
}

static void fire(tcp_transport *tt, uint32_t notify)
{
    if (notify != NET_NOTIFY_NONE)
        net_notify_fire(&tt->base, notify);
}

int tcp_order_landed(tcp_transport *tt, tcp_link *l, uint64_t seq, uint32_t notify)
{
    if (seq != l->next_seq) { /* an earlier write is still on its way: its turn comes first */
        tcp_asm *e = tcp_seqtab_get(&l->ord, seq, 1);
        if (!e)
            return -1;
        e->left = notify;
        return 0;
    }
    fire(tt, notify);
    l->next_seq++;
    tcp_asm *e;
    while (l->ord.n && (e = tcp_seqtab_get(&l->ord, l->next_seq, 0)) != NULL) {
        uint32_t n = e->left;
        tcp_seqtab_del(&l->ord, e);
        fire(tt, n);
        l->next_seq++;
    }
    return 0;
}
