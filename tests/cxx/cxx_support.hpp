/* SPDX-License-Identifier: MIT */
// What the C++ suites share (tests/cxx and the C++ tests of tests/uv):
// cmocka from C++, a type that counts its constructions and destructions
// with the setup and teardown that check it, a plain value type, and a
// capture of the log handler.
#ifndef FUTOIN_TESTS_CXX_SUPPORT_HPP
#define FUTOIN_TESTS_CXX_SUPPORT_HPP

#include <futoin/asyncsteps.hpp>

#include <csetjmp>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

// cmocka.h (1.1) declares its functions without extern "C".
extern "C" {
#include <cmocka.h>
}

// Counts live objects; a destructor run twice on one object, or on one
// never made, is counted in bad (ASan and valgrind see the rest).
struct Track {
    static inline int live = 0;
    static inline int made = 0;
    static inline int bad = 0;
    static constexpr std::uint32_t kAlive = 0x5eedf00d;
    std::uint32_t magic;
    int id;

    explicit Track(int i = 0)
        : magic(kAlive)
        , id(i)
    {
        ++live;
        ++made;
    }
    Track(const Track& o)
        : magic(kAlive)
        , id(o.id)
    {
        ++live;
        ++made;
    }
    Track(Track&& o) noexcept
        : magic(kAlive)
        , id(o.id)
    {
        ++live;
        ++made;
    }
    Track& operator=(const Track&) = default;
    ~Track()
    {
        if (magic != kAlive) {
            ++bad;
        }
        magic = 0;
        --live;
    }
    static void reset()
    {
        live = 0;
        made = 0;
        bad = 0;
    }
};

// cmocka setup and teardown of a test whose closures and values are
// counted: every Track made during the test is gone at its end, and none
// was destroyed twice.
inline int track_setup(void**)
{
    Track::reset();
    return 0;
}
inline int track_teardown(void**)
{
    assert_int_equal(Track::live, 0);
    assert_int_equal(Track::bad, 0);
    return 0;
}

// A plain value passed between steps (a custom object of the layer).
struct Point {
    int x, y;
};

// A closure payload of N bytes that holds a Track: beyond a pointer, so
// that it goes to the pool (or, large, to operator new).
template <std::size_t N> struct Payload {
    Track t;
    unsigned char bytes[N];
    Payload()
        : t(1)
        , bytes{}
    {
    }
};

// The log handler's lines, while a LogCapture lives.
struct LogCapture {
    std::string lines;
    FutoInLogHandler prev;
    void* prev_data;
    LogCapture()
    {
        prev = futoin_set_log_handler(&LogCapture::handler, this, &prev_data);
    }
    ~LogCapture()
    {
        futoin_set_log_handler(prev, prev_data, nullptr);
    }
    LogCapture(const LogCapture&) = delete;
    LogCapture& operator=(const LogCapture&) = delete;
    static void handler(void* data, int, const char* line)
    {
        static_cast<LogCapture*>(data)->lines.append(line).append("\n");
    }
    bool has(const char* text) const
    {
        return lines.find(text) != std::string::npos;
    }
};

// The blocks the closure pool of this thread took from operator new.
inline std::size_t pool_heap_blocks()
{
    return futoin::detail::pool::cache.heap_blocks;
}

#define assert_sv_equal(sv, lit) assert_string_equal(std::string(sv).c_str(), lit)
#define assert_contains(hay, needle) assert_true(std::string(hay).find(needle) != std::string::npos)

#endif
