/* SPDX-License-Identifier: MIT */
// Loop threads, a worker pool and a shared Mutex, in C++
// (examples/threads_pool.c explains the design): each job is a root on a
// futoin::LoopPool; its checksum is computed on the worker pool
// (futoin::add_work()), then appended to a ledger all jobs share inside a
// futoin::Mutex::shared(1). Job 4 has a bad input: its work throws a
// futoin::Error, which ends that root with the error code. The output is
// printed at the end, in job order.
#include <futoin/threads.hpp>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

using futoin::Steps;

namespace {

constexpr unsigned kJobs = 6;
constexpr unsigned kLoops = 2;
constexpr unsigned kWorkers = 2;
constexpr unsigned kBadJob = 4;

struct Batch {
    futoin::Mutex ledger_lock = futoin::Mutex::shared(1);
    // Written only by the job that holds ledger_lock.
    std::vector<unsigned> ledger;
    std::atomic<int> inside{ 0 };
    std::atomic<int> max_inside{ 0 };
    std::mutex lock;
    std::condition_variable cond;
    unsigned finished = 0;
};

struct Job {
    unsigned id = 0;
    std::uint32_t checksum = 0;
    std::string outcome = "not started";
};

// FNV-1a over the record repeated 20000 times: the stand-in for real work.
std::uint32_t checksum_of(unsigned id)
{
    const std::string record = "record-" + std::to_string(id);
    std::uint32_t h = 2166136261u;
    for (int round = 0; round < 20000; ++round) {
        for (unsigned char c : record) {
            h = (h ^ c) * 16777619u;
        }
    }
    return h;
}

} // namespace

int main()
{
    Batch b;
    b.ledger.reserve(kJobs);
    std::array<Job, kJobs> jobs;
    if (futoin_work_pool_configure(kWorkers) != 0) {
        std::fprintf(stderr, "threads_pool: cannot set up\n");
        return 1;
    }
    unsigned started = 0;
    {
        futoin::LoopPool pool(kLoops);
        std::printf("%u jobs on %u loop threads, blocking work on %u worker threads\n", kJobs,
                pool.size(), kWorkers);

        for (unsigned i = 0; i < kJobs; ++i) {
            Job* job = &jobs[i];
            job->id = i + 1;
            auto setup = [job, &b](Steps& root) {
                futoin::add_work(root, [id = job->id](futoin::WorkOut& out) {
                    if (id == kBadJob) {
                        throw futoin::Error("BadInput", "record 4 is malformed");
                    }
                    out.success(checksum_of(id));
                });
                root.sync(b.ledger_lock, [job, &b](Steps& as, std::uint32_t checksum) {
                    job->checksum = checksum;
                    const int now = b.inside.fetch_add(1) + 1;
                    int max = b.max_inside.load();
                    while (now > max && !b.max_inside.compare_exchange_weak(max, now)) {
                    }
                    // The append is blocking work again, done while the job
                    // holds the Mutex.
                    futoin::add_work(as,
                            [job, &b](futoin::WorkOut&) { b.ledger.push_back(job->id); });
                    as.add([&b](Steps&) { b.inside.fetch_sub(1); });
                });
            };
            auto done = [job, &b](std::string_view code) {
                job->outcome = code.empty() ? "ok" : std::string(code);
                std::lock_guard<std::mutex> g(b.lock);
                ++b.finished;
                b.cond.notify_one();
            };
            if (pool.spawn(setup, done) >= 0) {
                ++started;
            }
        }

        // Wait for the jobs, then stop the pool (its destructor).
        std::unique_lock<std::mutex> g(b.lock);
        b.cond.wait(g, [&] { return b.finished >= started; });
    }
    futoin_work_pool_shutdown(); // joins the workers: a clean exit

    bool ok = true;
    std::array<unsigned, kJobs + 1> appended{};
    for (unsigned id : b.ledger) {
        ++appended[id];
    }
    for (const Job& job : jobs) {
        if (job.outcome == "ok") {
            std::printf("job %u: checksum %08x, recorded\n", job.id, unsigned(job.checksum));
            ok = ok && appended[job.id] == 1;
        } else {
            std::printf("job %u: failed with %s, not recorded\n", job.id, job.outcome.c_str());
            ok = ok && appended[job.id] == 0;
        }
    }
    std::printf("ledger: %zu records\n", b.ledger.size());
    std::printf("jobs inside the shared Mutex at once: at most %d\n", b.max_inside.load());
    ok = ok && b.max_inside.load() == 1;
    ok = ok && b.ledger_lock.free() == FUTOIN_SYNC_OK;
    return ok ? 0 : 1;
}
