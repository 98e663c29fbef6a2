/* The ACL layer's registry of live handles (hal/emu/acl_registry.c), and the answers each thread
 * keeps in front of it: a cached answer must never outlive a change of the handle it is about,
 * made on this thread or another, and answers about other handles stay right meanwhile. */
#include <criterion/criterion.h>
#include <pthread.h>

#include "hal/emu/acl_internal.h"

static char keys[64]; /* addresses used as handles: nothing reads them */

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
