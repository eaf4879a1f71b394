/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief FutoIn AsyncSteps for C++17: a header-only layer over the C API
 * (asyncsteps.h), with lambdas as steps and typed results.
 *
 * - futoin::Loop owns an event loop (futoin_loop_new(), or the virtual clock
 *   of futoin_loop_new_virtual()).
 * - futoin::Root owns a root (futoin_asyncsteps_new()); movable, not
 *   copyable; freed by its destructor, before its Loop.
 * - futoin::Steps is a non-owning view over any FutoInAsyncSteps* (this
 *   library's or another implementation's): what every callback receives.
 *
 * Steps are lambdas (or function pointers) whose first parameter is
 * `futoin::Steps&`; the others receive the previous step's results,
 * converted from FutoInBinaryValue:
 * @code
 * root.add([](futoin::Steps& as) { as.success(42, "text"); })
 *     .add([](futoin::Steps& as, int n, std::string_view s) { ... },
 *          [](futoin::Steps& as, std::string_view code) { ... });
 * @endcode
 * A value of another type than the parameter wants fails the step with
 * InternalError, whose error_info names the parameter and both types.
 *
 * Closures: a lambda that is trivially copyable, no larger than a pointer
 * and callable as const travels in the step's `data` itself (no
 * allocation: the cost of the C API). Any other closure is moved into a
 * block of a per-thread free-list pool (size classes of 32 to 256 bytes;
 * larger ones from operator new) and owned by its step through
 * futoin_add_owned(): destroyed exactly once, when the step is done, is
 * cancelled or dropped, or its root or loop is freed. The pool's cached
 * blocks are freed when their thread exits.
 *
 * Errors: `as.error(code, info)` fails the step; with exceptions enabled it
 * throws an internal unwind type that the library catches, so it does not
 * return. A thrown futoin::Error becomes that error; any other
 * std::exception becomes InternalError with what() as error_info; anything
 * else InternalError. No exception ever crosses into the C engine: every
 * callback the engine calls catches. Built with -fno-exceptions, error(),
 * break_loop() and continue_loop() record the outcome and return, as in C:
 * return from the callback right after.
 *
 * Thread: as the C API: everything on the loop's thread.
 */
#ifndef FUTOIN_ASYNCSTEPS_HPP
#define FUTOIN_ASYNCSTEPS_HPP

#if !defined(__cplusplus)                                                                          \
        || (__cplusplus < 201703L && !(defined(_MSVC_LANG) && _MSVC_LANG >= 201703L))
#error "futoin/asyncsteps.hpp needs C++17"
#endif

#include <futoin/asyncsteps.h>
#include <futoin/asynctool.h>
#include <futoin/sync.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

/**
 * @def FUTOIN_CXX_EXCEPTIONS
 * 1 when the C++ layer is compiled with exceptions (error() throws an
 * unwind type and does not return), 0 for -fno-exceptions (error() returns).
 */
#ifndef FUTOIN_CXX_EXCEPTIONS
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define FUTOIN_CXX_EXCEPTIONS 1
#else
#define FUTOIN_CXX_EXCEPTIONS 0
#endif
#endif

/**
 * @def FUTOIN_CXX_NORETURN
 * [[noreturn]] on error(), break_loop() and continue_loop() when they throw
 * (FUTOIN_CXX_EXCEPTIONS 1); empty for -fno-exceptions, where they return.
 */
#if FUTOIN_CXX_EXCEPTIONS
#define FUTOIN_CXX_NORETURN [[noreturn]]
#else
#define FUTOIN_CXX_NORETURN
#endif

namespace futoin {

class Steps;
class Root;
class Loop;
class Scheduled;
template <class... T> class Outcome;

/**
 * An error with a code (one of the FUTOIN_* codes or your own) and an
 * error_info; thrown from a callback it becomes that error of the step.
 */
class Error : public std::runtime_error {
public:
    /** @param code the error code  @param info its error_info */
    explicit Error(const std::string& code, const std::string& info = std::string())
        : std::runtime_error(info)
        , code_(code)
    {
    }
    /** @return the error code */
    const char* code() const noexcept
    {
        return code_.c_str();
    }
    /** @return the error_info (what()) */
    const char* info() const noexcept
    {
        return what();
    }

private:
    std::string code_;
};

/** @cond FUTOIN_DETAIL */
namespace detail {

    /* Thrown by Steps::error(), break_loop() and continue_loop() after the
 * engine recorded the outcome; caught by the callback wrappers. Not a
 * std::exception, so that `catch (const std::exception&)` lets it pass. */
    struct Unwind { };

    /* The marker of "no error handler". */
    struct NoHandler { };

    inline void log_warning(const char* where, const char* what) noexcept
    {
        char line[320];
        std::snprintf(line, sizeof(line), "futoin: C++ %s: %s", where, what ? what : "");
        futoin_log_write(FUTOIN_LOG_WARNING, line);
    }

    /* Memory that cannot be had for a value or a closure: std::bad_alloc, or
 * the library's own reaction (a fatal line, abort) without exceptions. */
    [[noreturn]] inline void out_of_memory()
    {
#if FUTOIN_CXX_EXCEPTIONS
        throw std::bad_alloc();
#else
        futoin_log_write(FUTOIN_LOG_FATAL, "futoin: out of memory (C++ layer)");
        std::abort();
#endif
    }

#if FUTOIN_CXX_EXCEPTIONS
    /* Maps the exception being handled to an error of the flow. */
    inline void report_exception(FutoInAsyncSteps* as) noexcept
    {
        try {
            throw;
        } catch (const Unwind&) {
            /* error(), break or continue: already recorded */
        } catch (const Error& e) {
            futoin_error(as, e.code(), e.info());
        } catch (const std::exception& e) {
            futoin_error(as, FUTOIN_INTERNAL_ERROR, e.what());
        } catch (...) {
            futoin_error(as, FUTOIN_INTERNAL_ERROR, "a C++ exception that is not a std::exception");
        }
    }
#endif

    /* Runs fn(); an exception becomes an error of as. */
    template <class Fn> inline void guarded(FutoInAsyncSteps* as, Fn&& fn) noexcept
    {
#if FUTOIN_CXX_EXCEPTIONS
        try {
            fn();
        } catch (...) {
            report_exception(as);
        }
#else
        (void)as;
        fn();
#endif
    }

    /* Runs fn() where no error can be reported (cancel handlers, destructors):
 * an exception is logged as a warning and dropped. */
    template <class Fn> inline void guarded_quiet(const char* where, Fn&& fn) noexcept
    {
#if FUTOIN_CXX_EXCEPTIONS
        try {
            fn();
        } catch (const Unwind&) {
            /* the engine has reported the misuse */
        } catch (const std::exception& e) {
            log_warning(where, e.what());
        } catch (...) {
            log_warning(where, "a C++ exception that is not a std::exception");
        }
#else
        (void)where;
        fn();
#endif
    }

    /* ---- the closure pool ---------------------------------------------------- */
    namespace pool {

        /* Size classes: 32, 64, 128 and 256 bytes; larger or over-aligned blocks
 * come from operator new and go back to operator delete. */
        constexpr std::size_t kClasses = 4;
        constexpr std::size_t kMinBlock = 32;
        /* Blocks kept per class and thread: a burst may allocate more, the rest
 * goes back to operator delete. */
        constexpr std::size_t kMaxCached = 512;

        constexpr std::size_t class_of(std::size_t size, std::size_t align) noexcept
        {
            return align > __STDCPP_DEFAULT_NEW_ALIGNMENT__ ? kClasses
                    : size <= kMinBlock                     ? 0
                    : size <= kMinBlock * 2                 ? 1
                    : size <= kMinBlock * 4                 ? 2
                    : size <= kMinBlock * 8                 ? 3
                                                            : kClasses;
        }

        struct FreeBlock {
            FreeBlock* next;
        };

        /* Trivially destructible: usable during and after the thread's
 * destructors (a loop freed by a thread_local object after the owner). */
        struct Cache {
            FreeBlock* head[kClasses];
            std::size_t count[kClasses];
            std::size_t heap_blocks; /* blocks taken from operator new (a counter for tests) */
            bool owner;              /* the Owner of this thread is registered */
            bool closed;             /* the Owner has run: no caching any more */
        };
        inline thread_local Cache cache{};

        inline void release_all() noexcept
        {
            for (std::size_t c = 0; c < kClasses; ++c) {
                while (FreeBlock* b = cache.head[c]) {
                    cache.head[c] = b->next;
                    ::operator delete(static_cast<void*>(b));
                }
                cache.count[c] = 0;
            }
        }

        /* Frees the thread's cached blocks when the thread exits. */
        struct Owner {
            Owner() noexcept = default;
            Owner(const Owner&) = delete;
            Owner& operator=(const Owner&) = delete;
            ~Owner()
            {
                release_all();
                cache.closed = true;
            }
        };

        template <std::size_t Size, std::size_t Align> inline void* allocate()
        {
            constexpr std::size_t cls = class_of(Size, Align);
            if constexpr (cls < kClasses) {
                if (FreeBlock* b = cache.head[cls]) {
                    cache.head[cls] = b->next;
                    --cache.count[cls];
                    return b;
                }
                ++cache.heap_blocks;
                return ::operator new(kMinBlock << cls);
            } else if constexpr (Align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
                ++cache.heap_blocks;
                return ::operator new(Size, std::align_val_t(Align));
            } else {
                ++cache.heap_blocks;
                return ::operator new(Size);
            }
        }

        template <std::size_t Size, std::size_t Align> inline void deallocate(void* p) noexcept
        {
            constexpr std::size_t cls = class_of(Size, Align);
            if constexpr (cls < kClasses) {
                if (!cache.closed && cache.count[cls] < kMaxCached) {
                    if (!cache.owner) {
                        static thread_local Owner owner;
                        (void)owner;
                        cache.owner = true;
                    }
                    FreeBlock* b = static_cast<FreeBlock*>(p);
                    b->next = cache.head[cls];
                    cache.head[cls] = b;
                    ++cache.count[cls];
                    return;
                }
                ::operator delete(p);
            } else if constexpr (Align > __STDCPP_DEFAULT_NEW_ALIGNMENT__) {
                ::operator delete(p, std::align_val_t(Align));
            } else {
                ::operator delete(p);
            }
        }

    } // namespace pool

    /* Constructs a T in mem: T(args...) when T has such a constructor, else
 * aggregate initialization. */
    template <class T, class... A> inline T* make_at(void* mem, A&&... args)
    {
        if constexpr (std::is_constructible_v<T, A&&...>) {
            return new (mem) T(std::forward<A>(args)...);
        } else {
            return new (mem) T{ std::forward<A>(args)... };
        }
    }

    /* Constructs T from args in a pool block; the block goes back if the
 * constructor throws. */
    template <class T, class... A> inline T* pool_new(A&&... args)
    {
        void* mem = pool::allocate<sizeof(T), alignof(T)>();
#if FUTOIN_CXX_EXCEPTIONS
        try {
            return make_at<T>(mem, std::forward<A>(args)...);
        } catch (...) {
            pool::deallocate<sizeof(T), alignof(T)>(mem);
            throw;
        }
#else
        return make_at<T>(mem, std::forward<A>(args)...);
#endif
    }

    /* The FutoInDataDestroy of a pool block holding a T: never throws. */
    template <class T> inline void pool_destroy(void* p) noexcept
    {
        T* t = static_cast<T*>(p);
        guarded_quiet("closure destructor", [t] { t->~T(); });
        pool::deallocate<sizeof(T), alignof(T)>(p);
    }

    /* ---- closures in data ---------------------------------------------------- */

    /* Whether a T travels in a void* by value. */
    template <class T>
    inline constexpr bool
            fits_in_data = std::is_trivially_copyable_v<T>&&
                                   std::is_trivially_destructible_v<T> && sizeof(T) <= sizeof(void*)
            && alignof(T) <= alignof(void*);

    template <class T> inline void* pack(const T& t) noexcept
    {
        void* d = nullptr;
        std::memcpy(&d, &t, sizeof(T));
        return d;
    }

    /* A copy of the T packed in a void* (for an empty T, any pointer). */
    template <class T> struct Unpacked {
        alignas(T) unsigned char buf[sizeof(T)];
        explicit Unpacked(void* d) noexcept
        {
            std::memcpy(buf, &d, sizeof(T));
        }
        T& get() noexcept
        {
            return *std::launder(reinterpret_cast<T*>(buf));
        }
    };

