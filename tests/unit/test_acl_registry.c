/* The ACL layer's registry of live handles (hal/emu/acl_registry.c), and the answers each thread
 * keeps in front of it: a cached answer must never outlive a change of the handle it is about,
 * made on this thread or another, and answers about other handles stay right meanwhile. */
#include <criterion/criterion.h>
#include <pthread.h>

#include "hal/emu/acl_internal.h"

static char keys[128]; /* addresses used as handles: nothing reads them */

/* Looks key up twice (the second answer may come from the thread's cache). */
static int find_twice(acl_handle_kind kind, const void *key, uintptr_t *value)
{
    int first = acl_reg_find(kind, key, value);
    int second = acl_reg_find(kind, key, value);
    cr_assert_eq(first, second, "two lookups of %p in a row disagree", key);
    return second;
}

Test(acl_registry, a_removed_handle_is_gone_for_this_thread)
{
    uintptr_t v = 0;
    cr_assert_eq(acl_reg_add(ACL_H_EVENT, &keys[0], 7), 0);
    cr_expect(find_twice(ACL_H_EVENT, &keys[0], &v), "a live handle was not found");
    cr_expect_eq(v, 7);
    cr_assert_eq(acl_reg_remove(ACL_H_EVENT, &keys[0]), 1);
    cr_expect(!find_twice(ACL_H_EVENT, &keys[0], NULL), "a removed handle was still found");
    cr_expect_eq(acl_reg_remove(ACL_H_EVENT, &keys[0]), 0, "a handle was removed twice");
}

Test(acl_registry, an_added_handle_is_found_after_a_miss)
{
    uintptr_t v = 0;
    cr_expect(!find_twice(ACL_H_NOTIFY, &keys[1], NULL), "a handle never added was found");
    cr_assert_eq(acl_reg_add(ACL_H_NOTIFY, &keys[1], 9), 0);
    cr_expect(find_twice(ACL_H_NOTIFY, &keys[1], &v), "an added handle was not found after a miss");
    cr_expect_eq(v, 9);
    cr_expect(!find_twice(ACL_H_EVENT, &keys[1], NULL), "a handle was found under another kind");
    cr_assert_eq(acl_reg_remove(ACL_H_NOTIFY, &keys[1]), 1);
}

/* A handle re-created at the same address (as malloc reuses one) carries its new value. */
Test(acl_registry, a_handle_made_again_at_its_address_has_its_new_value)
{
    uintptr_t v = 0;
    cr_assert_eq(acl_reg_add(ACL_H_HOST_MEM, &keys[2], 100), 0);
    cr_expect(find_twice(ACL_H_HOST_MEM, &keys[2], &v));
    cr_assert_eq(acl_reg_remove(ACL_H_HOST_MEM, &keys[2]), 1);
    cr_assert_eq(acl_reg_add(ACL_H_HOST_MEM, &keys[2], 200), 0);
    cr_expect(find_twice(ACL_H_HOST_MEM, &keys[2], &v));
    cr_expect_eq(v, 200, "the old value of a handle made again was returned");
    cr_assert_eq(acl_reg_remove(ACL_H_HOST_MEM, &keys[2]), 1);
}

static void *remove_key(void *arg)
{
    cr_assert_eq(acl_reg_remove(ACL_H_EVENT, arg), 1);
    return NULL;
}

/* A handle this thread found live (its answer cached) and another thread then removed. */
Test(acl_registry, a_handle_removed_on_another_thread_is_gone_here)
{
    for (int i = 0; i < 32; i++) { /* several slots of the thread's cache */
        cr_assert_eq(acl_reg_add(ACL_H_EVENT, &keys[8 + i], (uintptr_t)i), 0);
        cr_assert(find_twice(ACL_H_EVENT, &keys[8 + i], NULL));
    }
    for (int i = 0; i < 32; i++) {
        pthread_t t;
        cr_assert_eq(pthread_create(&t, NULL, remove_key, &keys[8 + i]), 0);
        cr_assert_eq(pthread_join(t, NULL), 0);
        cr_expect(!acl_reg_find(ACL_H_EVENT, &keys[8 + i], NULL), "handle %d removed elsewhere was found", i);
        for (int j = i + 1; j < 32; j++) /* the others are still live */
            cr_expect(acl_reg_find(ACL_H_EVENT, &keys[8 + j], NULL), "handle %d was lost", j);
    }
}

