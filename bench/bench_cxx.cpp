/* SPDX-License-Identifier: MIT */
// futoin_bench_cxx: the C++ layer (futoin/asyncsteps.hpp) against the same
// work written with the C API, for instruction counts under callgrind
// (bench/callgrind.sh cxx). Each workload runs chains of 100 top-level
// steps on one reused root of a real-clock loop:
//   c_chain100     futoin_add() of a C step that counts through data
//   cxx_chain100   add() of a lambda capturing one pointer (in data)
//   c_typed100     50 pairs: futoin_success1(i32 2), futoin_arg_i32()
//   cxx_typed100   50 pairs: success(2), a step taking `int`
//   cxx_pooled100  add() of a 64-byte closure (pool block, owned step)
//   c_typed3_100   50 pairs: success of (i32, bool, double), read back
//   cxx_typed3_100 50 pairs: success(2, true, 0.5), a step taking all three
//   c_recover100   50 pairs: a step that fails, a handler that recovers;
//                  then a step that counts the pair
//   cxx_recover100 the same with error() (it throws) and a lambda handler
//                  (each pair counts 2: 100 ops per chain)
//   cxx_recover_ret100  the same, the error recorded with futoin_error()
//                  and the lambda returning (no throw)
//
//   futoin_bench_cxx --run NAME CHAINS   prints "NAME: OPS ops"
//   futoin_bench_cxx --list
#include <futoin/asyncsteps.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

std::uint64_t g_cnt = 0;

void st_noop(FutoInAsyncSteps*, void* data, const FutoInArgs*)
{
    ++*static_cast<std::uint64_t*>(data);
}
void st_give(FutoInAsyncSteps* as, void*, const FutoInArgs*)
{
    futoin_success1(as, futoin_val_i32(2));
}
void st_take(FutoInAsyncSteps*, void* data, const FutoInArgs* args)
{
    *static_cast<std::uint64_t*>(data) += static_cast<std::uint64_t>(futoin_arg_i32(args, 0, 0));
}

void st_give3(FutoInAsyncSteps* as, void*, const FutoInArgs*)
{
    FutoInArgs a;
    std::memset(&a, 0, sizeof(a));
    a.args[0] = futoin_val_i32(2);
    a.args[1] = futoin_val_bool(1);
    a.args[2] = futoin_val_double(0.5);
    futoin_success_args(as, &a);
}
void st_take3(FutoInAsyncSteps*, void* data, const FutoInArgs* args)
{
    if (futoin_arg_bool(args, 1, false) && futoin_arg_double(args, 2, 0.0) == 0.5) {
        *static_cast<std::uint64_t*>(data) += static_cast<std::uint64_t>(futoin_arg_i32(args, 0,
                0));
    }
}
void st_fail(FutoInAsyncSteps* as, void*, const FutoInArgs*)
{
    futoin_error(as, "Failed", nullptr);
}
void eh_recover(FutoInAsyncSteps* as, void*, const char*)
{
    futoin_success(as);
}
void st_count2(FutoInAsyncSteps*, void* data, const FutoInArgs*)
{
    *static_cast<std::uint64_t*>(data) += 2;
}

using futoin::Steps;

void c_chain100(futoin::Root& root)
{
    for (int k = 0; k < 100; ++k) {
        futoin_add(root.handle(), st_noop, nullptr, &g_cnt);
    }
}
void cxx_chain100(futoin::Root& root)
{
    std::uint64_t* c = &g_cnt;
    for (int k = 0; k < 100; ++k) {
        root.add([c](Steps&) { ++*c; });
    }
}
void c_typed100(futoin::Root& root)
{
    for (int k = 0; k < 50; ++k) {
        futoin_add(root.handle(), st_give, nullptr, nullptr);
        futoin_add(root.handle(), st_take, nullptr, &g_cnt);
    }
}
void cxx_typed100(futoin::Root& root)
{
    std::uint64_t* c = &g_cnt;
    for (int k = 0; k < 50; ++k) {
        root.add([](Steps& as) { as.success(2); });
        root.add([c](Steps&, int v) { *c += static_cast<std::uint64_t>(v); });
    }
}
void cxx_pooled100(futoin::Root& root)
{
    struct Big {
        std::uint64_t* c;
        unsigned char pad[56];
    } big{};
    big.c = &g_cnt;
    for (int k = 0; k < 100; ++k) {
        root.add([big](Steps&) { ++*big.c; });
    }
}

// No capture at all: the lambda reaches its counter through a global.
void cxx_nocap100(futoin::Root& root)
{
    for (int k = 0; k < 100; ++k) {
        root.add([](Steps&) { ++g_cnt; });
    }
}
// Three values captured (24 bytes): too big for data, so a pooled block
// per step, copied in once.
void cxx_cap3_100(futoin::Root& root)
{
    std::uint64_t* c = &g_cnt;
    std::uint64_t one = 1;
    std::uint64_t zero = 0;
    for (int k = 0; k < 100; ++k) {
        root.add([c, one, zero](Steps&) { *c += one + zero; });
    }
}