    /* Memory of futoin_stack(): the object and whether it was constructed
 * (the block is zero-filled, so a constructor that throws leaves false). */
    template <class T> struct StackHolder {
        alignas(T) unsigned char storage[sizeof(T)];
        bool live;
        T& get() noexcept
        {
            return *std::launder(reinterpret_cast<T*>(storage));
        }
    };
    template <class T> inline void stack_cleanup(void* p) noexcept
    {
        StackHolder<T>* h = static_cast<StackHolder<T>*>(p);
        if (h->live) {
            h->live = false;
            guarded_quiet("stack() object destructor", [h] { h->get().~T(); });
        }
    }

    /* Constructs a T in futoin_stack() memory of as; nullptr when the engine
 * gives none. */
    template <class T, class... A> inline T* stack_new(FutoInAsyncSteps* as, A&&... args)
    {
        static_assert(alignof(T) <= alignof(std::max_align_t),
                "futoin: an over-aligned type cannot live in stack() memory");
        void* mem = as->api->stack(as, sizeof(StackHolder<T>), &stack_cleanup<T>);
        if (!mem) {
            return nullptr;
        }
        StackHolder<T>* h = static_cast<StackHolder<T>*>(mem);
        T* t = make_at<T>(h->storage, std::forward<A>(args)...);
        h->live = true;
        return t;
    }

    /* Where a callback's closure lives; each store gives access to it from the
 * data pointer of the C callback. */
    template <class T> struct InData {
        template <class Fn> static void with(void* data, Fn&& fn)
        {
            Unpacked<T> u(data);
            fn(u.get());
        }
    };
    template <class T> struct InStack {
        template <class Fn> static void with(void* data, Fn&& fn)
        {
            fn(static_cast<StackHolder<T>*>(data)->get());
        }
    };

    /* ---- callable traits ----------------------------------------------------- */
    template <class T> struct CallTraits : CallTraits<decltype(&T::operator())> {
    };
    template <class R, class... A> struct CallTraits<R (*)(A...)> {
        using result = R;
        using params = std::tuple<A...>;
        static constexpr bool is_const = true;
    };
    template <class R, class... A>
    struct CallTraits<R (*)(A...) noexcept> : CallTraits<R (*)(A...)> {
    };
    template <class C, class R, class... A> struct CallTraits<R (C::*)(A...)> {
        using result = R;
        using params = std::tuple<A...>;
        static constexpr bool is_const = false;
    };
    template <class C, class R, class... A>
    struct CallTraits<R (C::*)(A...) noexcept> : CallTraits<R (C::*)(A...)> {
    };
    template <class C, class R, class... A> struct CallTraits<R (C::*)(A...) const> {
        using result = R;
        using params = std::tuple<A...>;
        static constexpr bool is_const = true;
    };
    template <class C, class R, class... A>
    struct CallTraits<R (C::*)(A...) const noexcept> : CallTraits<R (C::*)(A...) const> {
    };

    /* ---- values: C++ to FutoInBinaryValue ------------------------------------ */

    inline void owned_string_cleanup(FutoInBinaryValue* v) noexcept
    {
        std::free(const_cast<char*>(v->cstr));
    }
    inline FutoInBinaryValue string_value(const char* s, std::size_t n)
    {
        static const FutoInType type = { FTN_TYPE_STRING, &owned_string_cleanup };
        if (n > std::numeric_limits<std::uint32_t>::max() - 1) {
            out_of_memory();
        }
        char* copy = static_cast<char*>(std::malloc(n + 1));
        if (!copy) {
            out_of_memory();
        }
        if (n) {
            std::memcpy(copy, s, n);
        }
        copy[n] = '\0';
        FutoInBinaryValue r;
        std::memset(&r, 0, sizeof(r));
        r.type = &type;
        r.cstr = copy;
        r.length = static_cast<std::uint32_t>(n);
        return r;
    }

    inline FutoInBinaryValue cstr_value(const char* s)
    {
        return s ? string_value(s, std::strlen(s)) : string_value("", 0);
    }

    /* The type descriptor of a C++ object of type T carried as a custom object:
 * one per T, so that the receiving step can check the type. */
    template <class T> struct CustomType {
        static void cleanup(FutoInBinaryValue* v) noexcept
        {
            delete static_cast<T*>(v->custom_data);
        }
        static inline const FutoInType desc = { FTN_TYPE_CUSTOM_OBJECT, &cleanup };
    };

    template <class T> struct IsString : std::false_type {
    };
    template <> struct IsString<std::string> : std::true_type {
    };
    template <> struct IsString<std::string_view> : std::true_type {
    };
    template <> struct IsString<const char*> : std::true_type {
    };
    template <> struct IsString<char*> : std::true_type {
    };

    template <class V> inline FutoInBinaryValue to_value(V&& v)
    {
        using D = std::decay_t<V>;
        if constexpr (std::is_same_v<D, FutoInBinaryValue>) {
            return v;
        } else if constexpr (std::is_same_v<D, bool>) {
            return futoin_val_bool(v);
        } else if constexpr (std::is_integral_v<D>) {
            if constexpr (std::is_signed_v<D>) {
                if constexpr (sizeof(D) <= 4) {
                    return futoin_val_i32(static_cast<std::int32_t>(v));
                } else {
                    return futoin_val_i64(static_cast<std::int64_t>(v));
                }
            } else if constexpr (sizeof(D) <= 4) {
                return futoin_val_u32(static_cast<std::uint32_t>(v));
            } else {
                return futoin_val_u64(static_cast<std::uint64_t>(v));
            }
        } else if constexpr (std::is_same_v<D, float>) {
            static const FutoInType type = { FTN_TYPE_FLOAT, nullptr };
            FutoInBinaryValue r;
            std::memset(&r, 0, sizeof(r));
            r.type = &type;
            r.f = v;
            return r;
        } else if constexpr (std::is_floating_point_v<D>) {
            return futoin_val_double(static_cast<double>(v));
        } else if constexpr (IsString<D>::value) {
            if constexpr (std::is_pointer_v<D>) {
                return cstr_value(v);
            } else {
                return string_value(v.data(), v.size());
            }
        } else {
            static_assert(std::is_object_v<D> && !std::is_array_v<D> && !std::is_pointer_v<D>,
                    "futoin: a result is a number, bool, string, FutoInBinaryValue or an object");
            D* obj = new D(std::forward<V>(v));
            FutoInBinaryValue r;
            std::memset(&r, 0, sizeof(r));
            r.type = &CustomType<D>::desc;
            r.custom_data = obj;
            r.p = obj;
            return r;
        }
    }

    /* Cleans up the values of an args block that did not reach the engine. */
    struct ArgsGuard {
        FutoInArgs* args;
        ~ArgsGuard()
        {
            if (args) {
                for (FutoInBinaryValue& v : args->args) {
                    futoin_reset_binval(&v);
                }
            }
        }
    };

    /* Numbers and bools that put_value() stores field by field: nothing to
 * clean up, nothing that throws. */
    template <class D>
    inline constexpr bool plain_value =
            std::is_same_v<D,
                    bool> || std::is_same_v<D, double> || (std::is_integral_v<D> && std::is_signed_v<D> && sizeof(D) <= 4);

    /* Writes v into slot out, every field. Plain values store their type and
 * value fields directly, not a whole value built aside and copied: typed
 * results then cost what the C code writing the same values costs. */
    template <class V> inline void put_value(FutoInBinaryValue& out, V&& v)
    {
        using D = std::decay_t<V>;
        if constexpr (plain_value<D>) {
            out.u64 = 0;
            out.custom_data = nullptr;
            out.length = 0;
            if constexpr (std::is_same_v<D, bool>) {
                out.type = futoin_val_bool(false).type;
                out.b = v;
            } else if constexpr (std::is_same_v<D, double>) {
                out.type = futoin_val_double(0.0).type;
                out.d = v;
            } else {
                out.type = futoin_val_i32(0).type;
                out.i32 = static_cast<std::int32_t>(v);
            }
        } else {
            out = to_value(std::forward<V>(v));
        }
    }

    template <class... V> inline void fill_args(FutoInArgs& a, V&&... v)
    {
        static_assert(sizeof...(V) <= 4, "futoin: at most four result values");
        constexpr std::size_t n = sizeof...(V);
        std::size_t i = 0;
        if constexpr ((plain_value<std::decay_t<V>> && ...)) {
            /* Nothing can throw: the slots after the values are emptied,
             * the others written whole. One slot at a time: stores, not a
             * string instruction. */
            for (std::size_t k = n; k < 4; ++k) {
                std::memset(&a.args[k], 0, sizeof(a.args[k]));
            }
            (put_value(a.args[i++], std::forward<V>(v)), ...);
            (void)i;
            return;
        }
        /* A value may throw (a string copy, a C++ object): every slot empty
         * first, so that the guard releases only what was made. */
        std::memset(&a, 0, sizeof(a));
        ArgsGuard guard{ &a };
        (put_value(a.args[i++], std::forward<V>(v)), ...);
        (void)i;
        guard.args = nullptr;
    }

    /* ---- values: FutoInBinaryValue to a step's parameters -------------------- */

    enum class Match { ok, wrong_type, out_of_range };

    inline int flags_of(const FutoInBinaryValue& v) noexcept
    {
        return v.type ? v.type->flags : 0;
    }
    inline bool is_integer_flags(int f) noexcept
    {
        return f >= FTN_TYPE_INT8 && f <= FTN_TYPE_UINT64;
    }
    inline bool is_unsigned_flags(int f) noexcept
    {
        return f >= FTN_TYPE_UINT8 && f <= FTN_TYPE_UINT64;
    }
    inline std::int64_t signed_of(const FutoInBinaryValue& v) noexcept
    {
        switch (flags_of(v)) {
        case FTN_TYPE_INT8:
            return v.i8;
        case FTN_TYPE_INT16:
            return v.i16;
        case FTN_TYPE_INT32:
            return v.i32;
        default:
            return v.i64;
        }
    }
    inline std::uint64_t unsigned_of(const FutoInBinaryValue& v) noexcept
    {
        switch (flags_of(v)) {
        case FTN_TYPE_UINT8:
            return v.u8;
        case FTN_TYPE_UINT16:
            return v.u16;
        case FTN_TYPE_UINT32:
            return v.u32;
        default:
            return v.u64;
        }
    }

    template <class D> constexpr const char* integer_name() noexcept
    {
        if constexpr (std::is_signed_v<D>) {
            return sizeof(D) == 1    ? "int8_t"
                    : sizeof(D) == 2 ? "int16_t"
                    : sizeof(D) == 4 ? "int32_t"
                                     : "int64_t";
        } else {
            return sizeof(D) == 1    ? "uint8_t"
                    : sizeof(D) == 2 ? "uint16_t"
                    : sizeof(D) == 4 ? "uint32_t"
                                     : "uint64_t";
        }
    }