/* Two keys of keys[] whose answers go to one set of the thread's cache (64 keys, 32 sets). */
static void keys_of_one_set(acl_handle_kind kind, const void **a, const void **b)
{
    for (int i = 64; i < 128; i++)
        for (int j = i + 1; j < 128; j++)
            if (acl_reg_test_set(kind, &keys[i]) == acl_reg_test_set(kind, &keys[j])) {
                *a = &keys[i];
                *b = &keys[j];
                return;
            }
    cr_assert_fail("no two of 64 keys share one of the cache's sets: is it larger now? then use more keys");
}

/* Handles used in turn whose answers meet in one set of the cache both stay there: a framework
 * records and waits on its events in turn, and a miss takes the process-wide lock. */
Test(acl_registry, two_handles_of_one_set_used_in_turn_stay_cached)
{
    const void *a, *b;
    keys_of_one_set(ACL_H_EVENT, &a, &b);
    cr_assert_eq(acl_reg_add(ACL_H_EVENT, a, 1), 0);
    cr_assert_eq(acl_reg_add(ACL_H_EVENT, b, 2), 0);
    uintptr_t va = 0, vb = 0;
    cr_assert(acl_reg_find(ACL_H_EVENT, a, &va) && acl_reg_find(ACL_H_EVENT, b, &vb));
    uint64_t misses = acl_reg_test_misses();
    for (int i = 0; i < 8; i++) {
        cr_expect(acl_reg_find(ACL_H_EVENT, a, &va) && va == 1);
        cr_expect(acl_reg_find(ACL_H_EVENT, b, &vb) && vb == 2);
    }
    cr_expect_eq(acl_reg_test_misses(), misses, "handles of one set used in turn missed the cache %llu times",
                 (unsigned long long)(acl_reg_test_misses() - misses));
    cr_assert_eq(acl_reg_remove(ACL_H_EVENT, a), 1);
    cr_expect(!acl_reg_find(ACL_H_EVENT, a, NULL), "a removed handle was found");
    cr_expect(acl_reg_find(ACL_H_EVENT, b, &vb) && vb == 2, "its neighbour in the set was lost");
    cr_assert_eq(acl_reg_remove(ACL_H_EVENT, b), 1);
}

/* Adding and removing a handle voids the cached answers about its own bucket only: a framework
 * that makes and destroys events as it goes keeps its other answers. Eight handles of eight sets
 * of the cache; at most one can share the changed handle's bucket, so at most one lookup misses. */
Test(acl_registry, a_change_voids_the_answers_of_its_bucket_only)
{
    const void *held[8];
    int n = 0;
    bool used[64] = {false};
    for (int i = 64; i < 128 && n < 8; i++) {
        unsigned set = acl_reg_test_set(ACL_H_HOST_MEM, &keys[i]);
        if (!used[set]) {
            used[set] = true;
            held[n++] = &keys[i];
        }
    }
    cr_assert_eq(n, 8, "64 keys gave fewer than 8 sets of the cache");
    for (int i = 0; i < n; i++) {
        cr_assert_eq(acl_reg_add(ACL_H_HOST_MEM, held[i], (uintptr_t)i), 0);
        cr_assert(acl_reg_find(ACL_H_HOST_MEM, held[i], NULL));
    }
    cr_assert_eq(acl_reg_add(ACL_H_EVENT, &keys[40], 5), 0); /* not one of them */
    cr_assert_eq(acl_reg_remove(ACL_H_EVENT, &keys[40]), 1);
    uint64_t misses = acl_reg_test_misses();
    uintptr_t v = 0;
    for (int i = 0; i < n; i++)
        cr_expect(acl_reg_find(ACL_H_HOST_MEM, held[i], &v) && v == (uintptr_t)i, "handle %d lost", i);
    uint64_t missed = acl_reg_test_misses() - misses;
    cr_expect_leq(missed, 1, "an unrelated handle's change voided %llu answers", (unsigned long long)missed);
    for (int i = 0; i < n; i++)
        cr_assert_eq(acl_reg_remove(ACL_H_HOST_MEM, held[i]), 1);
}
