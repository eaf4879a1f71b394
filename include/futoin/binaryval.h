/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief FTN12 universal binary interface, part 1: binary values (spec section 2.7.1).
 *
 * Written from the specification text. A value is a tagged union with an
 * optional cleanup hook in its type descriptor, so that objects owned by one
 * technology can be released from another.
 *
 * Errors: @ref md_ERRORS "docs/ERRORS.md".
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

/** A binary value: a type descriptor and the value it describes. */
typedef struct FutoInBinaryValue_ FutoInBinaryValue;
/** The type descriptor of a binary value: type flags and cleanup hook. */
typedef struct FutoInType_ FutoInType;
/** Type flags of a value: an FTN_TYPE_* base type, optionally or-ed with FTN_TYPE_ARRAY. */
typedef uint8_t FutoInTypeFlags;

/** Type flags (FutoInType::flags): the base types and their masks. */
enum {
    FTN_TYPE_CUSTOM_OBJECT = 0x01, /**< A custom object: FutoInBinaryValue::custom_data (and p). */
    FTN_TYPE_STRING = 0x02,        /**< A UTF-8 string: cstr, length in bytes. */
    FTN_TYPE_STRING16 = 0x03,      /**< A UTF-16 string: cstr16, length in code units. */
    FTN_TYPE_STRING32 = 0x04,      /**< A UTF-32 string: cstr32, length in code units. */
    FTN_TYPE_BOOL = 0x05,          /**< bool: b. */
    FTN_TYPE_INT8 = 0x06,          /**< int8_t: i8. */
    FTN_TYPE_INT16 = 0x07,         /**< int16_t: i16. */
    FTN_TYPE_INT32 = 0x08,         /**< int32_t: i32. */
    FTN_TYPE_INT64 = 0x09,         /**< int64_t: i64. */
    FTN_TYPE_UINT8 = 0x0A,         /**< uint8_t: u8. */
    FTN_TYPE_UINT16 = 0x0B,        /**< uint16_t: u16. */
    FTN_TYPE_UINT32 = 0x0C,        /**< uint32_t: u32. */
    FTN_TYPE_UINT64 = 0x0D,        /**< uint64_t: u64. */
    FTN_TYPE_FLOAT = 0x0E,         /**< float: f. */
    FTN_TYPE_DOUBLE = 0x0F,        /**< double: d. */
    FTN_BASE_TYPE_MASK = 0x0F,     /**< The bits of the base type. */
    /** Or-ed with a base type: a vector of that type. */
    FTN_TYPE_ARRAY = 0x10,
    FTN_COMPLEX_TYPE_MASK = 0xF0 /**< The bits of the complex type (FTN_TYPE_ARRAY). */
};

/** The type descriptor a binary value points to. */
struct FutoInType_ {
    /** The FTN_TYPE_* base type, or-ed with FTN_TYPE_ARRAY for a vector. */
    const FutoInTypeFlags flags;
    /** Releases whatever the value owns; may be null for plain values. */
    void (*const cleanup)(FutoInBinaryValue* v);
    /* Implementations may extend the descriptor after these members. */
};

/** A binary value: a tagged union with an optional cleanup hook in its type. */
struct FutoInBinaryValue_ {
    /** The type descriptor. Null means "no value". */
    const FutoInType* type;
    /** The value, by base type. */
    union {
        const void* p;          /**< A pointer (arrays, custom objects). */
        const char* cstr;       /**< FTN_TYPE_STRING. */
        const char16_t* cstr16; /**< FTN_TYPE_STRING16. */
        const char32_t* cstr32; /**< FTN_TYPE_STRING32. */
        bool b;                 /**< FTN_TYPE_BOOL. */
        int8_t i8;              /**< FTN_TYPE_INT8. */
        int16_t i16;            /**< FTN_TYPE_INT16. */
        int32_t i32;            /**< FTN_TYPE_INT32. */
        int64_t i64;            /**< FTN_TYPE_INT64. */
        uint8_t u8;             /**< FTN_TYPE_UINT8. */
        uint16_t u16;           /**< FTN_TYPE_UINT16. */
        uint32_t u32;           /**< FTN_TYPE_UINT32. */
        uint64_t u64;           /**< FTN_TYPE_UINT64. */
        float f;                /**< FTN_TYPE_FLOAT. */
        double d;               /**< FTN_TYPE_DOUBLE. */
    };
    /** The object of an FTN_TYPE_CUSTOM_OBJECT value (or data for the cleanup). */
    void* custom_data;
    /** Element count for arrays, code units for strings. */
    uint32_t length;
};

/**
 * @brief Runs the type's cleanup (if any) and leaves the holder empty.
 *
 * For a value that you own and will not hand on: one that a step function
 * gave back to you, a value you built and then did not pass to a
 * completion, an element of a FutoInOutcome's args (futoin_outcome_reset()
 * does this for all four). Values passed to success() and friends belong
 * to the engine, which runs their cleanup itself: do not reset those.
 * @param v  the value (not NULL); afterwards its type is NULL ("no value"),
 *           so a second reset does nothing
 * @par Ownership
 * Releases what the value owned, through its type's cleanup, exactly once.
 * @par Thread
 * Any thread that owns the value (the cleanup runs on it).
 */
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