    /* ArgConv<D>: whether a value fits a parameter of decayed type D, and the
 * value as that parameter. The primary template: a C++ object carried by
 * to_value() (CustomType<D>). */
    template <class D, class = void> struct ArgConv {
        static constexpr const char* name = "a C++ object of the declared type";
        static Match match(const FutoInBinaryValue& v) noexcept
        {
            return v.type == &CustomType<D>::desc ? Match::ok : Match::wrong_type;
        }
        static D& get(const FutoInBinaryValue& v) noexcept
        {
            return *static_cast<D*>(v.custom_data);
        }
    };
    template <> struct ArgConv<FutoInBinaryValue> {
        static constexpr const char* name = "FutoInBinaryValue";
        static Match match(const FutoInBinaryValue&) noexcept
        {
            return Match::ok;
        }
        static const FutoInBinaryValue& get(const FutoInBinaryValue& v) noexcept
        {
            return v;
        }
    };
    template <> struct ArgConv<bool> {
        static constexpr const char* name = "bool";
        static Match match(const FutoInBinaryValue& v) noexcept
        {
            return flags_of(v) == FTN_TYPE_BOOL ? Match::ok : Match::wrong_type;
        }
        static bool get(const FutoInBinaryValue& v) noexcept
        {
            return v.b;
        }
    };
    template <class D>
    struct ArgConv<D, std::enable_if_t<std::is_integral_v<D> && !std::is_same_v<D, bool>>> {
        static constexpr const char* name = integer_name<D>();
        /* The flags of the C type of D's size and sign: the fast path. */
        static constexpr int exact = std::is_signed_v<D>
                ? (sizeof(D) == 1                ? FTN_TYPE_INT8
                                : sizeof(D) == 2 ? FTN_TYPE_INT16
                                : sizeof(D) == 4 ? FTN_TYPE_INT32
                                                 : FTN_TYPE_INT64)
                : (sizeof(D) == 1                ? FTN_TYPE_UINT8
                                : sizeof(D) == 2 ? FTN_TYPE_UINT16
                                : sizeof(D) == 4 ? FTN_TYPE_UINT32
                                                 : FTN_TYPE_UINT64);
        static D exact_of(const FutoInBinaryValue& v) noexcept
        {
            if constexpr (exact == FTN_TYPE_INT8) {
                return static_cast<D>(v.i8);
            } else if constexpr (exact == FTN_TYPE_INT16) {
                return static_cast<D>(v.i16);
            } else if constexpr (exact == FTN_TYPE_INT32) {
                return static_cast<D>(v.i32);
            } else if constexpr (exact == FTN_TYPE_INT64) {
                return static_cast<D>(v.i64);
            } else if constexpr (exact == FTN_TYPE_UINT8) {
                return static_cast<D>(v.u8);
            } else if constexpr (exact == FTN_TYPE_UINT16) {
                return static_cast<D>(v.u16);
            } else if constexpr (exact == FTN_TYPE_UINT32) {
                return static_cast<D>(v.u32);
            } else {
                return static_cast<D>(v.u64);
            }
        }
        static Match match(const FutoInBinaryValue& v) noexcept
        {
            const int f = flags_of(v);
            if (f == exact) {
                return Match::ok;
            }
            if (!is_integer_flags(f)) {
                return Match::wrong_type;
            }
            if (is_unsigned_flags(f)) {
                return unsigned_of(v) <= static_cast<std::uint64_t>(std::numeric_limits<D>::max())
                        ? Match::ok
                        : Match::out_of_range;
            }
            const std::int64_t x = signed_of(v);
            if constexpr (std::is_signed_v<D>) {
                return x >= static_cast<std::int64_t>(std::numeric_limits<D>::min())
                                && x <= static_cast<std::int64_t>(std::numeric_limits<D>::max())
                        ? Match::ok
                        : Match::out_of_range;
            } else {
                return x >= 0 && static_cast<std::uint64_t>(x) <= std::numeric_limits<D>::max()
                        ? Match::ok
                        : Match::out_of_range;
            }
        }
        static D get(const FutoInBinaryValue& v) noexcept
        {
            const int f = flags_of(v);
            if (f == exact) {
                return exact_of(v);
            }
            return is_unsigned_flags(f) ? static_cast<D>(unsigned_of(v))
                                        : static_cast<D>(signed_of(v));
        }
    };
    template <class D> struct ArgConv<D, std::enable_if_t<std::is_floating_point_v<D>>> {
        static constexpr const char* name = std::is_same_v<D, float> ? "float" : "double";
        /* The flags of D itself: tested first, the common case. */
        static constexpr int exact = std::is_same_v<D, float> ? FTN_TYPE_FLOAT : FTN_TYPE_DOUBLE;
        static Match match(const FutoInBinaryValue& v) noexcept
        {
            const int f = flags_of(v);
            return f == exact || f == FTN_TYPE_FLOAT || f == FTN_TYPE_DOUBLE || is_integer_flags(f)
                    ? Match::ok
                    : Match::wrong_type;
        }
        static D get(const FutoInBinaryValue& v) noexcept
        {
            const int f = flags_of(v);
            if (f == exact) {
                return std::is_same_v<D, float> ? static_cast<D>(v.f) : static_cast<D>(v.d);
            }
            if (f == FTN_TYPE_FLOAT) {
                return static_cast<D>(v.f);
            }
            if (f == FTN_TYPE_DOUBLE) {
                return static_cast<D>(v.d);
            }
            return is_unsigned_flags(f) ? static_cast<D>(unsigned_of(v))
                                        : static_cast<D>(signed_of(v));
        }
    };
    struct StringMatch {
        static Match match(const FutoInBinaryValue& v) noexcept
        {
            return flags_of(v) == FTN_TYPE_STRING ? Match::ok : Match::wrong_type;
        }
    };
    template <> struct ArgConv<std::string_view> : StringMatch {
        static constexpr const char* name = "std::string_view";
        static std::string_view get(const FutoInBinaryValue& v) noexcept
        {
            return v.cstr ? std::string_view(v.cstr, v.length) : std::string_view();
        }
    };
    template <> struct ArgConv<std::string> : StringMatch {
        static constexpr const char* name = "std::string";
        static std::string get(const FutoInBinaryValue& v)
        {
            return v.cstr ? std::string(v.cstr, v.length) : std::string();
        }
    };
    template <> struct ArgConv<const char*> : StringMatch {
        static constexpr const char* name = "const char*";
        static const char* get(const FutoInBinaryValue& v) noexcept
        {
            return v.cstr ? v.cstr : "";
        }
    };

    /* What a value is, for the message of a mismatch. */
    inline void describe_value(const FutoInBinaryValue& v, char* out, std::size_t size) noexcept
    {
        static const char* const names[] = { "type 0", "a custom object", "a string",
            "a UTF-16 string", "a UTF-32 string", "a bool", "an int8", "an int16", "an int32",
            "an int64", "a uint8", "a uint16", "a uint32", "a uint64", "a float", "a double" };
        const int f = flags_of(v);
        if (!v.type) {
            std::snprintf(out, size, "no value");
        } else if (f & FTN_TYPE_ARRAY) {
            std::snprintf(out, size, "an array of %s", names[f & FTN_BASE_TYPE_MASK]);
        } else if (is_integer_flags(f) && is_unsigned_flags(f)) {
            std::snprintf(out, size, "%s (%llu)", names[f],
                    static_cast<unsigned long long>(unsigned_of(v)));
        } else if (is_integer_flags(f)) {
            std::snprintf(out, size, "%s (%lld)", names[f], static_cast<long long>(signed_of(v)));
        } else {
            std::snprintf(out, size, "%s", names[f & FTN_BASE_TYPE_MASK]);
        }
    }

    inline void report_mismatch(FutoInAsyncSteps* as, std::size_t index, const char* wanted,
            const FutoInBinaryValue& v, Match m) noexcept
    {
        char got[96];
        char info[256];
        describe_value(v, got, sizeof(got));
        std::snprintf(info, sizeof(info),
                "futoin::Steps: parameter %zu of the step wants %s, the result is %s%s", index + 1,
                wanted, got, m == Match::out_of_range ? ", out of its range" : "");
        futoin_error(as, FUTOIN_INTERNAL_ERROR, info);
    }

    /* How many successive values a parameter of decayed type D takes: 1, or
 * ArgConv<D>::span for a record made of several values (e.g.
 * futoin::uv::Stat: size, mode and time), whose match() and get() take a
 * pointer to the first of them. */
    template <class D, class = void> struct ArgSpan : std::integral_constant<std::size_t, 1> {
    };
    template <class D>
    struct ArgSpan<D, std::void_t<decltype(ArgConv<D>::span)>>
        : std::integral_constant<std::size_t, ArgConv<D>::span> {
    };
    template <class P> using ParamType = std::remove_cv_t<std::remove_reference_t<P>>;

    /* The number of values the parameters P... take together. */
    template <class... P> constexpr std::size_t value_count() noexcept
    {
        return (std::size_t(0) + ... + ArgSpan<ParamType<P>>::value);
    }
    /* The index of the first value of parameter I among P... */
    template <std::size_t I, class... P> constexpr std::size_t value_index() noexcept
    {
        constexpr std::size_t spans[] = { ArgSpan<ParamType<P>>::value..., 0 };
        std::size_t at = 0;
        for (std::size_t k = 0; k < I; ++k) {
            at += spans[k];
        }
        return at;
    }
    template <class D> inline Match match_values(const FutoInBinaryValue* v) noexcept
    {
        if constexpr (ArgSpan<D>::value == 1) {
            return ArgConv<D>::match(*v);
        } else {
            return ArgConv<D>::match(v);
        }
    }

    /* The argument for parameter P from its first value v: custom objects
 * are moved from (the engine drops them after the step), or passed as
 * lvalues to a T& parameter. */
    template <class P> inline decltype(auto) pass_arg(const FutoInBinaryValue* v)
    {
        using D = ParamType<P>;
        if constexpr (ArgSpan<D>::value != 1) {
            return ArgConv<D>::get(v);
        } else if constexpr (std::is_lvalue_reference_v<P>) {
            return ArgConv<D>::get(*v);
        } else if constexpr (std::is_lvalue_reference_v<decltype(ArgConv<D>::get(*v))>) {
            return std::move(ArgConv<D>::get(*v));
        } else {
            return ArgConv<D>::get(*v);
        }
    }

    /* Checks args against the parameters P... and calls f(s, args...). */
    template <class F, class S, class... P, std::size_t... I>
    inline void call_typed(F& f, S& s, const FutoInArgs* args, std::tuple<P...>*,
            std::index_sequence<I...>)
    {
        static_assert(value_count<P...>() <= 4, "futoin: a step receives at most four results");
        if constexpr (sizeof...(P) == 0) {
            (void)args;
            f(s);
        } else {
            FutoInArgs none;
            if (!args) {
                std::memset(&none, 0, sizeof(none));
                args = &none;
            }
            bool ok = true;
            (void)((ok = [&] {
                using D = ParamType<P>;
                constexpr std::size_t at = value_index<I, P...>();
                const Match m = match_values<D>(&args->args[at]);
                if (m != Match::ok) {
                    report_mismatch(s.handle(), I, ArgConv<D>::name, args->args[at], m);
                    return false;
                }
                return true;
            }()) && ...);
            if (ok) {
                f(s, pass_arg<P>(&args->args[value_index<I, P...>()])...);
            }
        }
    }

    template <class Tuple> struct DropFirst;
    template <class First, class... Rest> struct DropFirst<std::tuple<First, Rest...>> {
        using first = First;
        using rest = std::tuple<Rest...>;
    };

    /* Whether a step function F of typed parameters may travel in data. */
    template <class F> constexpr bool step_in_data() noexcept
    {
        return fits_in_data<F> && CallTraits<F>::is_const;
    }
    /* The same for a callback of fixed parameters A... */
    template <class F, class... A> constexpr bool fixed_in_data() noexcept
    {
        return fits_in_data<F> && std::is_invocable_v<const F&, A...>;
    }

} // namespace detail
/** @endcond */

/**
 * A non-owning view over a FutoInAsyncSteps* (a root, a flow, a parallel
 * interface; this library's or another implementation's): what the
 * callbacks receive. Cheap to copy; valid while the C object is.
 */
class Steps {
public:
    /** @param as the C object to view (not owned) */
    explicit Steps(FutoInAsyncSteps* as) noexcept
        : as_(as)
    {
    }
    /** @return the C object */
    FutoInAsyncSteps* handle() const noexcept
    {
        return as_;
    }

    /**
     * Adds a step: f(Steps&, P...) receives the previous step's results
     * converted to its parameters P (at most four).
     * @param f the step
     * @return *this
     */
    template <class F> Steps& add(F&& f);
    /**
     * Adds a step with an error handler eh(Steps&, std::string_view code).
     * @param f the step  @param eh its error handler
     * @return *this
     */
    template <class F, class EH> Steps& add(F&& f, EH&& eh);
    /**
     * Adds a parallel step; add() on the returned view adds its branches.
     * @return the view to add branches to (valid as futoin_parallel() says)
     */
    Steps parallel();
    /** @param eh the parallel step's error handler  @return as parallel() */
    template <class EH> Steps parallel(EH&& eh);
    /**
     * Adds a step synchronized on a sync object (Mutex, Throttle, Limiter):
     * f receives the input of the sync step, as add() does.
     * @param sync the object  @param f the critical section
     * @return *this
     */
    template <class F> Steps& sync(FutoInSync* sync, F&& f);
    /** @param sync the object  @param f the critical section  @param eh its
     * error handler (not called for a rejection)  @return *this */
    template <class F, class EH> Steps& sync(FutoInSync* sync, F&& f, EH&& eh);

