/* SPDX-License-Identifier: MIT */
/* futoin/version.h against the library: the macros, the runtime version and
 * the number agree. */
#include <futoin/version.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void test_runtime_matches_headers(void** state)
{
    (void)state;
    assert_string_equal(futoin_version(), FUTOIN_VERSION_STRING);
    assert_int_equal(futoin_version_number(), FUTOIN_VERSION_NUMBER);
    char text[32];
    snprintf(text, sizeof(text), "%d.%d.%d", FUTOIN_VERSION_MAJOR, FUTOIN_VERSION_MINOR,
            FUTOIN_VERSION_PATCH);
    assert_string_equal(text, FUTOIN_VERSION_STRING);
}

static void test_number_and_at_least(void** state)
{
    (void)state;
    assert_int_equal(FUTOIN_VERSION_ENCODE(0, 1, 0), 1000);
    assert_int_equal(FUTOIN_VERSION_ENCODE(1, 2, 3), 1002003);
    assert_true(FUTOIN_VERSION_AT_LEAST(0, 0, 0));
    assert_true(FUTOIN_VERSION_AT_LEAST(FUTOIN_VERSION_MAJOR, FUTOIN_VERSION_MINOR,
            FUTOIN_VERSION_PATCH));
    assert_false(FUTOIN_VERSION_AT_LEAST(FUTOIN_VERSION_MAJOR, FUTOIN_VERSION_MINOR,
            FUTOIN_VERSION_PATCH + 1));
    assert_false(FUTOIN_VERSION_AT_LEAST(FUTOIN_VERSION_MAJOR + 1, 0, 0));
#if !FUTOIN_VERSION_AT_LEAST(0, 1, 0)
#error "usable in #if"
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runtime_matches_headers),
        cmocka_unit_test(test_number_and_at_least),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
