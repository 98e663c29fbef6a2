/* The mailbox a sub-communicator's first member leaves its root info in (rt_subcomm.c,
 * rt_mailbox): across servers a member reads it in its mirror of the owner's control block, which
 * a link with several sockets writes in any order, so the tag word can land before the info. A
 * reader must then take nothing: not a mirror still empty, not the info of the sub-communicator
 * before, not an info that landed in part. (Before the check, 1 launch in 20 of random calls on
 * 3+2+3 emulated servers failed its HcclCreateSubCommConfig with "the HcclRootInfo passed in is
 * not valid (magic 00000000)": test_coll_random, docs/perf-history.md, forty-seventh pass.) */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_internal.h"

/* A root info whose bytes say which one it is. */
static HcclRootInfo info_of(unsigned char b)
{
    HcclRootInfo info;
    memset(&info, b, sizeof info);
    return info;
}

static rt_ctrl *block(void)
{
    rt_ctrl *c = calloc(1, sizeof *c);
    cr_assert_not_null(c);
    return c;
}

Test(subcomm_mailbox, a_whole_mailbox_is_taken)
{
    rt_ctrl *c = block();
    HcclRootInfo in = info_of(0x5a), out = info_of(0);
    rt_mailbox_put(c, &in, 3);
    cr_expect(rt_mailbox_take(c, 3, &out));
    cr_expect_eq(memcmp(&in, &out, sizeof in), 0, "the info taken is not the one put");
    cr_expect_not(rt_mailbox_take(c, 4, &out), "a mailbox of tag 3 was taken for tag 4");
    free(c);
}

/* The tag word landed, the info not yet: the mirror is still empty. */
Test(subcomm_mailbox, the_tag_word_before_the_info_is_not_taken)
{
    rt_ctrl *c = block();
    HcclRootInfo out;
    atomic_store(&c->mailbox_tag, 3);
    cr_expect_not(rt_mailbox_take(c, 3, &out), "an empty mailbox was taken");
    free(c);
}

/* The tag word of the next sub-communicator landed over the info of the one before. */
Test(subcomm_mailbox, the_info_of_the_sub_communicator_before_is_not_taken)
{
    rt_ctrl *c = block();
    HcclRootInfo first = info_of(0x11), out;
    rt_mailbox_put(c, &first, 2);
    atomic_store(&c->mailbox_tag, 0); /* the owner's reset once its members joined */
    atomic_store(&c->mailbox_tag, 5); /* the next one's tag word, before its info */
    cr_expect_not(rt_mailbox_take(c, 5, &out), "the info of sub-communicator 1 was taken for 4");
    free(c);
}

/* Part of the next info landed: the rest is the info before's. */
Test(subcomm_mailbox, an_info_landed_in_part_is_not_taken)
{
    rt_ctrl *c = block();
    HcclRootInfo first = info_of(0x11), next = info_of(0x22), out;
    rt_mailbox_put(c, &first, 2);
    rt_ctrl *whole = block();
    rt_mailbox_put(whole, &next, 5);
    size_t half = sizeof c->mailbox / 2;
    memcpy(&c->mailbox, &whole->mailbox, half); /* the front of the write */
    atomic_store(&c->mailbox_tag, 5);
    cr_expect_not(rt_mailbox_take(c, 5, &out), "a mailbox that landed in half was taken");
    memcpy((char *)&c->mailbox + half, (char *)&whole->mailbox + half, sizeof c->mailbox - half);
    cr_expect(rt_mailbox_take(c, 5, &out), "the mailbox once landed whole was not taken");
    cr_expect_eq(memcmp(&next, &out, sizeof next), 0);
    free(whole);
    free(c);
}