    /**
     * Completes the step with up to four values: numbers, bool, strings
     * (copied), FutoInBinaryValue (passed on) or any other object (moved
     * into a custom value the next step receives as its type).
     * @param v the values
     */
    template <class... V> void success(V&&... v);
    /** Adds a step that succeeds with v (successStep()). @param v the values */
    template <class... V> void success_step(V&&... v);
    /**
     * Fails the step with code and info. With exceptions it does not
     * return; without, return from the callback right after.
     * @param code the error code  @param info its error_info (may be NULL)
     */
    FUTOIN_CXX_NORETURN void error(const char* code, const char* info = nullptr);
    /** @param code the error code  @param info its error_info */
    FUTOIN_CXX_NORETURN void error(std::string_view code, std::string_view info = {});
    /**
     * Fails a waiting step from outside its callbacks (a timer, another
     * flow): records the error and returns, whatever the build.
     * @param code the error code  @param info its error_info (may be NULL)
     */
    void complete_error(const char* code, const char* info = nullptr) noexcept
    {
        futoin_error(as_, code, info);
    }
    /** @return the flow's error_info ("" if none), valid until its next error */
    std::string_view error_info() const noexcept
    {
        return futoin_error_info(as_);
    }
    /**
     * Fails the step with Timeout unless it completes within d (rounded up
     * to ms, at most UINT32_MAX).
     * @param d the time limit
     */
    template <class Rep, class Period> void set_timeout(std::chrono::duration<Rep, Period> d);
    /** Sets the step's cancel handler ch(Steps&). @param ch the handler */
    template <class F> void set_cancel(F&& ch);
    /** The step waits for a later success() or error(). */
    void wait_external() noexcept
    {
        as_->api->waitExternal(as_);
    }
    /**
     * Adds a loop step: body(Steps&) until break_loop().
     * @param body the body  @param label the loop's label or NULL (copied)
     * @return *this
     */
    template <class F> Steps& loop(F&& body, const char* label = nullptr);
    /**
     * Adds a loop step: body(Steps&, std::size_t i) for i in [0, count).
     * @param count iterations  @param body the body  @param label or NULL
     * @return *this
     */
    template <class F> Steps& repeat(std::size_t count, F&& body, const char* label = nullptr);
    /**
     * Adds a loop step over a container: body(Steps&, element) or
     * body(Steps&, std::size_t i, element), in order. An lvalue container
     * is referred to (keep it alive and unchanged until the loop ends); an
     * rvalue one is moved into the step.
     * @param c the container  @param body the body  @param label or NULL
     * @return *this
     */
    template <class C, class F> Steps& for_each(C&& c, F&& body, const char* label = nullptr);
    /** Leaves the innermost loop or the one named label (does not return
     * with exceptions). @param label the label or NULL */
    FUTOIN_CXX_NORETURN void break_loop(const char* label = nullptr);
    /** Starts the next iteration (does not return with exceptions).
     * @param label the label or NULL */
    FUTOIN_CXX_NORETURN void continue_loop(const char* label = nullptr);
    /**
     * The root's state variable name, a T made from args on first use and
     * destroyed with the root.
     * @param name the name  @param args T's constructor arguments
     * @return the variable; nullptr if it holds another type or cannot be
     * made (T's constructor threw, out of memory, the root is being freed)
     */
    template <class T, class... A> T* state(const char* name, A&&... args);
    /**
     * A T made from args in memory that lives as long as the current step
     * (stack()); destroyed with it.
     * @param args T's constructor arguments
     * @return the object, nullptr when the engine gives no memory
     */
    template <class T, class... A> T* stack(A&&... args);
    /** @return the flow's rootId() */
    std::ptrdiff_t root_id() const noexcept
    {
        return as_->api->rootId(as_);
    }
    /** @return isValid() */
    bool is_valid() const noexcept
    {
        return as_->api->isValid(as_) != 0;
    }
    /** @return the loop the flow runs on (futoin_asyncsteps_loop()) */
    FutoInLoop* event_loop() const noexcept
    {
        return futoin_asyncsteps_loop(as_);
    }
    /**
     * Copies the steps and state variables of a model root
     * (futoin_copy_from()): the model's closures are shared, not copied,
     * so keep the model alive while the copies may run them. Only steps
     * whose closures travel in data can be copied (captureless lambdas,
     * or one pointer-sized capture); a pooled one is refused as
     * futoin_copy_from() refuses owned steps. A state<T>() variable of the
     * model is re-created in as as a value-initialized T.
     * @param model the model (a root that is never executed)
     * @return *this
     */
    Steps& copy_from(const Steps& model) noexcept
    {
        futoin_copy_from(as_, model.as_);
        return *this;
    }
    /**
     * Adds a step that waits for c (futoin_await()): it succeeds with c's
     * values or fails with its error.
     * @param c the completion (see futoin::Completion)
     * @return *this
     */
    Steps& await(FutoInCompletion* c) noexcept
    {
        futoin_await(as_, c, nullptr, nullptr);
        return *this;
    }
    /** @param c the completion  @param eh the await step's error handler
     * eh(Steps&, std::string_view code)  @return *this */
    template <class EH> Steps& await(FutoInCompletion* c, EH&& eh);
    /**
     * Adds a step that waits for a std::future-like object without
     * blocking the loop: std::future<T>, std::shared_future<T>, anything
     * with wait_for(duration) answering a status whose `ready` means
     * ready, and get(). The step succeeds with get()'s value (typed, as
     * success() passes it: the next step takes a T; nothing for void) or,
     * when get() throws, fails as a step that throws does (a futoin::Error
     * with its code, another std::exception InternalError with what()).
     *
     * The step polls: it checks at once, then from a loop timer, first
     * after 1 ms, the interval doubling up to max_poll (so a value that
     * comes late is seen within max_poll). No thread waits on the future.
     * The future and the timer live in the step's stack() memory: a
     * cancel, a timeout (set_timeout() around it) or the root's end
     * cancels the timer and destroys the future, so nothing completes the
     * step late. Beware that the destructor of the last future of a
     * std::async() task blocks until the task ends: give such a future a
     * timeout only if its task ends soon, or keep a std::shared_future of
     * it elsewhere. Without exceptions, get() of a failed future aborts.
     * @param fut the future (moved into the step)
     * @param max_poll the longest interval between two checks (at least
     * 1 ms; rounded up to ms)
     * @return *this
     * @par Thread
     * The loop's thread; the future may be fulfilled from any thread.
     */
    template <class Fut>
    Steps& await_future(Fut&& fut,
            std::chrono::milliseconds max_poll = std::chrono::milliseconds(16));

protected:
    FutoInAsyncSteps* as_; /**< the C object */
};

/** @cond FUTOIN_DETAIL */
namespace detail {

    /* ---- the thunks the engine calls ----------------------------------------- */

    template <class F>
    inline void run_step(F& f, FutoInAsyncSteps* as, const FutoInArgs* args) noexcept
    {
        using Params = typename CallTraits<F>::params;
        using Split = DropFirst<Params>;
        static_assert(std::is_void_v<typename CallTraits<F>::result>,
                "futoin: a step returns void");
        static_assert(
                std::is_same_v<std::remove_cv_t<std::remove_reference_t<typename Split::first>>,
                        Steps>,
                "futoin: the first parameter of a step is futoin::Steps&");
        using Rest = typename Split::rest;
        Steps s(as);
        guarded(as, [&] {
            call_typed(f, s, args, static_cast<Rest*>(nullptr),
                    std::make_index_sequence<std::tuple_size_v<Rest>>());
        });
    }

    template <class F, class EH> struct StepBlock {
        F f;
        EH eh;
    };

    /* How a step's closures travel: f in data (eh, if any, empty), eh in data
 * (f empty), or both in a pool block. */
    enum class Layout { f_in_data, eh_in_data, pooled };
    template <class F, class EH> constexpr Layout step_layout() noexcept
    {
        constexpr bool f_small = step_in_data<F>();
        if constexpr (std::is_same_v<EH, NoHandler>) {
            return f_small ? Layout::f_in_data : Layout::pooled;
        } else {
            constexpr bool eh_small = fixed_in_data<EH, Steps&, std::string_view>();
            if (f_small && eh_small && std::is_empty_v<EH>) {
                return Layout::f_in_data;
            }
            if (f_small && eh_small && std::is_empty_v<F>) {
                return Layout::eh_in_data;
            }
            return Layout::pooled;
        }
    }

    template <class F, class EH, Layout L>
    inline void step_thunk(FutoInAsyncSteps* as, void* data, const FutoInArgs* args) noexcept
    {
        if constexpr (L == Layout::pooled) {
            run_step(static_cast<StepBlock<F, EH>*>(data)->f, as, args);
        } else {
            Unpacked<F> u(L == Layout::f_in_data ? data : nullptr);
            run_step(u.get(), as, args);
        }
    }

    template <class EH>
    inline void run_handler(EH& eh, FutoInAsyncSteps* as, const char* code) noexcept
    {
        Steps s(as);
        guarded(as, [&] { eh(s, std::string_view(code ? code : "")); });
    }

    template <class F, class EH, Layout L>
    inline void eh_thunk(FutoInAsyncSteps* as, void* data, const char* code) noexcept
    {
        if constexpr (L == Layout::pooled) {
            run_handler(static_cast<StepBlock<F, EH>*>(data)->eh, as, code);
        } else {
            Unpacked<EH> u(L == Layout::eh_in_data ? data : nullptr);
            run_handler(u.get(), as, code);
        }
    }

    /* An error handler stored on its own (parallel()): Store gives access. */
    template <class EH, class Store>
    inline void eh_store_thunk(FutoInAsyncSteps* as, void* data, const char* code) noexcept
    {
        Store::with(data, [&](EH& eh) { run_handler(eh, as, code); });
    }

    template <class F, class Store>
    inline void cancel_thunk(FutoInAsyncSteps* as, void* data) noexcept
    {
        Store::with(data, [&](F& f) {
            Steps s(as);
            guarded_quiet("exception from a cancel handler", [&] { f(s); });
        });
    }

    /* A step's (f, eh) in stack() memory: sync(). */
    template <class F, class EH>
    inline void step_stack_thunk(FutoInAsyncSteps* as, void* data, const FutoInArgs* args) noexcept
    {
        run_step(static_cast<StackHolder<StepBlock<F, EH>>*>(data)->get().f, as, args);
    }
    template <class F, class EH>
    inline void eh_stack_thunk(FutoInAsyncSteps* as, void* data, const char* code) noexcept
    {
        run_handler(static_cast<StackHolder<StepBlock<F, EH>>*>(data)->get().eh, as, code);
    }

    /* ---- loops ------------------------------------------------------------------ */

    template <class F> inline void run_body(F& f, FutoInAsyncSteps* as) noexcept
    {
        Steps s(as);
        guarded(as, [&] { f(s); });
    }
    template <class F> inline void run_body_i(F& f, FutoInAsyncSteps* as, std::size_t i) noexcept
    {
        Steps s(as);
        guarded(as, [&] { f(s, i); });
    }

    template <class F, class Store>
    inline void loop_thunk(FutoInAsyncSteps* as, void* data) noexcept
    {
        Store::with(data, [&](F& f) { run_body(f, as); });
    }
    template <class F, class Store>
    inline void repeat_thunk(FutoInAsyncSteps* as, void* data, std::size_t i) noexcept
    {
        Store::with(data, [&](F& f) { run_body_i(f, as, i); });
    }

    /* A loop whose body does not fit in data: an owned step holds it, and adds
 * the loop when it runs (the loop then lives inside the owned step). */
    template <class F> struct LoopBlock {
        F body;
        std::string label;
        bool has_label;
        std::size_t count;
        const char* label_ptr() const noexcept
        {
            return has_label ? label.c_str() : nullptr;
        }
    };
    template <class F> inline void loop_body_thunk(FutoInAsyncSteps* as, void* data) noexcept
    {
        run_body(static_cast<LoopBlock<F>*>(data)->body, as);
    }
    template <class F>
    inline void repeat_body_thunk(FutoInAsyncSteps* as, void* data, std::size_t i) noexcept
    {
        run_body_i(static_cast<LoopBlock<F>*>(data)->body, as, i);
    }
    template <class F>
    inline void loop_start_thunk(FutoInAsyncSteps* as, void* data, const FutoInArgs*) noexcept
    {
        LoopBlock<F>* b = static_cast<LoopBlock<F>*>(data);
        as->api->loop(as, b, &loop_body_thunk<F>, b->label_ptr());
    }
    template <class F>
    inline void repeat_start_thunk(FutoInAsyncSteps* as, void* data, const FutoInArgs*) noexcept
    {
        LoopBlock<F>* b = static_cast<LoopBlock<F>*>(data);
        as->api->repeat(as, b, b->count, &repeat_body_thunk<F>, b->label_ptr());
    }

