/* SPDX-License-Identifier: MIT */
/**
 * @file
 * @brief FutoIn AsyncSteps for C++17: loop pools and blocking work
 * (threads.h) with lambdas, over asyncsteps.hpp.
 *
 * - futoin::LoopPool owns a pool of loop threads (futoin_loop_pool_new());
 *   spawn() places a root on the least-loaded loop, set up by a lambda,
 *   and tells another lambda how it ended.
 * - futoin::add_work() adds a step whose lambda runs on the worker pool
 *   (futoin_add_work()) and completes the step with what it reports.
 *
 * Thread: as threads.h says for each call.
 */
#ifndef FUTOIN_THREADS_HPP
#define FUTOIN_THREADS_HPP

#include <futoin/asyncsteps.hpp>
#include <futoin/threads.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace futoin {

/** @cond FUTOIN_DETAIL */
namespace detail {
    template <class F> inline void work_thunk(void* data, FutoInWorkResult* out) noexcept;
}
/** @endcond */

/**
 * What the lambda of add_work() reports, on its worker thread: success
 * values, or an error (a thrown futoin::Error or std::exception does the
 * same).
 */
class WorkOut {
public:
    /** @param out the C record to fill */
    explicit WorkOut(FutoInWorkResult* out = nullptr) noexcept
        : out_(out)
    {
    }
    /** Up to four values, as Steps::success() takes them. @param v the values */
    template <class... V> void success(V&&... v)
    {
        detail::fill_args(out_->args, std::forward<V>(v)...);
    }
    /** @param code the error code  @param info its error_info */
    void error(std::string_view code, std::string_view info = {})
    {
        code_.assign(code.data(), code.size());
        info_.assign(info.data(), info.size());
        out_->error = code_.c_str();
        out_->info = info_.c_str();
    }

private:
    template <class F> friend void detail::work_thunk(void* data, FutoInWorkResult* out) noexcept;
    FutoInWorkResult* out_;
    std::string code_;
    std::string info_;
};

/** @cond FUTOIN_DETAIL */
namespace detail {

    template <class F> struct WorkBlock {
        F fn;
        WorkOut out; /* its strings outlive fn: the engine copies them after */
    };

    template <class F> inline void work_thunk(void* data, FutoInWorkResult* out) noexcept
    {
        WorkBlock<F>* b = static_cast<WorkBlock<F>*>(data);
        WorkOut* w = &b->out;
        w->out_ = out;
#if FUTOIN_CXX_EXCEPTIONS
        try {
            b->fn(*w);
        } catch (const Error& e) {
            for (FutoInBinaryValue& v : out->args.args) {
                futoin_reset_binval(&v);
            }
            w->error(e.code(), e.info());
        } catch (const std::exception& e) {
            for (FutoInBinaryValue& v : out->args.args) {
                futoin_reset_binval(&v);
            }
            w->error(FUTOIN_INTERNAL_ERROR, e.what());
        } catch (...) {
            for (FutoInBinaryValue& v : out->args.args) {
                futoin_reset_binval(&v);
            }
            w->error(FUTOIN_INTERNAL_ERROR, "a C++ exception that is not a std::exception");
        }
#else
        b->fn(*w);
#endif
    }

    template <class F> inline void work_release(void* data) noexcept
    {
        delete static_cast<WorkBlock<F>*>(data);
    }

    template <class S, class D> struct SpawnBlock {
        S setup;
        D done;
    };
    template <class S, class D> inline void spawn_setup(FutoInAsyncSteps* root, void* data)
    {
        Steps s(root);
        guarded(root, [&] { static_cast<SpawnBlock<S, D>*>(data)->setup(s); });
    }
    template <class S, class D> inline void spawn_done(void* data, const char* code)
    {
        SpawnBlock<S, D>* b = static_cast<SpawnBlock<S, D>*>(data);
        guarded_quiet("exception from a LoopPool::spawn() done callback",
                [&] { b->done(code ? std::string_view(code) : std::string_view()); });
        delete b;
    }

} // namespace detail
/** @endcond */

/**
 * Adds a step that runs fn(WorkOut&) on the worker pool (futoin_add_work())
 * and completes with what fn reports. The closure is destroyed exactly
 * once, on the loop thread, when neither the step nor a worker uses it.
 * @param as the flow (inside its callback) or an idle root
 * @param fn the work: may block, must not touch the loop or the step
 */
template <class F> inline void add_work(Steps& as, F&& fn)
{
    using Block = detail::WorkBlock<std::decay_t<F>>;
    Block* b = new Block{ std::forward<F>(fn), WorkOut() };
    futoin_add_work(as.handle(), &detail::work_thunk<std::decay_t<F>>, b,
            &detail::work_release<std::decay_t<F>>);
}

/**
 * An owning pool of loop threads (futoin_loop_pool_new()); the destructor
 * stops it (DRAIN), joins its threads and frees it. Movable.
 */
class LoopPool {
public:
    /** @param n loop threads (0: one per CPU, as futoin_loop_pool_new()) */
    explicit LoopPool(unsigned n)
        : pool_(futoin_loop_pool_new(n))
    {
        if (!pool_) {
            detail::out_of_memory();
        }
    }
    LoopPool(const LoopPool&) = delete;
    LoopPool& operator=(const LoopPool&) = delete;
    /** @param o the pool to take over */
    LoopPool(LoopPool&& o) noexcept
        : pool_(o.pool_)
    {
        o.pool_ = nullptr;
    }
    /** @param o the pool to take over  @return *this */
    LoopPool& operator=(LoopPool&& o) noexcept
    {
        if (this != &o) {
            reset();
            pool_ = o.pool_;
            o.pool_ = nullptr;
        }
        return *this;
    }
    ~LoopPool()
    {
        reset();
    }
    /** Stops, joins and frees the pool now (futoin_loop_pool_free()). */
    void reset() noexcept
    {
        FutoInLoopPool* p = pool_;
        pool_ = nullptr;
        futoin_loop_pool_free(p);
    }
    /** @return the C pool */
    FutoInLoopPool* handle() const noexcept
    {
        return pool_;
    }
    /** @return its loop threads */
    unsigned size() const noexcept
    {
        return futoin_loop_pool_size(pool_);
    }
    /**
     * Places a new root on the least-loaded loop (futoin_loop_pool_spawn()):
     * setup(Steps& root) adds its steps on that loop's thread, then
     * done(std::string_view code) is told how it ended (empty on success,
     * the error code, or FUTOIN_POOL_CANCELLED). Both closures are
     * destroyed after done, on the loop's thread (at once if refused).
     * @param setup adds the steps (an exception fails the root)
     * @param done told the end
     * @return the loop's index, or -1 (stopping, out of memory)
     * @par Thread
     * Any thread.
     */
    template <class S, class D> int spawn(S&& setup, D&& done)
    {
        using Block = detail::SpawnBlock<std::decay_t<S>, std::decay_t<D>>;
        Block* b = new Block{ std::forward<S>(setup), std::forward<D>(done) };
        const int i = futoin_loop_pool_spawn(pool_,
                &detail::spawn_setup<std::decay_t<S>, std::decay_t<D>>,
                &detail::spawn_done<std::decay_t<S>, std::decay_t<D>>, b);
        if (i < 0) {
            delete b;
        }
        return i;
    }

private:
    FutoInLoopPool* pool_;
};

} // namespace futoin

#endif /* FUTOIN_THREADS_HPP */
