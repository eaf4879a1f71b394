/* SPDX-License-Identifier: MIT */
/*
 * FTN12 universal binary interface, part 1: binary values (spec section 2.7.1).
 *
 * Written from the specification text. A value is a tagged union with an
 * optional cleanup hook in its type descriptor, so that objects owned by one
 * technology can be released from another.
 */
#ifndef FUTOIN_BINARYVAL_H
#define FUTOIN_BINARYVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#else
#include <uchar.h>
#endif

typedef struct FutoInBinaryValue_ FutoInBinaryValue;
typedef struct FutoInType_ FutoInType;
typedef uint8_t FutoInTypeFlags;

enum {
    FTN_TYPE_CUSTOM_OBJECT = 0x01,
    FTN_TYPE_STRING = 0x02,
    FTN_TYPE_STRING16 = 0x03,
    FTN_TYPE_STRING32 = 0x04,
    FTN_TYPE_BOOL = 0x05,
    FTN_TYPE_INT8 = 0x06,
    FTN_TYPE_INT16 = 0x07,
    FTN_TYPE_INT32 = 0x08,
    FTN_TYPE_INT64 = 0x09,
    FTN_TYPE_UINT8 = 0x0A,
    FTN_TYPE_UINT16 = 0x0B,
    FTN_TYPE_UINT32 = 0x0C,
    FTN_TYPE_UINT64 = 0x0D,
    FTN_TYPE_FLOAT = 0x0E,
    FTN_TYPE_DOUBLE = 0x0F,
    FTN_BASE_TYPE_MASK = 0x0F,
    /* or-ed with a base type: a vector of that type */
    FTN_TYPE_ARRAY = 0x10,
    FTN_COMPLEX_TYPE_MASK = 0xF0
};

struct FutoInType_ {
    const FutoInTypeFlags flags;
    /* Releases whatever the value owns; may be null for plain values. */
    void (*const cleanup)(FutoInBinaryValue* v);
    /* Implementations may extend the descriptor after these members. */
};

struct FutoInBinaryValue_ {
    /* Null means "no value". */
    const FutoInType* type;
    union {
        const void* p;
        const char* cstr;
        const char16_t* cstr16;
        const char32_t* cstr32;
        bool b;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        float f;
        double d;
    };
    void* custom_data;
    /* Element count for arrays, code units for strings. */
    uint32_t length;
};

/* Runs the type's cleanup (if any) and leaves the holder empty. */
static inline void futoin_reset_binval(FutoInBinaryValue* v)
{
    const FutoInType* tp = v->type;
    if (tp && tp->cleanup) {
        tp->cleanup(v);
    }
    v->type = 0;
    v->u64 = 0;
    v->custom_data = 0;
    v->length = 0;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_BINARYVAL_H */