    /* for_each: the container (a pointer to an lvalue, or the moved rvalue),
 * the body and an iterator that follows the index. */
    template <class C> struct ContainerRef {
        C* c;
        C& get() noexcept
        {
            return *c;
        }
    };
    template <class C> struct ContainerOwn {
        C c;
        C& get() noexcept
        {
            return c;
        }
    };
    template <class Holder, class C, class F> struct ForEachBlock {
        Holder holder;
        F body;
        std::string label;
        bool has_label;
        decltype(std::begin(std::declval<C&>())) it;
        std::size_t pos;
    };
    template <class Block>
    inline void foreach_iter_thunk(FutoInAsyncSteps* as, void* data, std::size_t i) noexcept
    {
        Block* b = static_cast<Block*>(data);
        if (i > b->pos) {
            std::advance(b->it, static_cast<std::ptrdiff_t>(i - b->pos));
            b->pos = i;
        }
        Steps s(as);
        guarded(as, [&] {
            if constexpr (std::is_invocable_v<decltype(b->body)&, Steps&, std::size_t,
                                  decltype(*b->it)>) {
                b->body(s, i, *b->it);
            } else {
                b->body(s, *b->it);
            }
        });
    }
    template <class Block>
    inline void foreach_start_thunk(FutoInAsyncSteps* as, void* data, const FutoInArgs*) noexcept
    {
        Block* b = static_cast<Block*>(data);
        auto& c = b->holder.get();
        b->it = std::begin(c);
        b->pos = 0;
        const auto n = std::distance(std::begin(c), std::end(c));
        as->api->repeat(as, b, static_cast<std::size_t>(n), &foreach_iter_thunk<Block>,
                b->has_label ? b->label.c_str() : nullptr);
    }

    /* ---- state variables ---------------------------------------------------- */

    template <class T> struct StateTag {
        static inline const char id = 0;
    };
    template <class T> struct StateHolder {
        const void* tag;
        T value;
    };
    /* The arguments of the state() call being made on this thread. A variable
 * that copy_from() re-creates in another root calls its allocator again,
 * with the data pointer of the call that made it in the model, long gone:
 * it is told apart by not being the pending call's, and gets a
 * value-initialized T (none when T has no default constructor). */
    inline thread_local const void* state_args = nullptr;

    template <class T, class Tuple> inline void* state_allocate(void* data) noexcept
    {
        void* made = nullptr;
        const bool own = data && data == state_args;
        state_args = nullptr;
        if (own) {
            guarded_quiet("exception from a state() constructor", [&] {
                made = new (std::nothrow) StateHolder<T>{ &StateTag<T>::id,
                    std::make_from_tuple<T>(std::move(*static_cast<Tuple*>(data))) };
            });
        } else if constexpr (std::is_default_constructible_v<T>) {
            guarded_quiet("exception from a state() constructor", [&] {
                made = new (std::nothrow) StateHolder<T>{ &StateTag<T>::id, T() };
            });
        }
        return made;
    }
    /* Reads the value only: the data pointer of the call that made it is gone. */
    template <class T> inline void state_cleanup(void*, void* value) noexcept
    {
        StateHolder<T>* h = static_cast<StateHolder<T>*>(value);
        guarded_quiet("state() destructor", [h] { delete h; });
    }

    /* The unhandled-error handler of Root::execute(), in a state variable of
 * the root (it lives as long as the root). */
    struct Unhandled {
        void* obj = nullptr;
        void (*call)(void* obj, Steps& as, std::string_view code) = nullptr;
        void (*destroy)(void* obj) noexcept = nullptr;
        Unhandled() noexcept = default;
        Unhandled(const Unhandled&) = delete;
        Unhandled& operator=(const Unhandled&) = delete;
        ~Unhandled()
        {
            if (obj) {
                destroy(obj);
            }
        }
    };
    inline void unhandled_thunk(FutoInAsyncSteps* as, void* data, const char* code) noexcept
    {
        Unhandled* u = static_cast<Unhandled*>(data);
        Steps s(as);
        guarded_quiet("exception from an unhandled-error handler",
                [&] { u->call(u->obj, s, std::string_view(code ? code : "")); });
    }

    /* The end hook of Root::on_end(), in a state variable of the root: the
 * engine frees state variables after it told the hook that the root was
 * freed, so the closure outlives its last call. A hook replaced or removed
 * from inside its own call is destroyed when that call returns. */
    struct EndHook {
        void* obj = nullptr;
        void (*call)(void* obj, Steps& root, const FutoInRootEnd& end) = nullptr;
        void (*destroy)(void* obj) noexcept = nullptr;
        void* running = nullptr;     /* the closure being called */
        bool retire_running = false; /* replaced during its call */
        EndHook() noexcept = default;
        EndHook(const EndHook&) = delete;
        EndHook& operator=(const EndHook&) = delete;
        /* Drops the current closure (kept until its call returns if running). */
        void drop() noexcept
        {
            if (obj && obj == running) {
                retire_running = true;
            } else if (obj) {
                destroy(obj);
            }
            obj = nullptr;
        }
        ~EndHook()
        {
            drop();
        }
    };
    inline void end_thunk(FutoInAsyncSteps* root, void* data, const FutoInRootEnd* end) noexcept
    {
        EndHook* h = static_cast<EndHook*>(data);
        if (!h->obj) {
            return;
        }
        void* const cur = h->obj;
        void (*const cur_destroy)(void*) noexcept = h->destroy;
        void* const outer = h->running;
        const bool outer_retire = h->retire_running;
        h->running = cur;
        h->retire_running = false;
        Steps s(root);
        guarded_quiet("exception from an end hook", [&] { h->call(cur, s, *end); });
        const bool retire = h->retire_running;
        h->running = outer;
        h->retire_running = outer_retire;
        if (retire) {
            cur_destroy(cur);
        }
    }

    /* ---- callbacks on the loop (Loop::immediate(), Loop::deferred()) ------- */