void st_give2(FutoInAsyncSteps* as, void*, const FutoInArgs*)
{
    futoin_success2(as, futoin_val_i32(2), futoin_val_bool(1));
}
void st_take2(FutoInAsyncSteps*, void* data, const FutoInArgs* args)
{
    if (futoin_arg_bool(args, 1, false)) {
        *static_cast<std::uint64_t*>(data) += static_cast<std::uint64_t>(futoin_arg_i32(args, 0,
                0));
    }
}
void c_typed2_100(futoin::Root& root)
{
    for (int k = 0; k < 50; ++k) {
        futoin_add(root.handle(), st_give2, nullptr, nullptr);
        futoin_add(root.handle(), st_take2, nullptr, &g_cnt);
    }
}
void cxx_typed2_100(futoin::Root& root)
{
    std::uint64_t* c = &g_cnt;
    for (int k = 0; k < 50; ++k) {
        root.add([](Steps& as) { as.success(2, true); });
        root.add([c](Steps&, int v, bool b) {
            if (b) {
                *c += static_cast<std::uint64_t>(v);
            }
        });
    }
}

void c_typed3_100(futoin::Root& root)
{
    for (int k = 0; k < 50; ++k) {
        futoin_add(root.handle(), st_give3, nullptr, nullptr);
        futoin_add(root.handle(), st_take3, nullptr, &g_cnt);
    }
}
void cxx_typed3_100(futoin::Root& root)
{
    std::uint64_t* c = &g_cnt;
    for (int k = 0; k < 50; ++k) {
        root.add([](Steps& as) { as.success(2, true, 0.5); });
        root.add([c](Steps&, int v, bool b, double d) {
            if (b && d == 0.5) {
                *c += static_cast<std::uint64_t>(v);
            }
        });
    }
}
void c_recover100(futoin::Root& root)
{
    for (int k = 0; k < 50; ++k) {
        futoin_add(root.handle(), st_fail, eh_recover, nullptr);
        futoin_add(root.handle(), st_count2, nullptr, &g_cnt);
    }
}
void cxx_recover100(futoin::Root& root)
{
    std::uint64_t* c = &g_cnt;
    for (int k = 0; k < 50; ++k) {
        root.add([](Steps& as) { as.error("Failed"); },
                [](Steps& as, std::string_view) { as.success(); });
        root.add([c](Steps&) { *c += 2; });
    }
}

void cxx_recover_ret100(futoin::Root& root)
{
    std::uint64_t* c = &g_cnt;
    for (int k = 0; k < 50; ++k) {
        root.add([](Steps& as) { futoin_error(as.handle(), "Failed", nullptr); },
                [](Steps& as, std::string_view) { as.success(); });
        root.add([c](Steps&) { *c += 2; });
    }
}

struct Workload {
    const char* name;
    void (*add100)(futoin::Root& root);
};
const Workload g_workloads[] = {
    { "c_chain100", c_chain100 },
    { "cxx_chain100", cxx_chain100 },
    { "cxx_nocap100", cxx_nocap100 },
    { "cxx_cap3_100", cxx_cap3_100 },
    { "c_typed2_100", c_typed2_100 },
    { "cxx_typed2_100", cxx_typed2_100 },
    { "c_typed100", c_typed100 },
    { "cxx_typed100", cxx_typed100 },
    { "cxx_pooled100", cxx_pooled100 },
    { "c_typed3_100", c_typed3_100 },
    { "cxx_typed3_100", cxx_typed3_100 },
    { "c_recover100", c_recover100 },
    { "cxx_recover100", cxx_recover100 },
    { "cxx_recover_ret100", cxx_recover_ret100 },
};

} // namespace

int main(int argc, char** argv)
{
    if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
        for (const Workload& w : g_workloads) {
            std::puts(w.name);
        }
        return 0;
    }
    if (argc != 4 || std::strcmp(argv[1], "--run") != 0) {
        std::fprintf(stderr, "usage: futoin_bench_cxx --run NAME CHAINS | --list\n");
        return 2;
    }
    const Workload* w = nullptr;
    for (const Workload& x : g_workloads) {
        if (std::strcmp(x.name, argv[2]) == 0) {
            w = &x;
        }
    }
    if (!w) {
        std::fprintf(stderr, "futoin_bench_cxx: no workload %s\n", argv[2]);
        return 2;
    }
    const unsigned long long chains = std::strtoull(argv[3], nullptr, 10);
    futoin::Loop loop;
    futoin::Root root(loop);
    for (unsigned long long i = 0; i < chains; ++i) {
        w->add100(root);
        root.execute();
        loop.run();
    }
    const std::uint64_t want = chains * 100;
    if (g_cnt != want) {
        std::fprintf(stderr, "futoin_bench_cxx: %s counted %llu, not %llu\n", w->name,
                static_cast<unsigned long long>(g_cnt), static_cast<unsigned long long>(want));
        return 1;
    }
    std::printf("%s: %llu ops\n", w->name, static_cast<unsigned long long>(want));
    return 0;
}
