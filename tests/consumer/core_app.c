/* SPDX-License-Identifier: MIT */
/* An outside program on the core library only, built against the installed
 * files (scripts/check-consumer.sh): a promise on a virtual-clock loop and
 * the version, compile time against run time. */
#include <futoin/asyncsteps.h>
#include <futoin/version.h>

#include <stdio.h>
#include <string.h>

static void answer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data, (void)args;
    futoin_success1(as, futoin_val_i32(42));
}

int main(void)
{
    FutoInLoop* loop = futoin_loop_new_virtual();
    FutoInAsyncSteps* root = futoin_asyncsteps_new(loop);
    futoin_add(root, answer, NULL, NULL);
    FutoInOutcome out;
    int rc = futoin_promise(root, &out);
    int value = futoin_arg_i32(&out.args, 0, -1);
    futoin_outcome_reset(&out);
    futoin_asyncsteps_free(root);
    futoin_loop_free(loop);
    int same = strcmp(futoin_version(), FUTOIN_VERSION_STRING) == 0;
    printf("futoin_asyncsteps %s (headers %s), promise rc=%d value=%d\n", futoin_version(),
            FUTOIN_VERSION_STRING, rc, value);
    return rc == FUTOIN_PROMISE_OK && value == 42 && same ? 0 : 1;
}