    /* The links of a pending callback in its Loop's list. */
    struct ScheduledNode {
        ScheduledNode* prev;
        ScheduledNode* next;
        void unlink() noexcept
        {
            prev->next = next;
            next->prev = prev;
            prev = next = this;
        }
    };
    /* A pending callback: its closure, its C handle and its owner (a
     * futoin::Scheduled, or nullptr once detached). */
    struct ScheduledBase : ScheduledNode {
        FutoInHandle handle;
        Scheduled* owner;
        void (*run)(ScheduledBase* self) noexcept;
        void (*destroy)(ScheduledBase* self) noexcept;
    };
    template <class F> struct ScheduledBlock : ScheduledBase {
        F f;
        template <class A>
        explicit ScheduledBlock(A&& a)
            : ScheduledBase()
            , f(std::forward<A>(a))
        {
        }
        static void run_fn(ScheduledBase* self) noexcept
        {
            ScheduledBlock* b = static_cast<ScheduledBlock*>(self);
            guarded_quiet("exception from a loop callback", [b] { b->f(); });
            pool_destroy<ScheduledBlock>(b);
        }
        static void destroy_fn(ScheduledBase* self) noexcept
        {
            pool_destroy<ScheduledBlock>(static_cast<ScheduledBlock*>(self));
        }
    };

} // namespace detail
/** @endcond */

/* ---- Steps: the templates ---------------------------------------------------- */

template <class F> inline Steps& Steps::add(F&& f)
{
    return add(std::forward<F>(f), detail::NoHandler{});
}

template <class F, class EH> inline Steps& Steps::add(F&& f, EH&& eh)
{
    using FD = std::decay_t<F>;
    using ED = std::decay_t<EH>;
    constexpr detail::Layout L = detail::step_layout<FD, ED>();
    FutoInAsyncSteps_execute_callback ecb = &detail::step_thunk<FD, ED, L>;
    FutoInAsyncSteps_error_callback hcb = nullptr;
    if constexpr (!std::is_same_v<ED, detail::NoHandler>) {
        hcb = &detail::eh_thunk<FD, ED, L>;
    }
    if constexpr (L == detail::Layout::f_in_data) {
        as_->api->add(as_, detail::pack(f), ecb, hcb);
    } else if constexpr (L == detail::Layout::eh_in_data) {
        as_->api->add(as_, detail::pack(eh), ecb, hcb);
    } else {
        using Block = detail::StepBlock<FD, ED>;
        Block* b = detail::pool_new<Block>(std::forward<F>(f), std::forward<EH>(eh));
        (futoin_add_owned)(as_, ecb, hcb, b, &detail::pool_destroy<Block>);
    }
    return *this;
}

inline Steps Steps::parallel()
{
    return Steps(as_->api->parallel(as_, nullptr, nullptr));
}

template <class EH> inline Steps Steps::parallel(EH&& eh)
{
    using ED = std::decay_t<EH>;
    if constexpr (detail::fixed_in_data<ED, Steps&, std::string_view>()) {
        return Steps(as_->api->parallel(as_, detail::pack(eh),
                &detail::eh_store_thunk<ED, detail::InData<ED>>));
    } else {
        /* No owned variant of parallel(): the handler lives in the current
         * step's stack() memory, which outlives the parallel step. */
        ED* h = detail::stack_new<ED>(as_, std::forward<EH>(eh));
        if (!h) {
            error(FUTOIN_INTERNAL_ERROR, "futoin::Steps::parallel(): no stack() memory");
#if !FUTOIN_CXX_EXCEPTIONS
            return Steps(as_->api->parallel(as_, nullptr, nullptr));
#endif
        }
        /* The holder starts at the object (StackHolder's first member). */
        return Steps(as_->api->parallel(as_, static_cast<void*>(h),
                &detail::eh_store_thunk<ED, detail::InStack<ED>>));
    }
}

template <class EH> inline Steps& Steps::await(FutoInCompletion* c, EH&& eh)
{
    using ED = std::decay_t<EH>;
    if constexpr (detail::fixed_in_data<ED, Steps&, std::string_view>()) {
        futoin_await(as_, c, &detail::eh_store_thunk<ED, detail::InData<ED>>, detail::pack(eh));
    } else {
        /* As parallel(): the handler lives in the current step's stack()
         * memory, which outlives the await step. */
        ED* h = detail::stack_new<ED>(as_, std::forward<EH>(eh));
        if (!h) {
            error(FUTOIN_INTERNAL_ERROR, "futoin::Steps::await(): no stack() memory");
#if !FUTOIN_CXX_EXCEPTIONS
            return *this;
#endif
        }
        futoin_await(as_, c, &detail::eh_store_thunk<ED, detail::InStack<ED>>,
                static_cast<void*>(h));
    }
    return *this;
}

template <class F> inline Steps& Steps::sync(FutoInSync* sync, F&& f)
{
    return this->sync(sync, std::forward<F>(f), detail::NoHandler{});
}

template <class F, class EH> inline Steps& Steps::sync(FutoInSync* sync, F&& f, EH&& eh)
{
    using FD = std::decay_t<F>;
    using ED = std::decay_t<EH>;
    constexpr detail::Layout L = detail::step_layout<FD, ED>();
    if constexpr (L != detail::Layout::pooled) {
        FutoInAsyncSteps_error_callback hcb = nullptr;
        if constexpr (!std::is_same_v<ED, detail::NoHandler>) {
            hcb = &detail::eh_thunk<FD, ED, L>;
        }
        void* data = L == detail::Layout::f_in_data ? detail::pack(f) : nullptr;
        if constexpr (L == detail::Layout::eh_in_data) {
            data = detail::pack(eh);
        }
        as_->api->addSync(as_, sync, data, &detail::step_thunk<FD, ED, L>, hcb);
    } else {
        /* No owned variant of addSync(): the closures live in the current
         * step's stack() memory, which outlives the sync step. */
        using Block = detail::StepBlock<FD, ED>;
        Block* b = detail::stack_new<Block>(as_, std::forward<F>(f), std::forward<EH>(eh));
        if (!b) {
            error(FUTOIN_INTERNAL_ERROR, "futoin::Steps::sync(): no stack() memory");
#if !FUTOIN_CXX_EXCEPTIONS
            return *this;
#endif
        }
        FutoInAsyncSteps_error_callback hcb = nullptr;
        if constexpr (!std::is_same_v<ED, detail::NoHandler>) {
            hcb = &detail::eh_stack_thunk<FD, ED>;
        }
        as_->api->addSync(as_, sync, static_cast<void*>(b), &detail::step_stack_thunk<FD, ED>, hcb);
    }
    return *this;
}

template <class... V> inline void Steps::success(V&&... v)
{
    if constexpr (sizeof...(V) == 0) {
        futoin_success(as_);
    } else {
        FutoInArgs a;
        detail::fill_args(a, std::forward<V>(v)...);
        as_->api->success(as_, &a);
    }
}

template <class... V> inline void Steps::success_step(V&&... v)
{
    FutoInArgs a;
    detail::fill_args(a, std::forward<V>(v)...);
    (futoin_success_step)(as_, &a);
}

inline void Steps::error(const char* code, const char* info)
{
    futoin_error(as_, code, info);
#if FUTOIN_CXX_EXCEPTIONS
    throw detail::Unwind();
#endif
}

inline void Steps::error(std::string_view code, std::string_view info)
{
    {
        const std::string c(code);
        const std::string i(info);
        futoin_error(as_, c.c_str(), i.c_str());
    }
#if FUTOIN_CXX_EXCEPTIONS
    throw detail::Unwind();
#endif
}

inline void Steps::break_loop(const char* label)
{
    as_->api->breakLoop(as_, label);
#if FUTOIN_CXX_EXCEPTIONS
    throw detail::Unwind();
#endif
}

inline void Steps::continue_loop(const char* label)
{
    as_->api->continueLoop(as_, label);
#if FUTOIN_CXX_EXCEPTIONS
    throw detail::Unwind();
#endif
}

template <class Rep, class Period>
inline void Steps::set_timeout(std::chrono::duration<Rep, Period> d)
{
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
    std::uint32_t t = 0;
    if (ms > 0) {
        t = ms >= static_cast<decltype(ms)>(std::numeric_limits<std::uint32_t>::max())
                ? std::numeric_limits<std::uint32_t>::max()
                : static_cast<std::uint32_t>(ms);
    }
    as_->api->setTimeout(as_, t);
}

template <class F> inline void Steps::set_cancel(F&& ch)
{
    using FD = std::decay_t<F>;
    if constexpr (detail::fixed_in_data<FD, Steps&>()) {
        as_->api->setCancel(as_, detail::pack(ch), &detail::cancel_thunk<FD, detail::InData<FD>>);
    } else {
        /* The handler lives in the step's own stack() memory. */
        FD* h = detail::stack_new<FD>(as_, std::forward<F>(ch));
        if (!h) {
            error(FUTOIN_INTERNAL_ERROR, "futoin::Steps::set_cancel(): no stack() memory");
#if !FUTOIN_CXX_EXCEPTIONS
            return;
#endif
        }
        as_->api->setCancel(as_, static_cast<void*>(h),
                &detail::cancel_thunk<FD, detail::InStack<FD>>);
    }
}

template <class F> inline Steps& Steps::loop(F&& body, const char* label)
{
    using FD = std::decay_t<F>;
    if constexpr (detail::fixed_in_data<FD, Steps&>()) {
        as_->api->loop(as_, detail::pack(body), &detail::loop_thunk<FD, detail::InData<FD>>, label);
    } else {
        using Block = detail::LoopBlock<FD>;
        Block* b = detail::pool_new<Block>(std::forward<F>(body),
                label ? std::string(label) : std::string(), label != nullptr, std::size_t(0));
        (futoin_add_owned)(as_, &detail::loop_start_thunk<FD>, nullptr, b,
                &detail::pool_destroy<Block>);
    }
    return *this;
}

template <class F> inline Steps& Steps::repeat(std::size_t count, F&& body, const char* label)
{
    using FD = std::decay_t<F>;
    if constexpr (detail::fixed_in_data<FD, Steps&, std::size_t>()) {
        as_->api->repeat(as_, detail::pack(body), count,
                &detail::repeat_thunk<FD, detail::InData<FD>>, label);
    } else {
        using Block = detail::LoopBlock<FD>;
        Block* b = detail::pool_new<Block>(std::forward<F>(body),
                label ? std::string(label) : std::string(), label != nullptr, count);
        (futoin_add_owned)(as_, &detail::repeat_start_thunk<FD>, nullptr, b,
                &detail::pool_destroy<Block>);
    }
    return *this;
}

template <class C, class F> inline Steps& Steps::for_each(C&& c, F&& body, const char* label)
{
    using CD = std::remove_reference_t<C>;
    using FD = std::decay_t<F>;
    using Holder = std::conditional_t<std::is_lvalue_reference_v<C>, detail::ContainerRef<CD>,
            detail::ContainerOwn<std::remove_cv_t<CD>>>;
    using Block = detail::ForEachBlock<Holder, CD, FD>;
    Block* b;
    if constexpr (std::is_lvalue_reference_v<C>) {
        b = detail::pool_new<Block>(Holder{ &c }, std::forward<F>(body),
                label ? std::string(label) : std::string(), label != nullptr,
                decltype(std::begin(c))(), std::size_t(0));
    } else {
        b = detail::pool_new<Block>(Holder{ std::move(c) }, std::forward<F>(body),
                label ? std::string(label) : std::string(), label != nullptr,
                decltype(std::begin(std::declval<CD&>()))(), std::size_t(0));
    }
    (futoin_add_owned)(as_, &detail::foreach_start_thunk<Block>, nullptr, b,
            &detail::pool_destroy<Block>);
    return *this;
}

template <class T, class... A> inline T* Steps::state(const char* name, A&&... args)
{
    using Tuple = std::tuple<A&&...>;
    Tuple t(std::forward<A>(args)...);
    const void* const outer = detail::state_args;
    detail::state_args = &t;
    void* v = as_->api->stateVariable(as_, &t, name, &detail::state_allocate<T, Tuple>,
            &detail::state_cleanup<T>);
    detail::state_args = outer;
    if (!v) {
        return nullptr;
    }
    detail::StateHolder<T>* h = static_cast<detail::StateHolder<T>*>(v);
    return h->tag == &detail::StateTag<T>::id ? &h->value : nullptr;
}

template <class T, class... A> inline T* Steps::stack(A&&... args)
{
    return detail::stack_new<T>(as_, std::forward<A>(args)...);
}

/** @cond FUTOIN_DETAIL */
namespace detail {

