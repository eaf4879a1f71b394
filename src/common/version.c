/* SPDX-License-Identifier: MIT */
/* futoin_version(): the version the library was built as (futoin/version.h
 * is generated from cmake/version.h.in). */
#include <futoin/version.h>

const char* futoin_version(void)
{
    return FUTOIN_VERSION_STRING;
}

unsigned futoin_version_number(void)
{
    return FUTOIN_VERSION_NUMBER;
}