    /* The state of an await_future() step, in its stack() memory: the
 * future, the poll timer and its interval. Destroyed with the step, which
 * cancels the timer. */
    template <class Fut> struct FuturePoll {
        FuturePoll(Fut&& f, FutoInAsyncSteps* a, FutoInLoop* l, std::uint32_t m)
            : fut(std::move(f))
            , as(a)
            , loop(l)
            , max_ms(m)
        {
            std::memset(&timer, 0, sizeof(timer));
        }
        FuturePoll(const FuturePoll&) = delete;
        FuturePoll& operator=(const FuturePoll&) = delete;
        ~FuturePoll()
        {
            futoin_loop_cancel(loop, &timer);
        }
        bool ready()
        {
            using Status = decltype(fut.wait_for(std::chrono::seconds(0)));
            return fut.wait_for(std::chrono::seconds(0)) == Status::ready;
        }
        /* Completes the step with get(): the step (and *this) may be gone
         * when it returns. */
        void deliver() noexcept
        {
            Steps s(as);
            guarded(as, [&] {
                if constexpr (std::is_void_v<decltype(fut.get())>) {
                    fut.get();
                    s.success();
                } else {
                    s.success(fut.get());
                }
            });
        }
        /* Checks: ready, it completes the step (*this may be gone after:
         * 0); not ready, it arms the timer (1); -1 when out of memory. */
        int poll() noexcept
        {
            bool r = false;
            guarded_quiet("await_future(): wait_for()", [&] { r = ready(); });
            if (r) {
                deliver();
                return 0;
            }
            timer = futoin_loop_deferred(loop, interval_ms, this, &fire);
            if (!futoin_loop_is_valid(loop, &timer)) {
                return -1;
            }
            interval_ms = interval_ms >= max_ms / 2 ? max_ms : interval_ms * 2;
            return 1;
        }
        static void fire(void* data) noexcept
        {
            FuturePoll* p = static_cast<FuturePoll*>(data);
            std::memset(&p->timer, 0, sizeof(p->timer));
            if (p->poll() < 0) {
                futoin_error(p->as, FUTOIN_INTERNAL_ERROR, "await_future(): out of memory");
            }
        }

        Fut fut;
        FutoInAsyncSteps* as;
        FutoInLoop* loop;
        FutoInHandle timer;
        std::uint32_t interval_ms = 1;
        std::uint32_t max_ms;
    };

} // namespace detail
/** @endcond */

template <class Fut>
inline Steps& Steps::await_future(Fut&& fut, std::chrono::milliseconds max_poll)
{
    using FD = std::decay_t<Fut>;
    std::uint32_t m = 1;
    if (max_poll.count() > 1) {
        m = max_poll.count() >= static_cast<std::chrono::milliseconds::rep>(
                    std::numeric_limits<std::uint32_t>::max())
                ? std::numeric_limits<std::uint32_t>::max()
                : static_cast<std::uint32_t>(max_poll.count());
    }
    return add([f = FD(std::forward<Fut>(fut)), m](Steps& as) mutable {
        FutoInLoop* loop = as.event_loop();
        if (!loop) {
            as.error(FUTOIN_INTERNAL_ERROR, "await_future(): the flow has no FutoInLoop");
            return;
        }
        detail::FuturePoll<FD>* p = as.stack<detail::FuturePoll<FD>>(std::move(f), as.handle(),
                loop, m);
        if (!p) {
            as.error(FUTOIN_INTERNAL_ERROR, "await_future(): no stack() memory");
            return;
        }
        const int r = p->poll();
        if (r < 0) {
            as.error(FUTOIN_INTERNAL_ERROR, "await_future(): out of memory");
            return;
        }
        if (r > 0) {
            as.wait_external(); /* the timer completes the step */
        }
    });
}

/**
 * An owning root: futoin_asyncsteps_new() on a loop, freed (cancelled
 * first if it runs) by the destructor, which must run before the loop's.
 * Movable, not copyable. The Steps methods add its top-level steps.
 */
class Root : public Steps {
public:
    /** @param loop the loop to run on */
    explicit Root(Loop& loop);
    /** @param loop the loop to run on */
    explicit Root(FutoInLoop* loop)
        : Steps(futoin_asyncsteps_new(loop))
    {
        if (!as_) {
            detail::out_of_memory();
        }
    }
    /**
     * Takes a root over (this library's or another implementation's).
     * @param root the root, freed through its api->free
     * @return the owner
     */
    static Root adopt(FutoInAsyncSteps* root) noexcept
    {
        return Root(root, 0);
    }
    Root(const Root&) = delete;
    Root& operator=(const Root&) = delete;
    /** @param o the root to take over */
    Root(Root&& o) noexcept
        : Steps(o.as_)
    {
        o.as_ = nullptr;
    }
    /** @param o the root to take over  @return *this */
    Root& operator=(Root&& o) noexcept
    {
        if (this != &o) {
            reset();
            as_ = o.as_;
            o.as_ = nullptr;
        }
        return *this;
    }
    ~Root()
    {
        reset();
    }
    /** Frees the root now (nothing happens if there is none). */
    void reset() noexcept
    {
        if (as_) {
            FutoInAsyncSteps* r = as_;
            as_ = nullptr;
            r->api->free(r);
        }
    }
    /** Gives the root up: the caller frees it. @return the root */
    FutoInAsyncSteps* release() noexcept
    {
        FutoInAsyncSteps* r = as_;
        as_ = nullptr;
        return r;
    }
    /** @return whether a root is held */
    explicit operator bool() const noexcept
    {
        return as_ != nullptr;
    }
    /** Starts the root; an unhandled error goes to the loop's misuse handler. */
    void execute() noexcept
    {
        as_->api->execute(as_, nullptr, nullptr);
    }
    /**
     * Starts the root; an error that escapes every handler calls
     * on_error(Steps& root, std::string_view code) (error_info() has its
     * info). The handler is kept with the root until it is freed or
     * executed with another handler (not from inside the handler itself).
     * @param on_error the handler
     */
    template <class F> void execute(F&& on_error);
    /** Cancels the root if it runs. */
    void cancel() noexcept
    {
        as_->api->cancel(as_);
    }
    /**
     * Sets the root's end hook (futoin_set_on_end()): hook(Steps& root,
     * const FutoInRootEnd& end) is called once for each run that ends,
     * with the reason, the error or the last step's results. The closure is
     * kept with the root and destroyed exactly once: when it is replaced or
     * removed (after its call, if that happens from inside it) or when the
     * root is freed (after the call that tells FUTOIN_END_FREED).
     * @param hook the hook
     * @return true; false when the engine refused it (another
     * implementation's root, a freed one): the closure is destroyed then
     */
    template <class F> bool on_end(F&& hook);
    /** Removes the end hook set by on_end(). */
    void clear_on_end() noexcept;
    /**
     * Executes the root and runs its loop until the root ends
     * (futoin_promise()): the blocking way to get a flow's outcome into
     * synchronous code. The last step's results are converted to T...
     * (a mismatch is an InternalError outcome, as a step's parameters).
     * @return the outcome: the values, or the error
     * @par Thread
     * The loop's thread, outside its callbacks; not on a loop that the
     * libuv backend drives.
     */
    template <class... T> Outcome<T...> promise();

private:
    Root(FutoInAsyncSteps* root, int) noexcept
        : Steps(root)
    {
    }
};

template <class F> inline void Root::execute(F&& on_error)
{
    using FD = std::decay_t<F>;
    detail::Unhandled* u = state<detail::Unhandled>("futoin::Root::execute() handler");
    if (!u) {
        detail::out_of_memory();
    }
    FD* obj = new FD(std::forward<F>(on_error));
    if (u->obj) {
        u->destroy(u->obj);
    }
    u->obj = obj;
    u->call = [](void* o, Steps& as, std::string_view code) { (*static_cast<FD*>(o))(as, code); };
    u->destroy = [](void* o) noexcept { delete static_cast<FD*>(o); };
    as_->api->execute(as_, u, &detail::unhandled_thunk);
}

/**
 * What Root::promise() reports: the last step's values converted to T...,
 * or the error that ended the root.
 */
template <class... T> class Outcome {
    static_assert(
            ((!std::is_same_v<std::decay_t<T>,
                      std::string_view> && !std::is_same_v<std::decay_t<T>, const char*>)&&...),
            "futoin: an outcome owns its values: std::string, not a view");

public:
    /** @return FUTOIN_PROMISE_OK, _ERROR, _STALLED or _MISUSE */
    int status() const noexcept
    {
        return status_;
    }
    /** @return whether the root completed and its values converted */
    explicit operator bool() const noexcept
    {
        return status_ == FUTOIN_PROMISE_OK;
    }
    /** @return the error code ("" on success) */
    const std::string& code() const noexcept
    {
        return code_;
    }
    /** @return the error's info */
    const std::string& info() const noexcept
    {
        return info_;
    }
    /** @return the values (valid when the outcome is OK) */
    std::tuple<T...>& values() noexcept
    {
        return *values_;
    }
#if FUTOIN_CXX_EXCEPTIONS
    /**
     * The values; a failed outcome throws futoin::Error(code, info).
     * @return the only value for one T, else the tuple
     */
    decltype(auto) get()
    {
        if (status_ != FUTOIN_PROMISE_OK) {
            throw Error(code_, info_);
        }
        if constexpr (sizeof...(T) == 1) {
            return std::get<0>(std::move(*values_));
        } else if constexpr (sizeof...(T) > 1) {
            return std::tuple<T...>(std::move(*values_));
        }
    }
#endif

private:
    friend class Root;
    int status_ = FUTOIN_PROMISE_MISUSE;
    std::string code_;
    std::string info_;
    std::optional<std::tuple<T...>> values_;
};

/** @cond FUTOIN_DETAIL */
namespace detail {
    /* The values of a FutoInOutcome as T... (checked by the caller). */
    template <class... T, std::size_t... I>
    inline std::tuple<T...> take_values(FutoInArgs& a, std::index_sequence<I...>)
    {
        (void)a;
        return std::tuple<T...>(T(std::move(ArgConv<std::decay_t<T>>::get(a.args[I])))...);
    }
} // namespace detail
/** @endcond */

template <class... T> inline Outcome<T...> Root::promise()
{
    static_assert(sizeof...(T) <= 4, "futoin: at most four result values");
    Outcome<T...> r;
    FutoInOutcome out;
    r.status_ = futoin_promise(as_, &out);
    if (r.status_ == FUTOIN_PROMISE_OK) {
        bool ok = true;
        std::size_t i = 0;
        char info[256] = "";
        (void)((ok = [&] {
            using D = std::decay_t<T>;
            const detail::Match m = detail::ArgConv<D>::match(out.args.args[i]);
            if (m != detail::Match::ok) {
                char got[96];
                detail::describe_value(out.args.args[i], got, sizeof(got));
                std::snprintf(info, sizeof(info),
                        "futoin::Root::promise(): value %zu wants %s, the result is %s", i + 1,
                        detail::ArgConv<D>::name, got);
                return false;
            }
            ++i;
            return true;
        }()) && ...);
        (void)i;
        if (ok) {
            r.values_.emplace(detail::take_values<T...>(out.args, std::index_sequence_for<T...>()));
        } else {
            r.status_ = FUTOIN_PROMISE_ERROR;
            r.code_ = FUTOIN_INTERNAL_ERROR;
            r.info_ = info;
        }
        futoin_outcome_reset(&out);
    } else if (r.status_ == FUTOIN_PROMISE_ERROR) {
        r.code_ = out.code ? out.code : "";
        r.info_ = out.info;
    } else if (r.status_ == FUTOIN_PROMISE_STALLED) {
        r.code_ = "Stalled";
        r.info_ = "futoin::Root::promise(): the loop ran dry with the root waiting";
    } else {
        r.code_ = FUTOIN_INTERNAL_ERROR;
        r.info_ = "futoin::Root::promise(): refused (see futoin_promise())";
    }
    return r;
}

template <class F> inline bool Root::on_end(F&& hook)
{
    using FD = std::decay_t<F>;
    detail::EndHook* h = state<detail::EndHook>("futoin::Root::on_end() hook");
    if (!h) {
        return false;
    }
    FD* obj = new FD(std::forward<F>(hook));
    h->drop();
    h->obj = obj;
    h->call = [](void* o, Steps& root, const FutoInRootEnd& end) {
        (*static_cast<FD*>(o))(root, end);
    };
    h->destroy = [](void* o) noexcept { delete static_cast<FD*>(o); };
    if (futoin_set_on_end(as_, &detail::end_thunk, h) != 0) {
        h->drop();
        return false;
    }
    return true;
}

inline void Root::clear_on_end() noexcept
{
    futoin_set_on_end(as_, nullptr, nullptr);
    detail::EndHook* h = state<detail::EndHook>("futoin::Root::on_end() hook");
    if (h) {
        h->drop();
    }
}

/**
 * The handle of a callback queued with Loop::immediate() or
 * Loop::deferred(): it owns the pending callback, and cancels it (and
 * destroys its closure) when it is destroyed or reassigned, unless the
 * callback has run or detach() was called. Movable, not copyable.
 * @par Thread
 * The loop's thread.
 */
class Scheduled {
public:
    /** No callback. */
    Scheduled() noexcept = default;
    Scheduled(const Scheduled&) = delete;
    Scheduled& operator=(const Scheduled&) = delete;
    /** @param o the handle to take over */
    Scheduled(Scheduled&& o) noexcept
        : loop_(o.loop_)
        , block_(o.block_)
    {
        o.block_ = nullptr;
        if (block_) {
            block_->owner = this;
        }
    }
    /** @param o the handle to take over  @return *this */
    Scheduled& operator=(Scheduled&& o) noexcept
    {
        if (this != &o) {
            cancel();
            loop_ = o.loop_;
            block_ = o.block_;
            o.block_ = nullptr;
            if (block_) {
                block_->owner = this;
            }
        }
        return *this;
    }
    ~Scheduled()
    {
        cancel();
    }
    /**
     * Cancels the callback if it has not run: its closure is destroyed.
     * @return true if it was pending (it never runs now)
     */
    bool cancel() noexcept
    {
        detail::ScheduledBase* b = block_;
        if (!b) {
            return false;
        }
        block_ = nullptr;
        b->owner = nullptr;
        if (futoin_loop_try_cancel(loop_, &b->handle) != 1) {
            return false; /* it runs: the block frees itself */
        }
        b->unlink();
        b->destroy(b);
        return true;
    }
    /** Lets the callback run on its own: the handle lets go of it (the loop
     * still destroys its closure if it never runs). */
    void detach() noexcept
    {
        if (block_) {
            block_->owner = nullptr;
            block_ = nullptr;
        }
    }
    /** @return whether the callback is still pending */
    bool pending() const noexcept
    {
        return block_ != nullptr;
    }

private:
    friend class Loop;
    /* The FutoInLoopCallback of Loop::immediate() and Loop::deferred(). */
    static void fire(void* data) noexcept
    {
        detail::ScheduledBase* b = static_cast<detail::ScheduledBase*>(data);
        b->unlink();
        if (b->owner) {
            b->owner->block_ = nullptr;
            b->owner = nullptr;
        }
        b->run(b);
    }
    FutoInLoop* loop_ = nullptr;
    detail::ScheduledBase* block_ = nullptr;
};

/**
 * An owning event loop: futoin_loop_new(), or with Loop::virtual_clock
 * futoin_loop_new_virtual(); freed by the destructor (roots still on it are
 * freed first: release them from their Root before). Movable.
 */
class Loop {
public:
    /** The tag of the virtual-clock constructor. */
    struct VirtualClock { };
    /** Loop(Loop::virtual_clock): a loop on a virtual clock at 0 ms. */
    static constexpr VirtualClock virtual_clock{};

    /** A loop on the monotonic clock. */
    Loop()
        : loop_(futoin_loop_new())
    {
        pending_.prev = pending_.next = &pending_;
        if (!loop_) {
            detail::out_of_memory();
        }
    }
    /** A loop on a virtual clock (tests). */
    explicit Loop(VirtualClock)
        : loop_(futoin_loop_new_virtual())
    {
        pending_.prev = pending_.next = &pending_;
        if (!loop_) {
            detail::out_of_memory();
        }
    }
    Loop(const Loop&) = delete;
    Loop& operator=(const Loop&) = delete;
    /** @param o the loop to take over */
    Loop(Loop&& o) noexcept
        : loop_(o.loop_)
    {
        o.loop_ = nullptr;
        take_pending(o);
    }
    /** @param o the loop to take over  @return *this */
    Loop& operator=(Loop&& o) noexcept
    {
        if (this != &o) {
            reset();
            loop_ = o.loop_;
            o.loop_ = nullptr;
            take_pending(o);
        }
        return *this;
    }
    ~Loop()
    {
        reset();
    }
    /** Frees the loop now: the callbacks of immediate() and deferred()
     * still pending are cancelled and their closures destroyed first. */
    void reset() noexcept
    {
        if (loop_) {
            while (pending_.next != &pending_) {
                detail::ScheduledBase* b = static_cast<detail::ScheduledBase*>(pending_.next);
                if (b->owner) {
                    b->owner->block_ = nullptr;
                    b->owner = nullptr;
                }
                futoin_loop_cancel(loop_, &b->handle);
                b->unlink();
                b->destroy(b);
            }
            FutoInLoop* l = loop_;
            loop_ = nullptr;
            futoin_loop_free(l);
        }
    }
    /**
     * Queues f() to run on the next round (futoin_loop_immediate()).
     * Small closures and large ones alike live in the closure pool until
     * the callback runs or is cancelled; the Loop destroys those still
     * pending when it is freed.
     * @param f the callback, f(); an exception is logged and dropped
     * @return its handle: destroying it cancels the callback (detach() to
     * let it run on its own)
     * @par Thread
     * The loop's thread.
     */
    template <class F> [[nodiscard]] Scheduled immediate(F&& f)
    {
        return schedule(false, 0, std::forward<F>(f));
    }
    /**
     * Queues f() to run once d has passed (futoin_loop_deferred()).
     * @param d the delay (rounded up to ms, at most UINT32_MAX)
     * @param f the callback, f()
     * @return its handle, as immediate()
     * @par Thread
     * The loop's thread.
     */
    template <class Rep, class Period, class F>
    [[nodiscard]] Scheduled deferred(std::chrono::duration<Rep, Period> d, F&& f)
    {
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
        std::uint32_t t = 0;
        if (ms > 0) {
            t = ms >= static_cast<decltype(ms)>(std::numeric_limits<std::uint32_t>::max())
                    ? std::numeric_limits<std::uint32_t>::max()
                    : static_cast<std::uint32_t>(ms);
        }
        return schedule(true, t, std::forward<F>(f));
    }
    /** @return the C loop */
    FutoInLoop* handle() const noexcept
    {
        return loop_;
    }
    /** A new root on this loop. @return the root */
    Root root()
    {
        return Root(loop_);
    }
    /** Runs until no work is left (futoin_loop_run()). */
    void run() noexcept
    {
        futoin_loop_run(loop_);
    }
    /**
     * One round (futoin_loop_iterate()).
     * @param next_delay_ms if not NULL, the plan for the caller's sleep
     * @return 1 if work remains, 0 if none, -1 when refused
     */
    int iterate(std::int64_t* next_delay_ms = nullptr) noexcept
    {
        return futoin_loop_iterate(loop_, next_delay_ms);
    }
    /** Makes run() return. */
    void stop() noexcept
    {
        futoin_loop_stop(loop_);
    }
    /** @return the clock, ms */
    std::uint64_t now() const noexcept
    {
        return futoin_loop_now(loop_);
    }
    /** Virtual clock: runs one callback. @return 1 if one ran, 0, -1 */
    int run_next() noexcept
    {
        return futoin_loop_run_next(loop_);
    }
    /**
     * Virtual clock: moves time forward by d, running what falls due.
     * @param d how far (rounded down to ms)
     */
    template <class Rep, class Period> void advance(std::chrono::duration<Rep, Period> d) noexcept
    {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
        futoin_loop_advance(loop_, ms > 0 ? static_cast<std::uint64_t>(ms) : 0);
    }
    /** @return pending callbacks */
    std::size_t pending() const noexcept
    {
        return futoin_loop_pending(loop_);
    }

private:
    template <class F> Scheduled schedule(bool timer, std::uint32_t ms, F&& f)
    {
        using Block = detail::ScheduledBlock<std::decay_t<F>>;
        Block* b = detail::pool_new<Block>(std::forward<F>(f));
        b->run = &Block::run_fn;
        b->destroy = &Block::destroy_fn;
        b->handle = timer ? futoin_loop_deferred(loop_, ms, b, &Scheduled::fire)
                          : futoin_loop_immediate(loop_, b, &Scheduled::fire);
        if (!futoin_loop_is_valid(loop_, &b->handle)) {
            b->destroy(b);
            detail::out_of_memory();
        }
        b->prev = &pending_;
        b->next = pending_.next;
        pending_.next->prev = b;
        pending_.next = b;
        Scheduled s;
        s.loop_ = loop_;
        s.block_ = b;
        b->owner = &s;
        return s;
    }
    void take_pending(Loop& o) noexcept
    {
        if (o.pending_.next == &o.pending_) {
            pending_.prev = pending_.next = &pending_;
            return;
        }
        pending_.next = o.pending_.next;
        pending_.prev = o.pending_.prev;
        pending_.next->prev = &pending_;
        pending_.prev->next = &pending_;
        o.pending_.prev = o.pending_.next = &o.pending_;
    }

    FutoInLoop* loop_;
    detail::ScheduledNode pending_; /* callbacks of immediate()/deferred() not yet run */
};

/**
 * An owning sync object (Mutex, Throttle, Limiter; plain or shared): what
 * Steps::sync() takes (it converts to FutoInSync*). The destructor frees it
 * with futoin_sync_free(); free it (or let it go) only once no flow uses it
 * and before its loop: a busy object is reported as a warning and left
 * alone. Movable, not copyable.
 * @par Thread
 * As futoin_sync_free(): a plain object on its loop's thread, a shared one
 * on any.
 */
class Sync {
public:
    Sync(const Sync&) = delete;
    Sync& operator=(const Sync&) = delete;
    /** @param o the object to take over */
    Sync(Sync&& o) noexcept
        : sync_(o.sync_)
    {
        o.sync_ = nullptr;
    }
    /** @param o the object to take over  @return *this */
    Sync& operator=(Sync&& o) noexcept
    {
        if (this != &o) {
            drop();
            sync_ = o.sync_;
            o.sync_ = nullptr;
        }
        return *this;
    }
    ~Sync()
    {
        drop();
    }
    /** @return the C object */
    FutoInSync* handle() const noexcept
    {
        return sync_;
    }
    /** @return the C object, for Steps::sync() */
    operator FutoInSync*() const noexcept
    {
        return sync_;
    }
    /**
     * Frees the object now (futoin_sync_free()).
     * @return FUTOIN_SYNC_OK (also when none is held), or FUTOIN_SYNC_BUSY
     * while flows use it: the object is kept then
     */
    int free() noexcept
    {
        const int rc = futoin_sync_free(sync_);
        if (rc == FUTOIN_SYNC_OK) {
            sync_ = nullptr;
        }
        return rc;
    }
    /** @param out the figures (futoin_sync_stats())  @return 0, or -1 */
    int stats(FutoInSyncStats* out) const noexcept
    {
        return futoin_sync_stats(sync_, out);
    }

protected:
    /** @param sync the object to own (NULL: out of memory or bad arguments) */
    explicit Sync(FutoInSync* sync)
        : sync_(sync)
    {
        if (!sync_) {
#if FUTOIN_CXX_EXCEPTIONS
            throw std::invalid_argument("futoin: sync object refused (bad limits or no memory)");
#else
            detail::out_of_memory();
#endif
        }
    }

private:
    void drop() noexcept
    {
        if (sync_ && futoin_sync_free(sync_) != FUTOIN_SYNC_OK) {
            detail::log_warning("futoin::Sync destructor",
                    "the object is still in use: left alone (free it once no flow uses it)");
        }
        sync_ = nullptr;
    }
    FutoInSync* sync_;
};

/** A Mutex (futoin_mutex_new()): max flows inside at once, max_queue more
 * waiting. std::invalid_argument for max 0 (without exceptions: abort). */
class Mutex : public Sync {
public:
    /** @param loop its loop  @param max inside at once  @param max_queue waiting */
    explicit Mutex(FutoInLoop* loop, std::uint32_t max = 1,
            std::uint32_t max_queue = FUTOIN_SYNC_UNLIMITED)
        : Sync(futoin_mutex_new(loop, max, max_queue))
    {
    }
    /** @param loop its loop  @param max inside at once  @param max_queue waiting */
    explicit Mutex(Loop& loop, std::uint32_t max = 1,
            std::uint32_t max_queue = FUTOIN_SYNC_UNLIMITED);
    /** A Mutex for flows on several loops (futoin_mutex_new_shared()).
     * @param max inside at once  @param max_queue waiting  @return it */
    static Mutex shared(std::uint32_t max = 1, std::uint32_t max_queue = FUTOIN_SYNC_UNLIMITED)
    {
        return Mutex(futoin_mutex_new_shared(max, max_queue));
    }

private:
    explicit Mutex(FutoInSync* s)
        : Sync(s)
    {
    }
};

/** A Throttle (futoin_throttle_new()): max entries per period, max_queue
 * flows waiting for a later window. */
class Throttle : public Sync {
public:
    /** @param loop its loop  @param max entries per period  @param period
     * the window (ms)  @param max_queue waiting */
    template <class Rep, class Period>
    Throttle(FutoInLoop* loop, std::uint32_t max, std::chrono::duration<Rep, Period> period,
            std::uint32_t max_queue = FUTOIN_SYNC_UNLIMITED)
        : Sync(futoin_throttle_new(loop, max, to_ms(period), max_queue))
    {
    }
    /** @param loop its loop  @param max entries per period  @param period
     * the window (ms)  @param max_queue waiting */
    template <class Rep, class Period>
    Throttle(Loop& loop, std::uint32_t max, std::chrono::duration<Rep, Period> period,
            std::uint32_t max_queue = FUTOIN_SYNC_UNLIMITED);
    /** A Throttle for flows on several loops. @param max entries per
     * period  @param period the window  @param max_queue waiting  @return it */
    template <class Rep, class Period>
    static Throttle shared(std::uint32_t max, std::chrono::duration<Rep, Period> period,
            std::uint32_t max_queue = FUTOIN_SYNC_UNLIMITED)
    {
        return Throttle(futoin_throttle_new_shared(max, to_ms(period), max_queue));
    }

private:
    explicit Throttle(FutoInSync* s)
        : Sync(s)
    {
    }
    template <class Rep, class Period>
    static std::uint32_t to_ms(std::chrono::duration<Rep, Period> d) noexcept
    {
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
        return ms <= 0 ? 0
                : ms >= static_cast<decltype(ms)>(std::numeric_limits<std::uint32_t>::max())
                ? std::numeric_limits<std::uint32_t>::max()
                : static_cast<std::uint32_t>(ms);
    }
};

/** A Limiter (futoin_limiter_new()): concurrency and rate limits that turn
 * excess load into DefenseRejected. */
class Limiter : public Sync {
public:
    /** The options, the spec's defaults: {1, 0, 1, 1000, 0}. */
    struct Options : FutoInLimiterOptions {
        Options() noexcept
            : FutoInLimiterOptions(FUTOIN_LIMITER_OPTIONS_INIT)
        {
        }
    };
    /** @param loop its loop  @param opts the limits */
    Limiter(FutoInLoop* loop, const FutoInLimiterOptions& opts)
        : Sync(futoin_limiter_new(loop, &opts))
    {
    }
    /** @param loop its loop  @param opts the limits */
    Limiter(Loop& loop, const FutoInLimiterOptions& opts);
    /** A Limiter for flows on several loops. @param opts the limits  @return it */
    static Limiter shared(const FutoInLimiterOptions& opts)
    {
        return Limiter(futoin_limiter_new_shared(&opts));
    }

private:
    explicit Limiter(FutoInSync* s)
        : Sync(s)
    {
    }
};

/**
 * An owning completion (futoin_completion_new()): resolved or rejected
 * once, from any callback of the loop's thread; Steps::await() adds a step
 * that waits for it. Freed by the destructor (a step still awaiting it then
 * fails with InternalError). Movable, not copyable.
 */
class Completion {
public:
    Completion()
        : c_(futoin_completion_new())
    {
        if (!c_) {
            detail::out_of_memory();
        }
    }
    Completion(const Completion&) = delete;
    Completion& operator=(const Completion&) = delete;
    /** @param o the completion to take over */
    Completion(Completion&& o) noexcept
        : c_(o.c_)
    {
        o.c_ = nullptr;
    }
    /** @param o the completion to take over  @return *this */
    Completion& operator=(Completion&& o) noexcept
    {
        if (this != &o) {
            futoin_completion_free(c_);
            c_ = o.c_;
            o.c_ = nullptr;
        }
        return *this;
    }
    ~Completion()
    {
        futoin_completion_free(c_);
    }
    /** @return the C object, for Steps::await() */
    operator FutoInCompletion*() const noexcept
    {
        return c_;
    }
    /**
     * Resolves it with up to four values (as Steps::success() takes them).
     * @param v the values
     * @return true; false if it was resolved or rejected already
     */
    template <class... V> bool resolve(V&&... v)
    {
        FutoInArgs a;
        detail::fill_args(a, std::forward<V>(v)...);
        return futoin_completion_resolve(c_, &a) == 0;
    }
    /** @param code the error code  @param info its error_info  @return true;
     * false if it was resolved or rejected already */
    bool reject(const char* code, const char* info = nullptr) noexcept
    {
        return futoin_completion_reject(c_, code, info) == 0;
    }

private:
    FutoInCompletion* c_;
};

inline Root::Root(Loop& loop)
    : Root(loop.handle())
{
}

inline Mutex::Mutex(Loop& loop, std::uint32_t max, std::uint32_t max_queue)
    : Mutex(loop.handle(), max, max_queue)
{
}

template <class Rep, class Period>
inline Throttle::Throttle(Loop& loop, std::uint32_t max, std::chrono::duration<Rep, Period> period,
        std::uint32_t max_queue)
    : Throttle(loop.handle(), max, period, max_queue)
{
}

inline Limiter::Limiter(Loop& loop, const FutoInLimiterOptions& opts)
    : Limiter(loop.handle(), opts)
{
}

} // namespace futoin

#endif /* FUTOIN_ASYNCSTEPS_HPP */
